package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// The count of a send's audience is the number of deliveries its
// dispatch inserts, for every rule: overlapping lists in any case, a
// segment's members and hand-stored addresses, exclude lists, global and
// group unsubscribes (another group's do not count), hard bounces,
// deleted contacts, and another account's records.
func TestCountAudienceIsTheExpansion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAudience(t, "audience")
	d, user, other, id, exec, typ := f.d, f.user, f.other, f.id, f.exec, f.typ
	a := typ(user, "A", "ann@x.example", "Bob@x.example", "carol@x.example", "dave@x.example", "erin@x.example",
		"frank@x.example", "gone@x.example", "olga@x.example")
	b := typ(user, "B", "bob@X.example", "gina@x.example")
	c := typ(user, "C", "Carol@x.example", "gina@x.example")
	theirs := typ(other, "T", "zed@x.example")
	exec("UPDATE contacts SET deleted_at = now() WHERE email = 'gone@x.example'")
	seg := id(`INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value)
		VALUES ($1, $2, 'S', '{}', '{}', '{}') RETURNING id`, user, a)
	exec("INSERT INTO segment_members (user_id, segment_id, contact_id) SELECT $1, $2, id FROM contacts WHERE email = 'ann@x.example'", user, seg)
	exec("INSERT INTO segment_recipients (user_id, segment_id, first_name, last_name, email) VALUES ($1, $2, 'H', 'H', 'hank@x.example')", user, seg)
	group := id(`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		VALUES ($1, gen_random_uuid()::text, 'News', 'News', 1) RETURNING id`, user)
	otherGroup := id(`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		VALUES ($1, gen_random_uuid()::text, 'Offers', 'Offers', 1) RETURNING id`, user)
	exec(`INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address)
		VALUES ($1, NULL, 'DAVE@x.example'), ($1, $2, 'erin@x.example'), ($1, $3, 'olga@x.example')`, user, group, otherGroup)
	exec("INSERT INTO bounces (user_id, email_lc) VALUES ($1, 'frank@x.example')", user)
	for _, acct := range []int64{user, other} { // the rows above went in by SQL, past the kept counts
		if err := d.Recount(ctx, acct); err != nil {
			t.Fatal(err)
		}
	}

	lists := []mail.ListRef{{Table: mail.ListContacts, ID: a}, {Table: mail.ListContacts, ID: b},
		{Table: mail.ListSegments, ID: seg}, {Table: mail.ListContacts, ID: theirs}}
	excluded := []mail.ListRef{{Table: mail.ListContacts, ID: c}}
	for _, tc := range []struct {
		group int64
		want  int64 // ann, bob, hank, olga (+ erin outside the group)
	}{{group, 4}, {otherGroup, 4}, {0, 5}} {
		n, err := d.CountAudience(ctx, user, lists, excluded, tc.group)
		if err != nil || n != tc.want {
			t.Fatalf("group %d: %d recipients (%v), want %d", tc.group, n, err, tc.want)
		}
	}
	if n, err := d.CountAudience(ctx, other, lists, nil, 0); err != nil || n != 1 {
		t.Fatalf("the other account counts %d of the lists (%v), want only its own 1", n, err)
	}

	q, err := d.CreateSingleSend(ctx, user, mail.SingleSendInput{TemplateID: 1, SenderID: 1, GroupID: group, Name: "n",
		Subject: "s", Preheader: "p", Recipients: lists[:3], Excluded: excluded})
	if err != nil {
		t.Fatal(err)
	}
	counted, err := d.CountAudience(ctx, user, lists[:3], excluded, group)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.DispatchSend(ctx, q.ID, q.Version, 500, 0)
	if err != nil || !out.Started {
		t.Fatalf("dispatch: %+v %v", out, err)
	}
	var emails string
	if err := d.Pool.QueryRow(ctx, "SELECT string_agg(lower(email), ' ' ORDER BY id) FROM deliveries WHERE send_id = $1", q.ID).Scan(&emails); err != nil {
		t.Fatal(err)
	}
	if out.Triggered != counted || emails != "ann@x.example bob@x.example hank@x.example olga@x.example" {
		t.Fatalf("dispatch made %d deliveries (%s), the count said %d", out.Triggered, emails, counted)
	}
}

// The largest contact type of a selection is counted from its kept length
// less its removed addresses (CountListAudience), the other lists as
// their rows not in it (CountAudienceBeyondList), or the expansion's rows
// when the others hold more: the expansion's count for one list and for
// selections of several, with every exclusion and group, and nothing of
// another account's.
func TestCountAudienceSplitIsTheExpansion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAudience(t, "list-audience")
	d, user, other, id, typ := f.d, f.user, f.other, f.id, f.typ
	a := typ(user, "A", "ann@x.example", "Bob@x.example", "carol@x.example", "dave@x.example", "erin@x.example",
		"frank@x.example", "gone@x.example", "olga@x.example", "hank@x.example", "ivy@x.example")
	b := typ(user, "B", "bob@X.example", "gina@x.example", "GONE@x.example")
	empty := typ(user, "Empty")
	theirs := typ(other, "T", "ann@x.example", "zed@x.example")
	id("UPDATE contacts SET deleted_at = now() WHERE email = 'gone@x.example' RETURNING 1")
	seg := id(`INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value)
		VALUES ($1, $2, 'S', '{}', '{}', '{}') RETURNING id`, user, a)
	id("INSERT INTO segment_members (user_id, segment_id, contact_id) SELECT $1, $2, id FROM contacts WHERE email = 'ivy@x.example' RETURNING 1", user, seg)
	id("INSERT INTO segment_recipients (user_id, segment_id, first_name, last_name, email) VALUES ($1, $2, 'H', 'H', 'HANK@x.example') RETURNING 1", user, seg)
	// Stored by hand too: a member's address (ivy, once in the audience), a
	// globally unsubscribed one (dave) and one of no list (zoe).
	id(`INSERT INTO segment_recipients (user_id, segment_id, first_name, last_name, email)
		VALUES ($1, $2, 'I', 'I', 'IVY@x.example'), ($1, $2, 'D', 'D', 'dave@x.example'), ($1, $2, 'Z', 'Z', 'zoe@x.example') RETURNING 1`, user, seg)
	// Members only: beside its type's list it adds nobody.
	only := id(`INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value)
		VALUES ($1, $2, 'M', '{}', '{}', '{}') RETURNING id`, user, a)
	id(`INSERT INTO segment_members (user_id, segment_id, contact_id) SELECT $1, $2, id FROM contacts
		WHERE contact_type_id = $3 AND email IN ('ann@x.example', 'carol@x.example', 'erin@x.example', 'ivy@x.example') RETURNING 1`, user, only, a)
	onlyB := id(`INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value)
		VALUES ($1, $2, 'MB', '{}', '{}', '{}') RETURNING id`, user, b)
	id(`INSERT INTO segment_members (user_id, segment_id, contact_id) SELECT $1, $2, id FROM contacts
		WHERE contact_type_id = $3 AND email IN ('bob@X.example', 'gina@x.example') RETURNING 1`, user, onlyB, b)
	group := id(`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		VALUES ($1, gen_random_uuid()::text, 'News', 'News', 1) RETURNING id`, user)
	otherGroup := id(`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		VALUES ($1, gen_random_uuid()::text, 'Offers', 'Offers', 1) RETURNING id`, user)
	id(`INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address)
		VALUES ($1, NULL, 'DAVE@x.example'), ($1, $2, 'erin@x.example'), ($1, $3, 'olga@x.example')
		RETURNING 1`, user, group, otherGroup)
	id("INSERT INTO bounces (user_id, email_lc) VALUES ($1, 'frank@x.example'), ($1, 'carol@x.example') RETURNING 1", user)
	id("INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address) VALUES ($1, NULL, 'ann@x.example') RETURNING 1", other)
	for _, acct := range []int64{user, other} {
		if err := d.Recount(ctx, acct); err != nil {
			t.Fatal(err)
		}
	}

	ref := func(table string, id int64) mail.ListRef { return mail.ListRef{Table: table, ID: id} }
	exclusions := [][]mail.ListRef{nil, {ref(mail.ListContacts, b)}, {ref(mail.ListSegments, seg)},
		{ref(mail.ListContacts, b), ref(mail.ListSegments, seg)}, {ref(mail.ListContacts, theirs)}, {ref(mail.ListContacts, a)}}
	c := func(id int64) mail.ListRef { return ref(mail.ListContacts, id) }
	s, m, mb := ref(mail.ListSegments, seg), ref(mail.ListSegments, only), ref(mail.ListSegments, onlyB)
	selections := [][]mail.ListRef{{c(a)}, {c(b)}, {c(empty)}, {c(theirs)},
		{c(a), c(b)}, {c(b), c(a)}, {c(a), s}, {c(b), s}, {s}, {c(a), c(b), s}, {c(empty), s}, {c(empty), c(b)},
		{c(a), c(theirs)}, {c(theirs), c(b)}, {c(a), c(a)}, {s, c(theirs)},
		{m}, {c(a), m}, {m, c(a), s}, {c(b), m}, {c(a), c(b), m}, {c(empty), m}, {m, s}, {c(a), mb}, {c(a), m, mb}, {c(b), mb}}
	split := func(lists []mail.ListRef) (types, segs []int64) {
		types, segs = []int64{}, []int64{}
		for _, l := range lists {
			if l.Table == mail.ListContacts {
				types = append(types, l.ID)
			} else {
				segs = append(segs, l.ID)
			}
		}
		return types, segs
	}
	checked := 0
	check := func(when string) {
		t.Helper()
		for _, acct := range []int64{user, other} {
			for _, lists := range selections {
				for _, excluded := range exclusions {
					for _, g := range []int64{0, group, otherGroup} {
						got, err := d.CountAudience(ctx, acct, lists, excluded, g)
						if err != nil {
							t.Fatal(err)
						}
						types, segs := split(lists)
						exTypes, exSegs := split(excluded)
						want := id("SELECT count(*) FROM send_audience($1, $2, $3, $4, $5, $6)", acct, types, segs, g, exTypes, exSegs)
						if got != want {
							t.Fatalf("%s: account %d, lists %v less %v, group %d: counted %d, the expansion has %d", when, acct, lists, excluded, g, got, want)
						}
						if want > 0 {
							checked++
						}
					}
				}
			}
		}
	}
	check("suppressions added after the contacts")
	// ann bob carol dave erin frank hank ivy olga of A less the bounces
	// (carol, frank) and the global unsubscribe (dave): 6, and erin too in
	// the News group.
	if n, _ := d.CountAudience(ctx, user, []mail.ListRef{ref(mail.ListContacts, a)}, nil, group); n != 5 || checked < 150 {
		t.Fatalf("A in the News group: %d, want 5; %d non-empty selections checked", n, checked)
	}

	// The suppressed contacts follow every change (suppressed_contacts'
	// triggers): a contact added to a bounced address and to the segment,
	// a bounced member deleted (it leaves its segments), an address
	// changed to an unsubscribed one and one away from it, a bounce
	// removed, an unsubscribed contact moved to another type, an
	// unsubscribe moved to another group, and a contact removed outright.
	id("INSERT INTO bounces (user_id, email_lc) VALUES ($1, 'kim@x.example') RETURNING 1", user)
	kim := id("INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, 'Kim@x.example') RETURNING id", user, a)
	id("INSERT INTO segment_members (user_id, segment_id, contact_id) VALUES ($1, $2, $3), ($1, $4, $3) RETURNING 1", user, seg, kim, only)
	id("UPDATE contacts SET deleted_at = now() WHERE user_id = $1 AND email = 'carol@x.example' RETURNING 1", user)
	f.exec("DELETE FROM segment_members WHERE contact_id IN (SELECT id FROM contacts WHERE user_id = $1 AND email = 'carol@x.example')", user)
	id("UPDATE contacts SET email = 'OLGA@x.example' WHERE user_id = $1 AND email = 'gina@x.example' RETURNING 1", user)
	id("UPDATE contacts SET email = 'erin.new@x.example' WHERE user_id = $1 AND email = 'erin@x.example' RETURNING 1", user)
	id("DELETE FROM bounces WHERE user_id = $1 AND email_lc = 'frank@x.example' RETURNING 1", user)
	id("UPDATE contacts SET contact_type_id = $2 WHERE user_id = $1 AND email = 'dave@x.example' AND contact_type_id = $3 RETURNING 1", user, b, a)
	id("UPDATE unsubscribes SET unsubscribe_groups_id = $2 WHERE user_id = $1 AND email_lc = 'olga@x.example' RETURNING 1", user, group)
	// Twenty contacts added in one statement (planned for its size), two
	// of them suppressed.
	id("INSERT INTO bounces (user_id, email_lc) VALUES ($1, 'bulk3@x.example') RETURNING 1", user)
	id("INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address) VALUES ($1, NULL, 'BULK7@x.example') RETURNING 1", user)
	f.exec("INSERT INTO contacts (user_id, contact_type_id, email) SELECT $1, $2, 'bulk' || i || '@x.example' FROM generate_series(1, 20) i", user, a)
	// A bounced contact removed outright (the service soft-deletes; an
	// operator may not).
	id("INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, 'kim@x.example') RETURNING 1", user, b)
	id("DELETE FROM contacts WHERE user_id = $1 AND contact_type_id = $2 AND email = 'kim@x.example' RETURNING 1", user, b)
	for _, acct := range []int64{user, other} {
		if err := d.Recount(ctx, acct); err != nil {
			t.Fatal(err)
		}
	}
	check("contacts and suppressions changed after")
	// A: ann bob erin.new frank hank ivy kim olga, less kim (bounced) and
	// olga (now in News): 6; and bulk1-20 less bulk3 and bulk7: 18.
	if n, _ := d.CountAudience(ctx, user, []mail.ListRef{ref(mail.ListContacts, a)}, nil, group); n != 6+18 {
		t.Fatalf("A in the News group after the changes: %d, want 24", n)
	}
}

// audience is two accounts in the package's database, and helpers that
// write their rows by SQL (past the kept counts: Recount after).
type audience struct {
	d           *postgres.DB
	user, other int64
	id          func(q string, args ...any) int64 // runs q, answers the int it returns
	exec        func(q string, args ...any)
	typ         func(acct int64, name string, emails ...string) int64 // a contact type with these contacts
}

func newAudience(t *testing.T, name string) *audience {
	t.Helper()
	ctx := context.Background()
	f := &audience{d: testdb.New(t)}
	var err error
	if f.user, _, err = f.d.CreateAccount(ctx, name); err != nil {
		t.Fatal(err)
	}
	if f.other, _, err = f.d.CreateAccount(ctx, name+"-other"); err != nil {
		t.Fatal(err)
	}
	f.id = func(q string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := f.d.Pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	f.exec = func(q string, args ...any) {
		t.Helper()
		if _, err := f.d.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	f.typ = func(acct int64, name string, emails ...string) int64 {
		t.Helper()
		ty := f.id("INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id", acct, name)
		for _, e := range emails {
			f.exec("INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, $3)", acct, ty, e)
		}
		return ty
	}
	return f
}

// A large send expanded in two steps gets exactly the deliveries of one
// step, in address order: the first step the addresses up to the one the
// step places into its largest list, the rest after. Until the rest is in
// the send cannot complete, even with every first-step row recorded; the
// rest's count is added, single_send.started is recorded once with the
// whole count, and expanding again does nothing.
func TestDispatchInTwoSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAudience(t, "two-steps")
	d, user, id, exec := f.d, f.user, f.id, f.exec
	var a, b []string
	for i := range 60 {
		a = append(a, fmt.Sprintf("a%02d@x.example", i))
		if i%3 == 0 {
			b = append(b, fmt.Sprintf("A%02d@x.example", i), fmt.Sprintf("b%02d@x.example", i))
		}
	}
	ta, tb := f.typ(user, "A", a...), f.typ(user, "B", b...)
	exec("INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address) VALUES ($1, NULL, 'a05@x.example'), ($1, NULL, 'b45@x.example')", user)
	if err := d.Recount(ctx, user); err != nil {
		t.Fatal(err)
	}
	lists := []mail.ListRef{{Table: mail.ListContacts, ID: ta}, {Table: mail.ListContacts, ID: tb}}
	send := func() mail.Queued {
		q, err := d.CreateSingleSend(ctx, user, mail.SingleSendInput{TemplateID: 1, SenderID: 1, Name: "n", Subject: "s", Preheader: "p",
			Recipients: lists})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	emails := func(sendID int64) string {
		var s string
		if err := d.Pool.QueryRow(ctx, "SELECT string_agg(lower(email), ' ' ORDER BY id) FROM deliveries WHERE send_id = $1", sendID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	whole := send()
	one, err := d.DispatchSend(ctx, whole.ID, whole.Version, 10, 0)
	if err != nil || one.Expanding || one.Triggered != 78 {
		t.Fatalf("one step: %+v %v", one, err)
	}

	q := send()
	head, err := d.DispatchSend(ctx, q.ID, q.Version, 10, 20) // A has 60 > 2*20
	if err != nil || !head.Started || !head.Expanding || head.Completed {
		t.Fatalf("first step: %+v %v", head, err)
	}
	// Up to a20 (the 21st of A): a00-a20 less a05; B's A00-A18 are the
	// same addresses (once), its b's come after.
	if head.Triggered != 20 {
		t.Errorf("first step inserted %d, want 20", head.Triggered)
	}
	exec("UPDATE deliveries SET status = 2 WHERE send_id = $1", q.ID)
	exec("UPDATE single_sends SET remaining = 0 WHERE id = $1", q.ID)
	if done, err := d.CompleteSend(ctx, q.ID); err != nil || done {
		t.Fatalf("completed before its audience was whole: %v %v", done, err)
	}
	exec("UPDATE deliveries SET status = 0 WHERE send_id = $1", q.ID)
	exec("UPDATE single_sends SET remaining = triggered WHERE id = $1", q.ID)
	rest, err := d.ExpandRest(ctx, q.ID)
	if err != nil || !rest.Started || rest.Triggered != 78-20 || rest.From <= head.Last || rest.First != head.First {
		t.Fatalf("rest: %+v %v (first step %+v)", rest, err, head)
	}
	if got, want := emails(q.ID), emails(whole.ID); got != want {
		t.Errorf("two steps made\n%s\none step\n%s", got, want)
	}
	if n := id("SELECT triggered FROM single_sends WHERE id = $1", q.ID); n != 78 {
		t.Errorf("triggered %d, want 78", n)
	}
	if n := id("SELECT count(*) FROM events WHERE subject_id = $1 AND kind = 'single_send.started' AND payload->>'triggered' = '78'", q.ID); n != 1 {
		t.Errorf("%d started events with the whole count", n)
	}
	if again, err := d.ExpandRest(ctx, q.ID); err != nil || again.Started {
		t.Errorf("expanded again: %+v %v", again, err)
	}
	if ids, err := d.SendsToExpand(ctx); err != nil || slices.Contains(ids, q.ID) {
		t.Errorf("still to expand: %v %v", ids, err)
	}
}

// A contact whose address changes between a large send's two steps gets
// one mail: the rest leaves out the contacts and the addresses the first
// step inserted, and takes a contact the first step did not have, whatever
// side of the boundary its address is now on. Dropped events are told at
// dispatch, for the whole audience, once.
func TestDispatchInTwoStepsAddressChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAudience(t, "two-steps-moved")
	d, user, id, exec := f.d, f.user, f.id, f.exec
	var a []string
	for i := range 60 {
		a = append(a, fmt.Sprintf("a%02d@x.example", i))
	}
	ta := f.typ(user, "A", a...)
	if err := d.Recount(ctx, user); err != nil {
		t.Fatal(err)
	}
	q, err := d.CreateSingleSend(ctx, user, mail.SingleSendInput{TemplateID: 1, SenderID: 1, Name: "n", Subject: "s", Preheader: "p",
		Recipients: []mail.ListRef{{Table: mail.ListContacts, ID: ta}}})
	if err != nil {
		t.Fatal(err)
	}
	head, err := d.DispatchSend(ctx, q.ID, q.Version, 10, 20)
	if err != nil || !head.Expanding || head.Triggered != 21 { // a00-a20
		t.Fatalf("first step: %+v %v", head, err)
	}
	// a01 (mailed in the first step) moves past the boundary; a50 (not
	// yet) moves before it; a new contact comes before it too.
	exec("UPDATE contacts SET email = 'z01@x.example' WHERE email = 'a01@x.example' AND user_id = $1", user)
	exec("UPDATE contacts SET email = 'a00z@x.example' WHERE email = 'a50@x.example' AND user_id = $1", user)
	exec("INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, 'a00new@x.example')", user, ta)
	if _, err := d.ExpandRest(ctx, q.ID); err != nil {
		t.Fatal(err)
	}
	if n := id("SELECT count(*) FROM deliveries WHERE send_id = $1", q.ID); n != 61 {
		t.Errorf("%d deliveries, want 61 (60 contacts and the new one)", n)
	}
	if n := id("SELECT count(*) FROM (SELECT contact_id FROM deliveries WHERE send_id = $1 GROUP BY 1 HAVING count(*) > 1) x", q.ID); n != 0 {
		t.Errorf("%d contacts with two deliveries", n)
	}
	for _, e := range []string{"a01@x.example", "a00z@x.example", "a00new@x.example"} {
		if n := id("SELECT count(*) FROM deliveries WHERE send_id = $1 AND email = $2", q.ID, e); n != 1 {
			t.Errorf("%s: %d deliveries, want 1", e, n)
		}
	}
	if n := id("SELECT count(*) FROM deliveries WHERE send_id = $1 AND email = 'z01@x.example'", q.ID); n != 0 {
		t.Errorf("z01 (a01 moved) mailed again: %d", n)
	}
	if n := id("SELECT triggered FROM single_sends WHERE id = $1", q.ID); n != 61 {
		t.Errorf("triggered %d, want 61", n)
	}
}
