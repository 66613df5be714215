package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// membersChunk is how many members one enrollment transaction takes: the
// automation's row is locked for that long (a pause, a schedule create or
// a contact write joining it waits at most one chunk).
const membersChunk = 20000

// EnrollMembers enrolls every current member of live custom automation id
// at its first schedule, due after that schedule's wait from now, at its
// first set-live only, in chunks of membersChunk, each its own
// transaction; contacts enrolled already are left as they are. Run again
// (twice at once, or after a stop) it goes on from where the last chunk
// ended. It answers how many were enrolled.
func (d *DB) EnrollMembers(ctx context.Context, id int64, now time.Time) (int64, error) {
	if err := d.q.StartMembersEnrollment(ctx, db.StartMembersEnrollmentParams{Now: now, AutomationID: id}); err != nil {
		return 0, err
	}
	var total int64
	for {
		r, err := d.q.EnrollMembersChunk(ctx, db.EnrollMembersChunkParams{Now: now, AutomationID: id, N: membersChunk})
		if err != nil {
			return total, err
		}
		total += r.Enrolled
		if !r.More {
			return total, nil
		}
	}
}

// MembersToEnroll answers the live custom automations whose members'
// enrollment has not finished (its task lost, or a worker stopped).
func (d *DB) MembersToEnroll(ctx context.Context) ([]int64, error) {
	ids, err := d.q.MembersToEnroll(ctx)
	return ids, err
}

// Run is a run a stepping pass made: a row of single_sends the batches
// send (docs/automations.md).
type Run = delivery.Run

// Step is one stepping pass's settings (the engine's type).
type Step = delivery.Step

// StepAutomations takes up to st.Enrollments active enrollments of live
// automations due at st.Now (FOR UPDATE SKIP LOCKED: steppers share the
// work), makes one run per schedule with the deliveries of those contacts
// still eligible, and advances each enrollment to its next schedule (due
// after its wait from now), done after the last, or left when its contact
// got no mail. All in one transaction; it answers the runs with
// deliveries. A schedule whose sender is deleted or not verified makes no
// run: its enrollments wait where they are (retried every RunEvery).
//
// Pass.More says another pass would find work at once (it took a full
// batch).
func (d *DB) StepAutomations(ctx context.Context, st Step) (pass Pass, err error) {
	// Most passes find nothing due: one indexed question, no id drawn.
	// Else the partitions the runs' ids will land in (this one and the
	// next) are made beforehand: the DDL must not wait inside the
	// transaction.
	pending, err := d.q.StepPending(ctx, st.Now)
	if err != nil || !pending.Due {
		return Pass{}, err
	}
	if err := d.ensurePartition(ctx, pending.NextID); err != nil {
		return Pass{}, err
	}
	var held, blocked []int64 // schedules that made a small run; schedules whose sender stopped them
	err = d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		pass, held, blocked = Pass{}, nil, nil
		if mine, err := q.TryStepLock(ctx); err != nil || !mine {
			return err // another pass is under way: it goes on while work is due
		}
		// Every statement of a pass finds its few thousand enrollments,
		// contacts and deliveries by key. The cost model, which takes each
		// probe for a disk read, preferred reading the whole enrollments
		// table into a hash for each (35 ms at 200,000 enrollments, and
		// growing with them; probes: under 15 ms at any size).
		if _, err := tx.Exec(ctx, "SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)"); err != nil {
			return err
		}
		due, err := q.ClaimDueEnrollments(ctx, db.ClaimDueEnrollmentsParams{Now: st.Now, N: int32(st.Enrollments)})
		if err != nil {
			return err
		}
		pass.More = st.Full(len(due))
		claimed := make([]delivery.DueEnrollment, len(due))
		for i, e := range due {
			claimed[i] = delivery.DueEnrollment{ID: e.ID, ContactID: e.ContactID, Schedule: e.Step}
		}
		for _, g := range delivery.GroupBySchedule(claimed) {
			schedule, ids := g.Schedule, g.Enrollments
			runID, err := q.NextRunID(ctx)
			if err != nil {
				return err
			}
			made, err := q.CreateRun(ctx, db.CreateRunParams{ID: runID, ListToken: st.NewToken(), ScheduleID: schedule,
				AllowUnverified: st.AllowUnverified})
			if err != nil {
				return err
			}
			if made == 0 {
				live, err := q.ScheduleLive(ctx, schedule)
				if err != nil {
					return err
				}
				if delivery.NoRunFor(live) == delivery.NoRunWait {
					blocked = append(blocked, schedule)
					continue
				}
				if err := q.SkipDeletedStep(ctx, db.SkipDeletedStepParams{EnrollmentIds: ids, Now: st.Now}); err != nil {
					return err
				}
				pass.Stepped += len(ids)
				continue
			}
			if st.SmallRun(len(ids)) {
				held = append(held, schedule)
			}
			mailed, err := q.ExpandRun(ctx, db.ExpandRunParams{RunID: runID, EnrollmentIds: ids})
			if err != nil {
				return err
			}
			got := g.GotMail(mailed)
			sent := int64(len(mailed))
			if err := q.AdvanceEnrollments(ctx, db.AdvanceEnrollmentsParams{Got: got, EnrollmentIds: ids, Now: st.Now}); err != nil {
				return err
			}
			pass.Stepped += len(ids)
			if sent == 0 {
				if err := q.DeleteRun(ctx, runID); err != nil {
					return err
				}
				continue
			}
			bs := int32(st.BatchSize)
			first, err := q.StartRun(ctx, db.StartRunParams{Triggered: sent, BatchSize: &bs, ID: runID})
			if err != nil {
				return err
			}
			last, err := q.LastDeliveryID(ctx, runID)
			if err != nil {
				return err
			}
			pass.Runs = append(pass.Runs, Run{ID: runID, First: first, Last: last, Triggered: sent})
		}
		return nil
	})
	if err != nil {
		return Pass{}, err
	}
	// After the transaction (a schedule's or an automation's row is never
	// locked while enrollments are): the holds, then the totals. A crash
	// right here loses a hold (one run more) or these runs' share of
	// total_triggered.
	if len(held) > 0 {
		if err := d.q.NoteSmallRuns(ctx, db.NoteSmallRunsParams{Now: st.Now, EverySeconds: st.RunEvery.Seconds(),
			StreakFrom: st.Now.Add(-2 * st.RunEvery), Ids: held}); err != nil {
			return pass, err
		}
	}
	if len(blocked) > 0 {
		if err := d.q.HoldSchedules(ctx, db.HoldSchedulesParams{Until: st.Now.Add(st.RunEvery), Ids: blocked}); err != nil {
			return pass, err
		}
	}
	for _, s := range blocked {
		d.log.WarnContext(ctx, "automation schedule not sent: its sender is deleted or not verified; its contacts wait", "schedule_id", s)
	}
	if len(pass.Runs) == 0 {
		return pass, nil
	}
	ids := make([]int64, len(pass.Runs))
	for i, r := range pass.Runs {
		ids[i] = r.ID
	}
	if err := d.q.AddAutomationTriggered(ctx, ids); err != nil {
		return pass, err
	}
	triggered := make(map[int64]mail.Counts, len(pass.Runs))
	for _, r := range pass.Runs {
		triggered[r.ID] = mail.Counts{Triggered: r.Triggered}
	}
	return pass, bumpStats(ctx, d.q, time.Now(), triggered)
}

// Pass is what one stepping pass did (the engine's type).
type Pass = delivery.Pass

// firstSchedule is f, automation a's first live schedule: where an
// enrollment starts (EnrollMembersChunk in queries/enrollment.sql has it too;
// membershipSQL enrolls the contacts entering a segment with it).
const firstSchedule = `CROSS JOIN LATERAL (SELECT s.id, s.waiting_period, s.waiting_type FROM automation_schedules s
                    WHERE s.automation_id = a.id AND s.deleted_at IS NULL ORDER BY s.id LIMIT 1) f`

// enrollJoinedSQL enrolls contacts that just joined contact type $2 of
// account $1 in every live automation targeting the type, at its first
// schedule ($4 is now); JOINED names them (below). A contact enrolled
// already is left as it is. The automations are read FOR SHARE: a pause
// or delete committing meanwhile is waited for and seen (no enrollment
// in a paused or deleted automation), and one waits for this write.
const enrollJoinedSQL = `
INSERT INTO automation_enrollments (automation_id, user_id, contact_id, step, due_at)
SELECT a.id, a.user_id, c.id, f.id, $4::timestamptz + schedule_wait(f.waiting_period, f.waiting_type)
FROM automations a
` + firstSchedule + `
JOIN contacts c ON c.contact_type_id = a.automation_for AND c.deleted_at IS NULL AND ` + joinedContacts + `
WHERE a.automation_for_table = 'contacts_' AND a.automation_for = $2 AND a.user_id = $1
  AND a.status = 1 AND a.deleted_at IS NULL
FOR SHARE OF a
ON CONFLICT (automation_id, contact_id) WHERE state = 0 DO NOTHING`

// joinedContacts is replaced by the contacts that joined: those of an id
// array, or an import's.
const joinedContacts = "JOINED"

var (
	enrollJoinedIDsSQL = strings.Replace(enrollJoinedSQL, joinedContacts, "c.id = ANY($3::bigint[])", 1)
	// An import's new contacts: the ids it changed (import_changed) made
	// at this transaction's start time (created_at defaults to now(), which
	// an update leaves alone; the insert runs in a savepoint, so xmin
	// cannot tell them). $3 is unused (NULL).
	enrollImportedSQL = strings.Replace(enrollJoinedSQL, joinedContacts,
		"c.id IN (SELECT id FROM import_changed) AND c.created_at = now() AND $3::bigint[] IS NULL", 1)
	// An import into a type that had no contacts: all of them are new.
	enrollWholeTypeSQL = strings.Replace(enrollJoinedSQL, joinedContacts, "$3::bigint[] IS NULL", 1)
)

// enrollJoined enrolls, in tx, contacts that joined contact type typeID
// (ids) in the live automations targeting the type. A type no live
// automation targets costs one index probe.
func enrollJoined(ctx context.Context, tx pgx.Tx, userID, typeID int64, ids []int64, now time.Time) error {
	var live bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM automations
		WHERE automation_for_table = 'contacts_' AND automation_for = $1 AND status = 1 AND deleted_at IS NULL)`, typeID).Scan(&live); err != nil || !live {
		return err
	}
	_, err := tx.Exec(ctx, enrollJoinedIDsSQL, userID, typeID, ids, now)
	return err
}

// enrollImported enrolls the contacts an import inserted into typeID in
// the type's live automations (the caller checked there are some): the
// ids it collected when the type had contacts before, else the whole type.
func enrollImported(ctx context.Context, tx pgx.Tx, userID, typeID int64, typeHadContacts bool, now time.Time) error {
	sql := enrollWholeTypeSQL
	if typeHadContacts {
		sql = enrollImportedSQL
	}
	_, err := tx.Exec(ctx, sql, userID, typeID, nil, now)
	return err
}
