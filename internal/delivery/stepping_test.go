package delivery

import (
	"reflect"
	"testing"
)

// A pass's enrollments make one group per schedule, in the order the
// schedules came, without those at no schedule.
func TestGroupBySchedule(t *testing.T) {
	s := func(v int64) *int64 { return &v }
	got := GroupBySchedule([]DueEnrollment{
		{ID: 1, ContactID: 10, Schedule: s(7)}, {ID: 2, ContactID: 20, Schedule: s(5)}, {ID: 3, ContactID: 30},
		{ID: 4, ContactID: 40, Schedule: s(7)}, {ID: 5, ContactID: 50, Schedule: s(5)},
	})
	want := []ScheduleGroup{{Schedule: 7, Enrollments: []int64{1, 4}, Contacts: []int64{10, 40}},
		{Schedule: 5, Enrollments: []int64{2, 5}, Contacts: []int64{20, 50}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("groups %+v\nwant %+v", got, want)
	}
	if GroupBySchedule(nil) != nil {
		t.Fatal("no enrollment makes a group")
	}
}

// Who of a run got its mail: the enrollments whose contact a delivery went
// to (a row without a contact counts for nobody).
func TestGotMail(t *testing.T) {
	c := func(v int64) *int64 { return &v }
	g := ScheduleGroup{Schedule: 1, Enrollments: []int64{1, 2, 3}, Contacts: []int64{10, 20, 30}}
	if got := g.GotMail([]*int64{c(30), nil, c(10), c(99)}); !reflect.DeepEqual(got, []bool{true, false, true}) {
		t.Fatalf("got mail %v", got)
	}
}

// A pass is full at its batch; a run is small under a fifth of it; a
// schedule that made no run waits while live and is skipped once deleted.
func TestStepRules(t *testing.T) {
	st := Step{Enrollments: 5000}
	for n, want := range map[int]bool{4999: false, 5000: true, 5001: true} {
		if st.Full(n) != want {
			t.Errorf("Full(%d) = %v", n, !want)
		}
	}
	for n, want := range map[int]bool{1: true, 999: true, 1000: false, 4000: false} {
		if st.SmallRun(n) != want {
			t.Errorf("SmallRun(%d) = %v", n, !want)
		}
	}
	if NoRunFor(true) != NoRunWait || NoRunFor(false) != NoRunSkip {
		t.Error("a schedule without a run: live waits, deleted is skipped")
	}
}
