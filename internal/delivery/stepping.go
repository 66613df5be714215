package delivery

// The rules of a stepping pass (docs/automations.md), which the store's
// transaction (postgres.StepAutomations) follows: how the enrollments it
// claimed make runs, which runs are small, who of a run got its mail, and
// what becomes of a schedule that made no run.

// DueEnrollment is an enrollment a stepping pass claimed: its contact and
// the schedule it is at (nil: at none, nothing to send).
type DueEnrollment struct {
	ID, ContactID int64
	Schedule      *int64
}

// ScheduleGroup is the enrollments of a pass at one schedule: one run.
type ScheduleGroup struct {
	Schedule    int64
	Enrollments []int64
	Contacts    []int64 // each enrollment's contact, in the same order
}

// GroupBySchedule groups a pass's enrollments by their schedule, the
// schedules in the order their first enrollment came, each group's
// enrollments in theirs; an enrollment at no schedule is left out.
func GroupBySchedule(due []DueEnrollment) []ScheduleGroup {
	var groups []ScheduleGroup
	at := map[int64]int{}
	for _, e := range due {
		if e.Schedule == nil {
			continue
		}
		i, ok := at[*e.Schedule]
		if !ok {
			i = len(groups)
			at[*e.Schedule] = i
			groups = append(groups, ScheduleGroup{Schedule: *e.Schedule})
		}
		groups[i].Enrollments = append(groups[i].Enrollments, e.ID)
		groups[i].Contacts = append(groups[i].Contacts, e.ContactID)
	}
	return groups
}

// GotMail says, for each of g's enrollments, whether its contact is among
// mailed (the contacts the run's deliveries went to; nil entries, a
// run's rows without a contact, are ignored).
func (g ScheduleGroup) GotMail(mailed []*int64) []bool {
	in := make(map[int64]bool, len(mailed))
	for _, c := range mailed {
		if c != nil {
			in[*c] = true
		}
	}
	got := make([]bool, len(g.Contacts))
	for i, c := range g.Contacts {
		got[i] = in[c]
	}
	return got
}

// Full reports whether a pass that claimed n enrollments took a whole
// batch: another pass would find work at once.
func (st Step) Full(n int) bool { return n >= st.Enrollments }

// SmallRun reports whether a run of n enrollments is small (fewer than a
// fifth of a pass): its schedule is held before its next run (RunEvery),
// so a trickle of joins makes a run per hold, not one per pass.
func (st Step) SmallRun(n int) bool { return n < st.Enrollments/5 }

// NoRun is what becomes of a schedule's enrollments when it made no run.
type NoRun int

const (
	// NoRunWait: the schedule is live but its sender is deleted or not
	// verified; nothing goes from it, its enrollments wait where they are
	// (the schedule is held for RunEvery and a warning logged).
	NoRunWait NoRun = iota
	// NoRunSkip: the schedule was deleted; its mail is not sent and its
	// enrollments move on.
	NoRunSkip
)

// NoRunFor is what becomes of the enrollments of a schedule that made no
// run, live or not.
func NoRunFor(live bool) NoRun {
	if live {
		return NoRunWait
	}
	return NoRunSkip
}
