package postgres_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// Contacts that join a live automation's contact type are enrolled in the
// transaction that adds, moves or imports them; contacts already there,
// updates that join nothing and paused automations enroll nobody.
func TestEnrollOnJoin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	var live, paused int64
	for _, a := range []struct {
		status int
		id     *int64
	}{{1, &live}, {0, &paused}} {
		if err := f.d.Pool.QueryRow(ctx, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for,
				automation_for_table, status) VALUES ($1, gen_random_uuid(), 'w', 1, $2, 'contacts_', $3) RETURNING id`,
			f.uid, f.typeA, a.status).Scan(a.id); err != nil {
			t.Fatal(err)
		}
		if _, err := f.d.Pool.Exec(ctx, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject,
				waiting_period, waiting_type) VALUES ($1, $2, gen_random_uuid(), 1, 1, 'hi', 1, 'instantly')`, f.uid, *a.id); err != nil {
			t.Fatal(err)
		}
	}
	enrolled := func() []string {
		t.Helper()
		var out []string
		if err := f.d.Pool.QueryRow(ctx, `SELECT COALESCE(array_agg(c.email ORDER BY c.email), '{}') FROM automation_enrollments e
			JOIN contacts c ON c.id = e.contact_id WHERE e.automation_id = $1 AND e.state = 0`, live).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	f.add(t, f.typeB, "before@x.example", 1) // another type: nothing
	f.add(t, f.typeA, "ann@x.example", 1)
	f.add(t, f.typeA, "ann@x.example", 2) // the same contact again: not a join
	moved := f.add(t, f.typeB, "moved@x.example", 1)
	if err := f.d.UpdateContact(ctx, f.uid, moved, f.contact(f.typeA, "moved@x.example", 1)); err != nil {
		t.Fatal(err)
	}
	f.importCSV(t, f.typeA, "email,score\nann@x.example,3\nnew1@x.example,1\nnew2@x.example,2\n")
	want := []string{"ann@x.example", "moved@x.example", "new1@x.example", "new2@x.example"}
	if got := enrolled(); !slices.Equal(got, want) {
		t.Errorf("enrolled %v, want %v", got, want)
	}
	var inPaused, firstStep int64
	if err := f.d.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM automation_enrollments WHERE automation_id = $1),
		(SELECT count(*) FROM automation_enrollments e WHERE e.automation_id = $2 AND e.step = (SELECT min(id) FROM automation_schedules WHERE automation_id = $2) AND e.due_at IS NOT NULL)`,
		paused, live).Scan(&inPaused, &firstStep); err != nil {
		t.Fatal(err)
	}
	if inPaused != 0 || firstStep != 4 {
		t.Errorf("paused automation enrolled %d; %d at the first schedule, want 0 and 4", inPaused, firstStep)
	}
}

// Contacts that enter a live automation's segment (added into it, updated
// or imported so that they match) are enrolled in the writer's
// transaction; members that stay members are not enrolled again.
func TestEnrollOnEnteringSegment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t) // f.segment: type A contacts with score < 50
	var auto int64
	if err := f.d.Pool.QueryRow(ctx, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for,
			automation_for_table, status) VALUES ($1, gen_random_uuid(), 'seg', 1, $2, 'segments_', 1) RETURNING id`,
		f.uid, f.segment).Scan(&auto); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Pool.Exec(ctx, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject,
			waiting_period, waiting_type) VALUES ($1, $2, gen_random_uuid(), 1, 1, 'hi', 2, 'days')`, f.uid, auto); err != nil {
		t.Fatal(err)
	}
	enrolled := func() []string {
		t.Helper()
		var out []string
		if err := f.d.Pool.QueryRow(ctx, `SELECT COALESCE(array_agg(c.email || ':' || e.id ORDER BY c.email), '{}') FROM automation_enrollments e
			JOIN contacts c ON c.id = e.contact_id WHERE e.automation_id = $1`, auto).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	emails := func(list []string) []string {
		out := make([]string, len(list))
		for i, s := range list {
			out[i] = s[:strings.IndexByte(s, ':')]
		}
		return out
	}

	f.add(t, f.typeA, "low@x.example", 5)           // joins at once
	high := f.add(t, f.typeA, "high@x.example", 80) // not a member
	f.add(t, f.typeB, "other@x.example", 1)         // another type
	if got := emails(enrolled()); !slices.Equal(got, []string{"low@x.example"}) {
		t.Fatalf("after adds %v", got)
	}
	before := enrolled()
	if err := f.d.UpdateContact(ctx, f.uid, high, f.contact(f.typeA, "high@x.example", 10)); err != nil { // enters
		t.Fatal(err)
	}
	f.add(t, f.typeA, "low@x.example", 6) // stays a member: nothing new
	f.importCSV(t, f.typeA, "email,score\nnew@x.example,1\nlow@x.example,7\nbig@x.example,99\n")
	got := enrolled()
	if want := []string{"high@x.example", "low@x.example", "new@x.example"}; !slices.Equal(emails(got), want) {
		t.Fatalf("enrolled %v, want %v", got, want)
	}
	if !slices.Contains(got, before[0]) {
		t.Errorf("low@ was enrolled again: %v, was %v", got, before)
	}

	// A segment edit that lets big@ in enrolls it, its wait counted from
	// the database handle's clock; a narrowing edit enrolls nobody.
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clocked := *f.d
	clocked.Now = func() time.Time { return at }
	if err := clocked.UpdateSegment(ctx, f.uid, f.segment, f.segmentInput(t, f.typeA, "100")); err != nil {
		t.Fatal(err)
	}
	if err := clocked.UpdateSegment(ctx, f.uid, f.segment, f.segmentInput(t, f.typeA, "5")); err != nil {
		t.Fatal(err)
	}
	if got, want := emails(enrolled()), []string{"big@x.example", "high@x.example", "low@x.example", "new@x.example"}; !slices.Equal(got, want) {
		t.Fatalf("after the segment edits %v, want %v", got, want)
	}
	var due time.Time
	if err := f.d.Pool.QueryRow(ctx, `SELECT e.due_at FROM automation_enrollments e JOIN contacts c ON c.id = e.contact_id
		WHERE e.automation_id = $1 AND c.email = 'big@x.example'`, auto).Scan(&due); err != nil {
		t.Fatal(err)
	}
	if want := at.Add(48 * time.Hour); !due.Equal(want) {
		t.Errorf("big@ due %v, want %v", due, want)
	}
}

// An automation of another account pointed at this account's type (or
// segment) enrolls none of its contacts, by any path.
func TestEnrollmentStaysInItsAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	otherUser, _, err := f.d.CreateAccount(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []struct {
		table string
		id    int64
		kind  int
	}{{"contacts_", f.typeA, 1}, {"segments_", f.segment, 1}, {"contacts_", f.typeA, 2}} {
		var auto int64
		if err := f.d.Pool.QueryRow(ctx, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for,
				automation_for_table, status) VALUES ($1, gen_random_uuid(), 'x', $2, $3, $4, 1) RETURNING id`,
			otherUser, target.kind, target.id, target.table).Scan(&auto); err != nil {
			t.Fatal(err)
		}
		if _, err := f.d.Pool.Exec(ctx, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject,
				waiting_period, waiting_type) VALUES ($1, $2, gen_random_uuid(), 1, 1, 'hi', 1, 'instantly')`, otherUser, auto); err != nil {
			t.Fatal(err)
		}
		if _, err := f.d.EnrollMembers(ctx, auto, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	f.add(t, f.typeA, "mine@x.example", 1)
	f.importCSV(t, f.typeA, "email,score\nmine2@x.example,2\n")
	var n int64
	if err := f.d.Pool.QueryRow(ctx, "SELECT count(*) FROM automation_enrollments WHERE user_id = $1", otherUser).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("another account's automations enrolled %d of this account's contacts", n)
	}
}

// A contact write racing a pause (or delete) of the automation it joins
// waits for it and enrolls nobody: the automations are read FOR SHARE.
func TestEnrollWaitsForPause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	var auto int64
	if err := f.d.Pool.QueryRow(ctx, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for,
			automation_for_table, status) VALUES ($1, gen_random_uuid(), 'w', 1, $2, 'contacts_', 1) RETURNING id`,
		f.uid, f.typeA).Scan(&auto); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Pool.Exec(ctx, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject,
			waiting_period, waiting_type) VALUES ($1, $2, gen_random_uuid(), 1, 1, 'hi', 1, 'instantly')`, f.uid, auto); err != nil {
		t.Fatal(err)
	}
	pause, err := f.d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pause.Rollback(ctx)
	if _, err := pause.Exec(ctx, "UPDATE automations SET status = 0 WHERE id = $1", auto); err != nil {
		t.Fatal(err)
	}
	added := make(chan error, 1)
	go func() {
		_, _, err := f.d.AddContact(ctx, f.uid, f.contact(f.typeA, "racer@x.example", 1))
		added <- err
	}()
	// The write reaches the automation's row and waits for the pause.
	for waiting := false; !waiting; {
		select {
		case err := <-added:
			t.Fatalf("the contact write did not wait for the pause: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if err := f.d.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO automation_enrollments%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := pause.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-added; err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := f.d.Pool.QueryRow(ctx, "SELECT count(*) FROM automation_enrollments WHERE automation_id = $1", auto).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d enrollments in the automation paused meanwhile, want 0", n)
	}
}
