package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

// Live automations aimed at two of a type's 100 segments, one found by its
// guard (first_name starts with "an" and plan is "gold") and one evaluated
// (score above 90 or city ending in "burg"), enroll a contact once each
// time it enters: by an import (new rows and updated ones), an add (new,
// or an upsert that makes it match), an update, a move into the type, a
// delete and add again. A contact already a member that stays one is not
// enrolled again, nor is one that leaves and comes back while its
// enrollment is active (at most one active enrollment per contact and
// automation); once the stepper has finished its enrollment, entering again
// enrolls it again. Every enrollment row is checked: its contact, state
// and due time (the write's clock plus the schedule's hour).
func TestSegmentAutomationsEnrollOncePerEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newRefreshWorld(t)
	w.makeSegments(98)
	clocked := *w.d
	var at time.Time
	clocked.Now = func() time.Time { return at }
	d := &clocked
	typeA, typeB := w.types[0], w.types[1]
	custom := w.custom()

	segment := func(form mail.SegmentForm) int64 {
		t.Helper()
		form.ContactTypeID, form.Name = fmt.Sprint(typeA), "target"
		in, err := mail.ParseSegment(form, custom)
		if err != nil {
			t.Fatal(err)
		}
		id, err := d.CreateSegment(ctx, w.uid, in)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	plan, score := fmt.Sprint(w.fields["plan"].ID), fmt.Sprint(w.fields["score"].ID)
	guardedForm := mail.SegmentForm{Fields: []string{"2", plan}, Operators: []string{mail.OpStartsWith, mail.OpIs},
		Values: [][]string{{"an"}, {"gold"}}}
	evaluatedForm := mail.SegmentForm{Fields: []string{score, "7"}, Operators: []string{mail.OpGreater, mail.OpEndsWith},
		Values: [][]string{{"90"}, {"burg"}}, QueryType: "or"}
	for _, f := range []struct {
		form    mail.SegmentForm
		guarded bool
	}{{guardedForm, true}, {evaluatedForm, false}} {
		in, err := mail.ParseSegment(mail.SegmentForm{ContactTypeID: "1", Name: "x", Fields: f.form.Fields, Operators: f.form.Operators,
			Values: f.form.Values, QueryType: f.form.QueryType}, custom)
		if err != nil {
			t.Fatal(err)
		}
		if postgres.SegmentGuarded(in.Conditions, in.Or()) != f.guarded {
			t.Fatalf("segment %v: guarded %v, the test needs %v", f.form, !f.guarded, f.guarded)
		}
	}
	segG, segE := segment(guardedForm), segment(evaluatedForm)

	var sender int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'S', 's@acme.example', 's@acme.example', 276, 'Street 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, w.uid).Scan(&sender); err != nil {
		t.Fatal(err)
	}
	automation := func(seg int64) int64 {
		t.Helper()
		var id int64
		if err := d.Pool.QueryRow(ctx, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for,
				automation_for_table, status) VALUES ($1, gen_random_uuid(), 'seg', 1, $2, 'segments_', 1) RETURNING id`,
			w.uid, seg).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Pool.Exec(ctx, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject,
				waiting_period, waiting_type, template_html) VALUES ($1, $2, gen_random_uuid(), $3, 1, 'hi', 1, 'hours', '<p>hi</p>')`,
			w.uid, id, sender); err != nil {
			t.Fatal(err)
		}
		return id
	}
	autoG, autoE := automation(segG), automation(segE)

	// The writes' clocks: years before any other test's, so the stepper
	// below takes only this test's enrollments.
	base := time.Date(2020, 3, 1, 10, 0, 0, 0, time.UTC)
	phase := func(n int) { at = base.AddDate(0, 0, n) }
	label := func(due *time.Time) string {
		if due == nil {
			return "-"
		}
		for n := range 10 {
			if due.Equal(base.AddDate(0, 0, n).Add(time.Hour)) {
				return fmt.Sprint("day", n)
			}
		}
		return due.String()
	}

	importCSV := func(typ int64, content string) {
		t.Helper()
		src, err := mail.NewContactCSV(strings.NewReader(content), custom, func(string) (int32, bool) { return 0, false })
		if err != nil {
			t.Fatal(err)
		}
		im, err := d.BeginContactImport(ctx, w.uid)
		if err != nil {
			t.Fatal(err)
		}
		defer im.Rollback(ctx)
		if err := im.Copy(ctx, src); err != nil {
			t.Fatal(err)
		}
		if _, err := im.Commit(ctx, typ, src); err != nil {
			t.Fatal(err)
		}
	}
	// input is a write of the given fields ("first_name", "city", "plan",
	// "score"; the others are kept).
	input := func(typ int64, email string, kv ...string) mail.ContactInput {
		in := mail.ContactInput{ContactTypeID: typ, Email: mail.Email(email), Custom: map[string]any{}}
		for i := 0; i < len(kv); i += 2 {
			v := kv[i+1]
			switch kv[i] {
			case "first_name":
				in.FirstName = &v
			case "city":
				in.City = &v
			default:
				f := w.fields[kv[i]]
				val, err := f.ParseCustomValue(v)
				if err != nil {
					t.Fatal(err)
				}
				in.Custom[f.Name] = val
				in.CustomFieldIDs = append(in.CustomFieldIDs, f.ID)
			}
		}
		return in
	}
	add := func(typ int64, email string, kv ...string) {
		t.Helper()
		if _, _, err := d.AddContact(ctx, w.uid, input(typ, email, kv...)); err != nil {
			t.Fatal(err)
		}
	}
	idOf := func(email string) int64 {
		t.Helper()
		var id int64
		if err := d.Pool.QueryRow(ctx, "SELECT id FROM contacts WHERE user_id = $1 AND email = $2 AND deleted_at IS NULL", w.uid, email).Scan(&id); err != nil {
			t.Fatalf("%s: %v", email, err)
		}
		return id
	}
	update := func(typ int64, email string, kv ...string) {
		t.Helper()
		if err := d.UpdateContact(ctx, w.uid, idOf(email), input(typ, email, kv...)); err != nil {
			t.Fatal(err)
		}
	}
	// expect checks a segment's members (local parts of their addresses,
	// in any order).
	expect := func(when string, seg int64, want ...string) {
		t.Helper()
		var got []string
		if err := d.Pool.QueryRow(ctx, `SELECT COALESCE(array_agg(split_part(c.email, '@', 1) ORDER BY c.email), '{}')
			FROM segment_members r JOIN contacts c ON c.id = r.contact_id WHERE r.segment_id = $1`, seg).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want = slices.Sorted(slices.Values(want)); !slices.Equal(got, want) {
			t.Fatalf("%s: segment %d has %v, want %v", when, seg, got, want)
		}
	}
	// enrolled checks an automation's enrollments: "local part, state,
	// due", by address, then in the order they were made; a deleted
	// contact's address is marked.
	enrolled := func(when string, auto int64, want ...string) {
		t.Helper()
		rows, err := d.Pool.Query(ctx, `SELECT split_part(c.email, '@', 1) || CASE WHEN c.deleted_at IS NULL THEN '' ELSE '(deleted)' END,
				e.state, e.due_at
			FROM automation_enrollments e JOIN contacts c ON c.id = e.contact_id
			WHERE e.automation_id = $1 ORDER BY c.email, e.id`, auto)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var email string
			var state int
			var due *time.Time
			if err := rows.Scan(&email, &state, &due); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s %d %s", email, state, label(due)))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: automation %d enrolled\n%s\nwant\n%s", when, auto, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	// Day 0: an import of new rows. ann and anja enter the guarded
	// segment (any case), bob and anja the evaluated one; a contact of
	// the other type that would match enters nothing.
	phase(0)
	importCSV(typeA, "email,first_name,city,plan,score\n"+
		"ann@x.example,Anna,,Gold,\n"+
		"bob@x.example,Bob,,gold,95\n"+
		"anja@x.example,ANJA,Hamburg,GOLD,\n"+
		"zed@x.example,Zed,,,5\n"+
		"anke@x.example,Ánke,,gold,\n")
	importCSV(typeB, "email,first_name,plan\nmoved@x.example,Anna,gold\n")
	expect("import", segG, "ann", "anja")
	expect("import", segE, "anja", "bob")
	enrolled("import", autoG, "anja 0 day0", "ann 0 day0")
	enrolled("import", autoE, "anja 0 day0", "bob 0 day0")

	// Day 1: adds. andy is new and matches; ann added again with the
	// same values stays a member; zed (upserted) enters by its score;
	// cleo matches nothing.
	phase(1)
	add(typeA, "andy@x.example", "first_name", "Andy", "plan", "gold")
	add(typeA, "ann@x.example", "first_name", "Anna", "plan", "Gold")
	add(typeA, "zed@x.example", "score", "99")
	add(typeA, "cleo@x.example", "first_name", "Cleo")
	expect("adds", segG, "andy", "ann", "anja")
	expect("adds", segE, "anja", "bob", "zed")
	enrolled("adds", autoG, "andy 0 day1", "anja 0 day0", "ann 0 day0")
	enrolled("adds", autoE, "anja 0 day0", "bob 0 day0", "zed 0 day1")

	// Day 2: updates. ann and zed leave and come back while their
	// enrollments are active: nothing new; cleo enters.
	phase(2)
	update(typeA, "ann@x.example", "first_name", "Bea")
	update(typeA, "zed@x.example", "score", "1")
	expect("leaving", segG, "andy", "anja")
	expect("leaving", segE, "anja", "bob")
	update(typeA, "ann@x.example", "first_name", "anne")
	update(typeA, "zed@x.example", "score", "100")
	update(typeA, "cleo@x.example", "first_name", "Anouk", "plan", "gold")
	expect("updates", segG, "andy", "ann", "anja", "cleo")
	expect("updates", segE, "anja", "bob", "zed")
	enrolled("updates", autoG, "andy 0 day1", "anja 0 day0", "ann 0 day0", "cleo 0 day2")
	enrolled("updates", autoE, "anja 0 day0", "bob 0 day0", "zed 0 day1")

	// Day 3: an import of updated and new rows: bob stays in by his city,
	// zed leaves, ann stays, bea is new and enters, amy matches nothing.
	phase(3)
	importCSV(typeA, "email,first_name,city,plan,score\n"+
		"bob@x.example,Bob,Augsburg,gold,10\n"+
		"zed@x.example,Zed,,,50\n"+
		"ann@x.example,Annika,,gold,\n"+
		"bea@x.example,anabel,,Gold,\n"+
		"amy@x.example,Amy,,gold,\n")
	expect("import of updates", segG, "andy", "ann", "anja", "bea", "cleo")
	expect("import of updates", segE, "anja", "bob")
	enrolled("import of updates", autoG, "andy 0 day1", "anja 0 day0", "ann 0 day0", "bea 0 day3", "cleo 0 day2")
	enrolled("import of updates", autoE, "anja 0 day0", "bob 0 day0", "zed 0 day1")

	// Day 4: the stepper sends the one mail: every enrollment is done.
	phase(4)
	for {
		pass, err := d.StepAutomations(ctx, postgres.Step{Now: at, Enrollments: 1000, BatchSize: 500, RunEvery: 30 * time.Second,
			NewToken: func() string { return "tok" }})
		if err != nil {
			t.Fatal(err)
		}
		if !pass.More {
			break
		}
	}
	enrolled("stepped", autoG, "andy 1 -", "anja 1 -", "ann 1 -", "bea 1 -", "cleo 1 -")
	enrolled("stepped", autoE, "anja 1 -", "bob 1 -", "zed 1 -")

	// Day 5: entering again after the series enrolls again, by an update
	// (zed), by leaving and coming back (ann), by a move into the type
	// (moved; anja out and back), by a delete and an add of the address
	// (andy: a new contact); bob, updated but a member throughout, is not.
	phase(5)
	update(typeA, "zed@x.example", "score", "91")
	update(typeA, "ann@x.example", "first_name", "Xena")
	update(typeA, "ann@x.example", "first_name", "ANNA")
	update(typeA, "bob@x.example", "first_name", "Robert")
	update(typeA, "moved@x.example")
	update(typeB, "anja@x.example")
	expect("moved out", segG, "andy", "ann", "bea", "cleo", "moved")
	update(typeA, "anja@x.example")
	if err := d.DeleteContacts(ctx, w.uid, []int64{idOf("andy@x.example")}); err != nil {
		t.Fatal(err)
	}
	add(typeA, "andy@x.example", "first_name", "Andy", "plan", "gold")
	expect("re-entries", segG, "andy", "ann", "anja", "bea", "cleo", "moved")
	expect("re-entries", segE, "anja", "bob", "zed")
	enrolled("re-entries", autoG, "andy(deleted) 1 -", "andy 0 day5", "anja 1 -", "anja 0 day5", "ann 1 -", "ann 0 day5",
		"bea 1 -", "cleo 1 -", "moved 0 day5")
	enrolled("re-entries", autoE, "anja 1 -", "anja 0 day5", "bob 1 -", "zed 1 -", "zed 0 day5")

	// Day 6: leaving and coming back while the new enrollments are
	// active enrolls nobody, by update or import.
	phase(6)
	update(typeA, "zed@x.example", "score", "2")
	update(typeA, "zed@x.example", "score", "92")
	importCSV(typeA, "email,first_name\nann@x.example,Olga\n")
	importCSV(typeA, "email,first_name\nann@x.example,anna\n")
	expect("again", segG, "andy", "ann", "anja", "bea", "cleo", "moved")
	expect("again", segE, "anja", "bob", "zed")
	enrolled("again", autoG, "andy(deleted) 1 -", "andy 0 day5", "anja 1 -", "anja 0 day5", "ann 1 -", "ann 0 day5",
		"bea 1 -", "cleo 1 -", "moved 0 day5")
	enrolled("again", autoE, "anja 1 -", "anja 0 day5", "bob 1 -", "zed 1 -", "zed 0 day5")
}
