package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

// A segment "created_at is within the last 1 days" loses its members as
// they age out, with no write to them: the minute's ResumeSegmentRebuilds
// rebuilds a segment that compares with the clock once its last rebuild
// began an hour ago, and leaves other segments alone.
//
// Not parallel: ResumeSegmentRebuilds resumes every pending rebuild of the
// package's database, and one resumed beside TestRebuildWaitsForAnImport's
// own asked for that type's lock a second time (its test failed so under
// load). Run first, it sees the other tests' segments not yet made.
func TestClockSegmentsFollowTheClock(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	uid, _, err := d.CreateAccount(ctx, "clock")
	if err != nil {
		t.Fatal(err)
	}
	var typeID int64
	if err := d.Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'T') RETURNING id", uid).Scan(&typeID); err != nil {
		t.Fatal(err)
	}
	segment := func(field, op, value string) int64 {
		in, err := mail.ParseSegment(mail.SegmentForm{ContactTypeID: fmt.Sprint(typeID), Name: op,
			Fields: []string{field}, Operators: []string{op}, Values: [][]string{{value}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := d.CreateSegment(ctx, uid, in)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	recent := segment("0", mail.OpWithinLastDay, "1")
	named := segment("2", mail.OpStartsWith, "a")
	var ids []int64
	for _, e := range []string{"a1@example.com", "a2@example.com"} {
		name := "ann"
		id, _, err := d.AddContact(ctx, uid, mail.ContactInput{ContactTypeID: typeID, Email: mail.Email(e), FirstName: &name})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	check := func(seg int64, want ...int64) {
		t.Helper()
		got := members(t, d, "SELECT contact_id FROM segment_members WHERE segment_id = $1 ORDER BY contact_id", seg)
		var kept int64
		if err := d.Pool.QueryRow(ctx, "SELECT COALESCE(sum(n), 0) FROM list_counts WHERE kind = 'segment' AND key = $1", seg).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = []int64{}
		}
		if !slices.Equal(got, want) || kept != int64(len(want)) {
			t.Fatalf("segment %d: members %v (count %d), want %v", seg, got, kept, want)
		}
	}
	gen := func(seg int64) (g int64) {
		t.Helper()
		if err := d.Pool.QueryRow(ctx, "SELECT rebuild_gen FROM segments WHERE id = $1", seg).Scan(&g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	age := func(id int64) {
		t.Helper()
		if _, err := d.Pool.Exec(ctx, "UPDATE contacts SET created_at = now() - interval '2 days' WHERE id = $1", id); err != nil {
			t.Fatal(err)
		}
	}
	check(recent, ids...)
	check(named, ids...)
	namedGen := gen(named)

	// Never rebuilt by the clock yet: the first pass rebuilds it.
	age(ids[0])
	if err := d.ResumeSegmentRebuilds(ctx); err != nil {
		t.Fatal(err)
	}
	check(recent, ids[1])

	// Rebuilt a moment ago: the next pass waits for the hour.
	age(ids[1])
	if err := d.ResumeSegmentRebuilds(ctx); err != nil {
		t.Fatal(err)
	}
	check(recent, ids[1])
	if _, err := d.Pool.Exec(ctx, "UPDATE segments SET rebuilt_at = now() - interval '61 minutes' WHERE id = $1", recent); err != nil {
		t.Fatal(err)
	}
	if err := d.ResumeSegmentRebuilds(ctx); err != nil {
		t.Fatal(err)
	}
	check(recent)
	check(named, ids...)
	if g := gen(named); g != namedGen {
		t.Errorf("a segment with no clock condition was rebuilt: generation %d, was %d", g, namedGen)
	}
}
