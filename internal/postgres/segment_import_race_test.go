package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

// An import keeps in import_changed only the columns its type's segments
// read when it begins to merge. A segment saved after that which reads
// another column (city) is still refreshed for the imported contacts: the
// refresh then finds them by id. Not parallel: the hook is the package's.
func TestImportRefreshesASegmentSavedDuringIt(t *testing.T) {
	ctx := context.Background()
	f := newListFixture(t)
	d, uid, typ := f.d, f.uid, f.typeB
	form := mail.SegmentForm{ContactTypeID: fmt.Sprint(typ), Name: "a", Fields: []string{"2"},
		Operators: []string{mail.OpStartsWith}, Values: [][]string{{"a"}}}
	in, err := mail.ParseSegment(form, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateSegment(ctx, uid, in); err != nil {
		t.Fatal(err)
	}
	// The segment on city goes straight into the table, as a save that
	// commits during the merge would (its rebuild waits for the import).
	var city int64
	postgres.OnImportColumnsRead(func() {
		if err := d.Pool.QueryRow(ctx, `INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value)
			VALUES ($1, $2, 'berlin', '{7}', '{is}', '{Berlin}') RETURNING id`, uid, typ).Scan(&city); err != nil {
			t.Error(err)
		}
	})
	defer postgres.OnImportColumnsRead(nil)

	var b strings.Builder
	b.WriteString("email,first_name,city\n")
	for i := range 40 {
		fmt.Fprintf(&b, "u%d@example.com,%s,%s\n", i, []string{"ann", "bob"}[i%2], []string{"Berlin", "Paris", "berlin"}[i%3])
	}
	f.importCSV(t, typ, b.String())
	var members, want, kept int
	if err := d.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM segment_members m JOIN contacts c ON c.id = m.contact_id WHERE m.segment_id = $1 AND lower(c.city) = 'berlin'),
		(SELECT count(*) FROM contacts WHERE contact_type_id = $2 AND lower(city) = 'berlin'),
		(SELECT COALESCE(sum(n), 0) FROM list_counts WHERE kind = 'segment' AND key = $1)`, city, typ).Scan(&members, &want, &kept); err != nil {
		t.Fatal(err)
	}
	if want != 27 || members != want || kept != want {
		t.Fatalf("berlin segment: %d members, %d kept, %d contacts in Berlin (want 27)", members, kept, want)
	}
}

// A single writer adds two of an import's addresses to its (empty) type
// during the merge: the import's plain insert fails, and insertRacedSQL
// updates those two with the file's rows, so the import both inserted and
// updated. The raced contacts leave a segment they were in (an evaluated
// one) and join a guarded one; memberships and kept counts equal a full
// evaluation. Not parallel: the hook is the package's.
func TestImportRefreshAfterARacedInsert(t *testing.T) {
	ctx := context.Background()
	f := newListFixture(t)
	d, uid, typ := f.d, f.uid, f.typeB
	mk := func(f mail.SegmentForm) int64 {
		f.ContactTypeID, f.Name = fmt.Sprint(typ), "s"
		in, err := mail.ParseSegment(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := d.CreateSegment(ctx, uid, in)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	segG := mk(mail.SegmentForm{Fields: []string{"2"}, Operators: []string{mail.OpStartsWith}, Values: [][]string{{"a"}}})
	segE := mk(mail.SegmentForm{Fields: []string{"7", "2"}, Operators: []string{mail.OpContains, mail.OpIs}, Values: [][]string{{"erl"}, {"zed"}}, QueryType: "or"})
	postgres.OnImportColumnsRead(func() {
		zed, rome := "zed", "Rome"
		for _, e := range []string{"u0@example.com", "u1@example.com"} {
			if _, _, err := d.AddContact(ctx, uid, mail.ContactInput{ContactTypeID: typ, Email: mail.Email(e), FirstName: &zed, City: &rome, Custom: map[string]any{}}); err != nil {
				t.Error(err)
			}
		}
	})
	defer postgres.OnImportColumnsRead(nil)
	var b strings.Builder
	b.WriteString("email,first_name,city\n")
	for i := range 10 {
		fmt.Fprintf(&b, "u%d@example.com,%s,%s\n", i, []string{"ann", "bob"}[i%2], []string{"Berlin", "Paris"}[i%2])
	}
	res := f.importCSV(t, typ, b.String())
	if res.Added != 8 || res.Updated != 2 {
		t.Fatalf("import: %+v, want 8 added and 2 updated", res)
	}
	for _, s := range []struct {
		id   int64
		want string
	}{{segG, "lower(c.first_name) LIKE 'a%'"}, {segE, "strpos(lower(c.city),'erl')>0 OR lower(c.first_name)='zed'"}} {
		var members, want, kept int
		if err := d.Pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM segment_members m WHERE m.segment_id = $1),
			(SELECT count(*) FROM contacts c WHERE contact_type_id = $2 AND deleted_at IS NULL AND (`+s.want+`)),
			(SELECT COALESCE(sum(n), 0) FROM list_counts WHERE kind = 'segment' AND key = $1)`, s.id, typ).Scan(&members, &want, &kept); err != nil {
			t.Fatal(err)
		}
		if members != want || kept != want || want == 0 {
			t.Errorf("segment %d: members %d want %d kept %d", s.id, members, want, kept)
		}
	}
}

// A segment saved while an import merges into its type waits for the
// import by looking at the import's own lock, not by asking for the
// type's writer lock again every 300 ms (each try held the writers
// arriving in its 200 ms wait): a transaction stands for the import here,
// holding both locks as Commit does. After the rebuild's first
// try, no request for the writer lock waits while the import runs.
func TestRebuildWaitsForAnImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	d, typ := f.d, f.typeB
	f.importCSV(t, typ, "email,first_name\nann@example.com,ann\nbob@example.com,bob\n")

	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, ($2 % 2147483647)::int),
		pg_advisory_xact_lock_shared(1954115685, ($2 % 2147483647)::int)`, postgres.ImportLockSpace, typ); err != nil {
		t.Fatal(err)
	}
	saved := make(chan error, 1)
	go func() {
		in, err := mail.ParseSegment(mail.SegmentForm{ContactTypeID: fmt.Sprint(typ), Name: "a", Fields: []string{"2"},
			Operators: []string{mail.OpStartsWith}, Values: [][]string{{"a"}}}, nil)
		if err == nil {
			_, err = d.CreateSegment(ctx, f.uid, in)
		}
		saved <- err
	}()
	waiting := func() (n int) {
		if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND classid = 1954115685::bigint::oid AND objid = ($1 % 2147483647)::oid`, typ).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Over 2 s of the import, the writer lock is asked for once: the
	// rebuild's first try (its 200 ms wait), whenever it comes.
	tries, was := 0, false
	for range 200 {
		now := waiting() > 0
		if now && !was {
			tries++
		}
		was = now
		time.Sleep(10 * time.Millisecond)
	}
	if tries != 1 {
		t.Fatalf("the type's writer lock was asked for %d times during the import, want once", tries)
	}
	tx.Rollback(ctx)
	select {
	case err := <-saved:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the save did not end after the import")
	}
	var members int
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM segment_members m JOIN segments s ON s.id = m.segment_id
		WHERE s.contact_type_id = $1`, typ).Scan(&members); err != nil || members != 1 {
		t.Fatalf("%d members, %v", members, err)
	}
}
