package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// A segment's members that are contacts are materialized in
// segment_members (recipients stored by hand are in segment_recipients;
// the view segment_entries is both): rebuilt when the segment is made or its conditions
// change, and re-evaluated for just the changed contacts after every
// contact write (refreshSegments), in the writer's transaction.
//
// A rebuild runs in steps over the type's contacts, in id order, each its
// own short transaction holding the type's writer lock exclusive (writers
// hold it shared): so a writer waits for a step, never for a whole rebuild
// (segment updates used to hold writers for seconds). It is correct
// because the new conditions commit before the first step: a writer that
// began later evaluates its contacts against them; one that began earlier
// and is still in flight holds the lock, so the step covering its contacts
// waits for it and evaluates them again. A step of an older generation
// (the conditions changed again) or of a deleted segment stops. The state
// is in the segment's row (rebuild_gen, rebuild_next), so a rebuild a
// stopped process left is resumed (ResumeSegmentRebuilds).

// A step holds the writers for as long as it evaluates its contacts and
// writes their memberships, which costs 2 to 30 µs a contact (more when
// many join or leave, or the cores are busy): so a step's size is set by
// time, not count. Each step takes as many contacts as the statement of
// the step before would have evaluated in rebuildEval (at most twice or
// half as many), from rebuildStepFirst, within rebuildStepMin and
// rebuildStepMax; the lock is held that long plus a few round trips. With
// 5,000 contacts a step, steps held writers 37-64 ms at the median on a
// shared 2-core machine (load 4-11) and the writers' p99 was 99-144 ms;
// sized by time, 23-25 ms and 68-80 ms (235 ms in one run at load 10;
// BenchmarkWritersDuringRebuild, docs/performance.md).
const (
	rebuildEval      = 20 * time.Millisecond
	rebuildStepFirst = 2000
	rebuildStepMin   = 1000
	rebuildStepMax   = 20000
)

// nextRebuildStep is the size of the step after one whose statement took
// eval for n contacts.
func nextRebuildStep(n int, eval time.Duration) int {
	if eval <= 0 {
		return n
	}
	next := int(float64(n) * float64(rebuildEval) / float64(eval))
	next = min(max(next, n/2), 2*n)
	return min(max(next, rebuildStepMin), rebuildStepMax)
}

// rebuildLockWait is how long a step waits for its type lock before it
// lets the writers queued behind it go (rebuildBackoff) and tries again:
// a step never holds writers behind an import's long FOR SHARE.
const (
	rebuildLockWait = 200 * time.Millisecond
	rebuildBackoff  = 100 * time.Millisecond
)

// CreateSegment stores a segment and fills it with the matching contacts.
func (d *DB) CreateSegment(ctx context.Context, userID int64, in mail.SegmentInput) (int64, error) {
	var row db.CreateSegmentRow
	err := d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		var err error
		row, err = q.CreateSegment(ctx, db.CreateSegmentParams{
			SegmentName: in.Name, SelectField: in.Fields, SelectOperator: in.Operators, Value: nonNilStrings(in.Values),
			QueryType: in.QueryType, ContactTypeID: in.ContactTypeID, UserID: userID,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return errUnknownContactType
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	d.rebuild(ctx, row.ID, row.RebuildGen)
	return row.ID, nil
}

// UpdateSegment changes a segment and rebuilds its contact members (not
// when only its name changed).
func (d *DB) UpdateSegment(ctx context.Context, userID, id int64, in mail.SegmentInput) error {
	gen := int64(-1)
	for {
		err := d.updateSegment(ctx, userID, id, in, &gen)
		if !errors.Is(err, errLockBusy) {
			if err != nil || gen < 0 {
				return err
			}
			d.rebuild(ctx, id, gen)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rebuildBackoff):
		}
	}
}

// updateSegment stores the new conditions and sets *gen to the rebuild
// they need (left alone when only the name changed).
func (d *DB) updateSegment(ctx context.Context, userID, id int64, in mail.SegmentInput, gen *int64) error {
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		old, err := q.LockSegment(ctx, db.LockSegmentParams{ID: id, UserID: userID})
		if err != nil {
			return err
		}
		if sameConditions(old, in) {
			n, err := q.RenameSegment(ctx, db.RenameSegmentParams{SegmentName: in.Name, ID: id, UserID: userID})
			if err == nil && n == 0 {
				err = mail.NotFound()
			}
			return err
		}
		if old.ContactTypeID != in.ContactTypeID {
			// Writers of the old type in flight may still add members by
			// the old conditions: let them commit first, the steps then
			// take those members out.
			if err := lockTypeForRebuild(ctx, tx, q, old.ContactTypeID); err != nil {
				return err
			}
		}
		*gen, err = q.UpdateSegment(ctx, db.UpdateSegmentParams{
			SegmentName: in.Name, SelectField: in.Fields, SelectOperator: in.Operators, Value: nonNilStrings(in.Values),
			QueryType: in.QueryType, ID: id, UserID: userID, ContactTypeID: in.ContactTypeID,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return errUnknownContactType
		}
		return err
	})
}

// lockTypeForRebuild takes a contact type's writer lock exclusive, waiting
// at most rebuildLockWait (then errLockBusy: the caller lets the writers
// queued behind it through, and tries again); the lock manager queues the
// writers that come meanwhile behind it, so it cannot be starved.
func lockTypeForRebuild(ctx context.Context, tx pgx.Tx, q *db.Queries, typeID int64) error {
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", rebuildLockWait.Milliseconds())); err != nil {
		return err
	}
	if err := q.LockTypeForRebuild(ctx, typeID); err != nil {
		return lockBusy(err)
	}
	_, err := tx.Exec(ctx, "SET LOCAL lock_timeout TO DEFAULT")
	return err
}

// lockBusy is errLockBusy for a lock that lock_timeout gave up on, else
// err.
func lockBusy(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
		return errLockBusy
	}
	return err
}

// sameConditions reports whether in keeps old's type and conditions.
func sameConditions(old db.LockSegmentRow, in mail.SegmentInput) bool {
	return old.ContactTypeID == in.ContactTypeID && slices.Equal(old.SelectField, in.Fields) &&
		slices.Equal(old.SelectOperator, in.Operators) && slices.Equal(old.Value, nonNilStrings(in.Values)) &&
		(old.QueryType == nil) == (in.QueryType == nil) && (old.QueryType == nil || *old.QueryType == *in.QueryType)
}

// errLockBusy is a rebuild step that could not take its type in time.
var errLockBusy = errors.New("postgres: contact type busy")

// rebuild runs generation gen of a segment's rebuild to its end, step by
// step. It outlives a client that leaves (the steps are short and the
// rebuild must end), not the process: see ResumeSegmentRebuilds. The
// change that needs the rebuild is committed, so a step that fails is
// logged, not answered: the rebuild stays pending and the next resume
// takes it up where it stopped.
func (d *DB) rebuild(ctx context.Context, segmentID, gen int64) {
	ctx = context.WithoutCancel(ctx)
	n := rebuildStepFirst
	for {
		done, eval, err := d.rebuildOneStep(ctx, segmentID, gen, n)
		if errors.Is(err, errLockBusy) {
			if err := d.waitForImport(ctx, segmentID); err != nil {
				d.log.WarnContext(ctx, "segment rebuild: waiting for an import failed", "segment_id", segmentID, "err", err)
			}
			time.Sleep(rebuildBackoff)
			continue
		}
		if err != nil {
			d.log.ErrorContext(ctx, "segment rebuild step failed; it resumes within a minute",
				"segment_id", segmentID, "gen", gen, "err", err)
		}
		if err != nil || done {
			return
		}
		n = nextRebuildStep(n, eval)
	}
}

// waitForImport waits until no CSV import is merging into the segment's
// contact type: it looks at the import's own lock (which no writer takes)
// every importPoll, holding no connection in between. A step that gave up
// on the writer lock behind an import's merge otherwise tried again every
// 300 ms for as long as the import ran, each try holding the writers that
// came in its 200 ms wait and reading where its step ends again: with 24
// segment saves waiting on a 200,000-row import, single writes to the
// type took 400 ms at the median and the import 165 s instead of 22 s (an
// outside attack found it). Waiting on the lock itself held a pool
// connection per waiting rebuild: 24 of them emptied the pool, and every
// writer stalled until the import ended.
func (d *DB) waitForImport(ctx context.Context, segmentID int64) error {
	for {
		var free bool
		err := d.InTx(ctx, func(tx pgx.Tx, _ *db.Queries) error {
			return tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock_shared($1, (s.contact_type_id % 2147483647)::int)
				FROM segments s WHERE s.id = $2`, importLockSpace, segmentID).Scan(&free)
		})
		if errors.Is(err, pgx.ErrNoRows) || free {
			return nil
		}
		if err != nil {
			return err
		}
		time.Sleep(importPoll)
	}
}

// importPoll is how often a rebuild waiting for an import looks again.
const importPoll = 250 * time.Millisecond

// rebuildOneStep re-evaluates the next n contacts of the type; it reports
// whether the rebuild is over (or no longer this generation's), and how
// long its statement took.
func (d *DB) rebuildOneStep(ctx context.Context, segmentID, gen int64, n int) (done bool, eval time.Duration, err error) {
	err = d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		st, err := q.RebuildState(ctx, segmentID)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && (st.RebuildGen != gen || st.RebuildNext == nil)) {
			done = true // deleted, done, or superseded
			return nil
		}
		if err != nil {
			return err
		}
		// The step's range changes every time: a generic plan of the
		// cached statement read whole types (163 ms a step, not 7). The
		// commit does not wait for its WAL to reach the disk while the
		// writers wait for the lock: a step lost in a crash is lost with
		// its rebuild_next, and the resume does it again. lock_timeout
		// holds for the whole step: one that waits longer for the type's
		// lock, or then for a row (a member deleted by hand, an automation
		// being changed), lets the writers through and is tried again.
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL plan_cache_mode = force_custom_plan; SET LOCAL synchronous_commit = off; SET LOCAL lock_timeout = %d",
			rebuildLockWait.Milliseconds())); err != nil {
			return err
		}
		// Where the step ends is only a bound (the statement takes every
		// contact in the range when it runs), so it is found, and the next
		// step's start recorded, before the lock: contacts written
		// meanwhile are in the range all the same. Under the lock the step
		// reads the custom fields, runs its statement and records its
		// count.
		lo := *st.RebuildNext
		var hi, next *int64
		end, err := q.RebuildStepEnd(ctx, db.RebuildStepEndParams{UserID: st.UserID, ContactTypeID: st.ContactTypeID,
			Lo: lo, N: int64(n - 1)})
		switch {
		case err == nil:
			hi = &end
			after := end + 1
			next = &after
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if err := q.SetRebuildNext(ctx, db.SetRebuildNextParams{Next: next, ID: segmentID}); err != nil {
			return err
		}
		if err := q.LockTypeForRebuild(ctx, st.ContactTypeID); err != nil {
			return err
		}
		custom, err := customFieldsFor(ctx, q, st.UserID, st.SelectField)
		if err != nil {
			return err
		}
		conds := mail.StoredConditions(st.SelectField, st.SelectOperator, st.Value, custom)
		sql, args := membership(st.UserID, segmentID, st.ContactTypeID, conds, st.QueryType != nil && *st.QueryType == "or",
			changed{from: lo, to: hi, at: d.now()})
		var gone, joined int64
		t := time.Now()
		if err := tx.QueryRow(ctx, sql, args...).Scan(&gone, &joined); err != nil {
			return err
		}
		eval = time.Since(t)
		done = next == nil
		return addCounts(ctx, q, st.UserID, countSegment, map[int64]int64{segmentID: joined - gone})
	})
	err = lockBusy(err)
	return done, eval, err
}

// clockRebuildEvery is how often a segment with an "is within the last"
// condition is rebuilt: its members follow the clock within this time.
const clockRebuildEvery = time.Hour

// ResumeSegmentRebuilds finishes the segment rebuilds a stopped process
// left, and starts those of the segments that compare with the clock and
// were last rebuilt clockRebuildEvery ago; the API runs it at start and
// every minute. Two processes resuming the same rebuild take its steps in
// turn.
func (d *DB) ResumeSegmentRebuilds(ctx context.Context) error {
	if _, err := d.q.RestartClockRebuilds(ctx, clockRebuildEvery.Seconds()); err != nil {
		return err
	}
	pending, err := d.q.PendingRebuilds(ctx)
	if err != nil {
		return err
	}
	for _, p := range pending {
		d.rebuild(ctx, p.ID, p.RebuildGen)
	}
	return nil
}

// SegmentDetails returns one live segment of the account.
func (d *DB) SegmentDetails(ctx context.Context, userID, id int64) (mail.Segment, error) {
	r, err := d.q.SegmentByID(ctx, db.SegmentByIDParams{ID: id, UserID: userID})
	if err != nil {
		return mail.Segment{}, err
	}
	return mail.Segment{ID: r.ID, UserID: r.UserID, ContactTypeID: r.ContactTypeID, Name: r.SegmentName,
		Fields: r.SelectField, Operators: r.SelectOperator, Values: r.Value, QueryType: r.QueryType,
		DeletedAt: r.DeletedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// Segments returns the account's live segments with their recipient
// counts: all when page is nil, else that page and the total.
func (d *DB) Segments(ctx context.Context, userID int64, page *mail.Page) ([]mail.Segment, int64, error) {
	arg := db.ListSegmentsParams{UserID: userID}
	if page != nil {
		arg.RowLimit, arg.RowOffset = &page.Size, page.Offset()
	}
	rows, err := d.q.ListSegments(ctx, arg)
	if err != nil {
		return nil, 0, err
	}
	out := make([]mail.Segment, len(rows))
	for i, r := range rows {
		out[i] = mail.Segment{ID: r.ID, UserID: r.UserID, ContactTypeID: r.ContactTypeID, Name: r.SegmentName,
			Fields: r.SelectField, Operators: r.SelectOperator, Values: r.Value, QueryType: r.QueryType,
			DeletedAt: r.DeletedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Recipients: r.SegmentEmailsCount}
	}
	total := int64(len(out))
	if page != nil {
		if total, err = d.q.CountSegments(ctx, userID); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// DeleteSegment soft-deletes a segment and drops its recipients.
func (d *DB) DeleteSegment(ctx context.Context, userID, id int64) error {
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		n, err := q.DeleteSegment(ctx, db.DeleteSegmentParams{ID: id, UserID: userID})
		if err != nil {
			return err
		}
		if n == 0 {
			return mail.NotFound()
		}
		gone, err := q.DeleteSegmentRecipientsOf(ctx, id)
		if err != nil {
			return err
		}
		return addCounts(ctx, q, userID, countSegment, map[int64]int64{id: -gone})
	})
}

// StoreSegmentRecipient adds an address to a segment by hand (or renames
// the one stored with that address).
func (d *DB) StoreSegmentRecipient(ctx context.Context, userID int64, in mail.SegmentRecipientInput) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		r, err := q.StoreSegmentRecipient(ctx, db.StoreSegmentRecipientParams{
			FirstName: in.FirstName, LastName: in.LastName, Email: string(in.Email), SegmentID: in.SegmentID, UserID: userID,
		})
		if err != nil || !r.Inserted {
			return err
		}
		return addCounts(ctx, q, userID, countSegment, map[int64]int64{in.SegmentID: 1})
	})
}

// DeleteSegmentRecipient removes one recipient of a live segment.
func (d *DB) DeleteSegmentRecipient(ctx context.Context, userID, id int64) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		segs, err := q.DeleteSegmentRecipient(ctx, db.DeleteSegmentRecipientParams{ID: id, UserID: userID})
		if err != nil {
			return err
		}
		if len(segs) == 0 {
			return mail.NotFound()
		}
		return addCounts(ctx, q, userID, countSegment, map[int64]int64{segs[0]: -1})
	})
}

// listSegmentRecipientsSQL reads a segment's recipients: the page's ids
// from segment_members_page and segment_recipients_segment alone (index-only
// walks merged in id order, however far the offset), then those rows, one
// each (LIMIT 1: through the view the planner cannot tell an id is
// unique, and joined the page with every contact of the database to find
// theirs, 80-100 ms a page). A member whose contact is deleted (never
// kept: deletes take their contacts out of every segment) is read but not
// listed.
var listSegmentRecipientsSQL = `
SELECT r.id, r.user_id, r.segment_id, r.contact_id,
    COALESCE(c.first_name, r.first_name, ''), COALESCE(c.last_name, r.last_name, ''), COALESCE(c.email, r.email, ''),
    c.country, c.state, c.city, c.address_line1, r.created_at, r.updated_at,
    r.contact_id IS NULL OR c.deleted_at IS NULL
FROM (SELECT id FROM segment_entries WHERE segment_id = $1 AND ` + keyset("id", 1) + `) page
CROSS JOIN LATERAL (SELECT * FROM segment_entries r WHERE r.id = page.id AND r.segment_id = $1 LIMIT 1) r
LEFT JOIN contacts c ON c.id = r.contact_id
ORDER BY r.id`

// SegmentRecipients calls fn with each recipient of a live segment of the
// account, in id order; ENOTFOUND when there is no such segment.
func (d *DB) SegmentRecipients(ctx context.Context, userID, segmentID int64, page *mail.Page, fn func(*mail.SegmentRecipient) error) (total int64, err error) {
	ok, err := d.q.SegmentExists(ctx, db.SegmentExistsParams{ID: segmentID, UserID: userID})
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, mail.NotFound()
	}
	if page != nil {
		if total, err = d.count(ctx, userID, countSegment, segmentID); err != nil {
			return 0, err
		}
	}
	err = streamList(ctx, d, listSegmentRecipientsSQL, []any{segmentID}, page, func(rows pgx.Rows, r *mail.SegmentRecipient) error {
		var live bool
		if err := rows.Scan(&r.ID, &r.UserID, &r.SegmentID, &r.ContactID, &r.FirstName, &r.LastName, &r.Email,
			&r.Country, &r.State, &r.City, &r.AddressLine1, &r.CreatedAt, &r.UpdatedAt, &live); err != nil {
			return err
		}
		if !live {
			return errSkipRow
		}
		return nil
	}, func(r *mail.SegmentRecipient) int64 { return r.ID }, fn)
	return total, err
}

// membershipSQL re-evaluates one segment for a set of contacts (src: a
// subquery of contact ids, or all the type's contacts when empty): members
// that no longer match leave, matching contacts join, and those that
// joined are enrolled in the segment's live automations. It answers how
// many left and joined.
const membershipSQL = `
WITH m AS MATERIALIZED (
    SELECT c.id FROM contacts c
    WHERE c.contact_type_id = %[1]s AND c.user_id = %[2]s AND c.deleted_at IS NULL %[4]s AND %[5]s
), gone AS (
    DELETE FROM segment_members r
    WHERE r.segment_id = %[3]s %[6]s
      AND NOT EXISTS (SELECT 1 FROM m WHERE m.id = r.contact_id)
    RETURNING r.contact_id
), joined AS (
    INSERT INTO segment_members (user_id, segment_id, contact_id)
    SELECT %[2]s, %[3]s, m.id FROM m
    ON CONFLICT (segment_id, contact_id) DO NOTHING
    RETURNING contact_id
), enrolled AS (
    -- Contacts entering the segment join the live automations aimed at it,
    -- at their first schedule, due after its wait from %[7]s.
    INSERT INTO automation_enrollments (automation_id, user_id, contact_id, step, due_at)
    SELECT a.id, a.user_id, j.contact_id, f.id, %[7]s::timestamptz + schedule_wait(f.waiting_period, f.waiting_type)
    FROM automations a
    ` + firstSchedule + `
    CROSS JOIN joined j
    WHERE a.automation_for_table = 'segments_' AND a.automation_for = %[3]s AND a.user_id = %[2]s
      AND a.status = 1 AND a.deleted_at IS NULL
    FOR SHARE OF a -- as enrollJoinedSQL: no enrollment in an automation paused or deleted meanwhile
    ON CONFLICT (automation_id, contact_id) WHERE state = 0 DO NOTHING
)
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM joined)`

// changed names the contacts a write touched: ids (new: all of them just
// inserted, so in no segment yet), or (for a CSV import) the temporary
// table of ids and whether each is new, or (for a rebuild step) the ids from from to
// to (nil: to the end); the zero value means every contact. deleted says
// the ids were just deleted: they leave every segment, with no condition
// to evaluate. at is when the write happened: contacts entering a segment
// are enrolled in its automations from then.
type changed struct {
	ids     []int64
	new     bool
	table   string
	columns []string // an import's: the contacts columns table has
	old     bool     // an import's: some changed contact existed before it
	deleted bool
	from    int64
	to      *int64
	at      time.Time
}

// membership builds membershipSQL for one segment over a rebuild step's
// ids (ch.from, ch.to), or the whole type; a write's changed contacts go
// through refresh, every segment at once.
func membership(userID, segmentID, typeID int64, conds []mail.Condition, or bool, ch changed) (string, []any) {
	p := &predicate{}
	ct, uid, seg := p.arg(typeID), p.arg(userID), p.arg(segmentID)
	var onContacts, onMembers string
	switch {
	case ch.from > 0 || ch.to != nil:
		from := p.arg(ch.from)
		onContacts = "AND c.id >= " + from
		onMembers = "AND r.contact_id >= " + from
		if ch.to != nil {
			to := p.arg(*ch.to)
			onContacts += " AND c.id <= " + to
			onMembers += " AND r.contact_id <= " + to
		}
	}
	pred := p.compile(conds, or)
	at := p.arg(ch.at)
	return fmt.Sprintf(membershipSQL, ct, uid, seg, onContacts, pred, onMembers, at), p.args
}

// rebuildSegment re-evaluates a segment over its whole contact type.
func rebuildSegment(ctx context.Context, tx pgx.Tx, userID, segmentID, typeID int64, conds []mail.Condition, or bool, at time.Time) (joined int64, err error) {
	if _, err := tx.Exec(ctx, "SET LOCAL work_mem = '256MB'"); err != nil {
		return 0, err
	}
	sql, args := membership(userID, segmentID, typeID, conds, or, changed{at: at})
	var gone int64
	if err = tx.QueryRow(ctx, sql, args...).Scan(&gone, &joined); err != nil {
		return 0, err
	}
	return joined, addCounts(ctx, db.New(tx), userID, countSegment, map[int64]int64{segmentID: joined - gone})
}

// refreshSegments re-evaluates, for the changed contacts, every live
// segment of the account over the given contact types (the contacts' types
// before and after the write), all in one statement (refreshSQL: the
// contacts read once, by id, whatever the statistics say), and records how
// many left and joined each. Every contact write calls it in its own
// transaction. Deleted contacts just leave: one statement for all the
// segments, the ids joined as a set (a bulk delete's 100,000 ids cost no
// planning per id, as = ANY would).
func refreshSegments(ctx context.Context, tx pgx.Tx, userID int64, typeIDs []int64, ch changed) error {
	if len(typeIDs) == 0 || (ch.table == "" && len(ch.ids) == 0) {
		return nil
	}
	q := db.New(tx)
	segs, err := q.LiveSegmentsOfTypes(ctx, db.LiveSegmentsOfTypesParams{UserID: userID, TypeIds: sortedUnique(typeIDs)})
	if err != nil || len(segs) == 0 {
		return err
	}
	if ch.deleted {
		ids := make([]int64, len(segs))
		for i, s := range segs {
			ids[i] = s.ID
		}
		left, err := q.LeaveSegments(ctx, db.LeaveSegmentsParams{ContactIds: ch.ids, SegmentIds: ids})
		if err != nil {
			return err
		}
		delta := make(map[int64]int64, len(left))
		for _, r := range left {
			delta[r.SegmentID] = -r.N
		}
		return addCounts(ctx, q, userID, countSegment, delta)
	}
	custom, err := segmentsCustomFields(ctx, q, userID, segs)
	if err != nil {
		return err
	}
	mode := "SET LOCAL jit = off"
	if ch.table == "" {
		mode = "SET LOCAL plan_cache_mode = force_generic_plan"
	}
	// One round trip for both: a single write's every round trip is a
	// tenth of its time.
	sql, args := refresh(userID, segs, custom, ch)
	b := &pgx.Batch{}
	b.Queue(mode)
	b.Queue(sql, args...)
	return tx.SendBatch(ctx, b).Close()
}

// segmentsCustomFields is customFieldsFor the conditions of segs.
func segmentsCustomFields(ctx context.Context, q *db.Queries, userID int64, segs []db.LiveSegmentsOfTypesRow) ([]mail.CustomField, error) {
	fields := make([][]string, len(segs))
	for i, s := range segs {
		fields[i] = s.SelectField
	}
	return customFieldsFor(ctx, q, userID, fields...)
}

// customFieldsFor are the account's custom field definitions for
// resolving segments' stored conditions (their select_field lists):
// read only when a condition names a field that is not reserved, else
// none.
func customFieldsFor(ctx context.Context, q *db.Queries, userID int64, fields ...[]string) ([]mail.CustomField, error) {
	for _, ff := range fields {
		for _, f := range ff {
			if id, err := strconv.ParseInt(f, 10, 64); err != nil || !mail.ReservedFieldID(id) {
				return customFieldDefs(ctx, q, userID)
			}
		}
	}
	return nil, nil
}

// rebuildSegmentsUsingField rebuilds the segments with a condition on a
// custom field (after the field was deleted and its values with it).
func rebuildSegmentsUsingField(ctx context.Context, tx pgx.Tx, userID, fieldID int64, at time.Time) error {
	q := db.New(tx)
	segs, err := q.SegmentsUsingField(ctx, db.SegmentsUsingFieldParams{UserID: userID, FieldID: strconv.FormatInt(fieldID, 10)})
	if err != nil || len(segs) == 0 {
		return err
	}
	custom, err := customFieldDefs(ctx, q, userID)
	if err != nil {
		return err
	}
	for _, s := range segs {
		conds := mail.StoredConditions(s.SelectField, s.SelectOperator, s.Value, custom)
		if _, err := rebuildSegment(ctx, tx, userID, s.ID, s.ContactTypeID, conds, s.QueryType != nil && *s.QueryType == "or", at); err != nil {
			return err
		}
	}
	return nil
}

// CustomFieldDefs are the account's custom field definitions, oldest first.
func (d *DB) CustomFieldDefs(ctx context.Context, userID int64) ([]mail.CustomField, error) {
	return customFieldDefs(ctx, d.q, userID)
}

// customFieldDefs are the account's custom field definitions, read with q.
func customFieldDefs(ctx context.Context, q *db.Queries, userID int64) ([]mail.CustomField, error) {
	rows, err := q.ListCustomFields(ctx, db.ListCustomFieldsParams{UserID: userID})
	if err != nil {
		return nil, err
	}
	out := make([]mail.CustomField, len(rows))
	for i, r := range rows {
		out[i] = mail.CustomField{ID: r.ID, Name: r.FieldName, Type: r.FieldType}
	}
	return out, nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
