package postgres_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"golang.org/x/sync/errgroup"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/migrations"
)

// trueCountsSQL counts an account's lists from their rows, as the kept
// counts must say.
const trueCountsSQL = `
SELECT 'contact_type' AS kind, contact_type_id AS key, count(*) AS n
FROM contacts WHERE user_id = $1 AND deleted_at IS NULL GROUP BY contact_type_id
UNION ALL
SELECT 'segment', s.id, count(*)
FROM segment_entries r JOIN segments s ON s.id = r.segment_id WHERE s.user_id = $1 GROUP BY s.id
UNION ALL
SELECT 'unsubscribes', COALESCE(unsubscribe_groups_id, 0), count(*)
FROM unsubscribes WHERE user_id = $1 GROUP BY COALESCE(unsubscribe_groups_id, 0)
UNION ALL
SELECT 'notification', 0, count(*) FROM notification_recipients WHERE user_id = $1 HAVING count(*) > 0`

// checkCounts fails the test unless every kept count of the account equals
// its list's length.
func checkCounts(t testing.TB, d *postgres.DB, uid int64, step string) {
	t.Helper()
	rows, err := d.Pool.Query(context.Background(), `
		WITH truth AS (`+trueCountsSQL+`),
		kept AS (SELECT kind, key, sum(n) AS n FROM list_counts WHERE user_id = $1 GROUP BY kind, key)
		SELECT kind, key, COALESCE(truth.n, 0), COALESCE(kept.n, 0)
		FROM truth FULL JOIN kept USING (kind, key)
		WHERE COALESCE(truth.n, 0) <> COALESCE(kept.n, 0)
		ORDER BY 1, 2`, uid)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var bad []string
	for rows.Next() {
		var kind string
		var key, truth, kept int64
		if err := rows.Scan(&kind, &key, &truth, &kept); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, fmt.Sprintf("%s %d: %d rows, count says %d", kind, key, truth, kept))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("after %s:\n%s", step, strings.Join(bad, "\n"))
	}
}

// listed reads the counts the responses show: contacts_count of each type,
// segment_emails_count, the contact list's total.
func (f *listFixture) listed(t *testing.T) (types map[int64]int64, segment, total int64) {
	t.Helper()
	ctx := context.Background()
	ts, _, err := f.d.ContactTypes(ctx, f.uid, nil)
	if err != nil {
		t.Fatal(err)
	}
	types = map[int64]int64{}
	for _, ct := range ts {
		types[ct.ID] = ct.Contacts
	}
	segs, _, err := f.d.Segments(ctx, f.uid, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		if s.ID == f.segment {
			segment = s.Recipients
		}
	}
	total, err = f.d.ListContacts(ctx, f.uid, &mail.Page{Number: 1, Size: 1}, func(*postgres.Contact) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return types, segment, total
}

// Every kind of write keeps every count equal to its list's length, and
// the lists show those counts.
func TestCountsFollowEveryWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	d, uid := f.d, f.uid
	check := func(step string) { t.Helper(); checkCounts(t, d, uid, step) }
	check("setup")

	a1 := f.add(t, f.typeA, "a1@example.com", 10)
	a2 := f.add(t, f.typeA, "a2@example.com", 90)
	a3 := f.add(t, f.typeA, "a3@example.com", 20)
	f.add(t, f.typeA, "A1@example.com", 30) // an update: no new contact
	b1 := f.add(t, f.typeB, "b1@example.com", 10)
	check("adds")
	if types, segment, total := f.listed(t); types[f.typeA] != 3 || types[f.typeB] != 1 || segment != 2 || total != 4 {
		t.Fatalf("after adds: types %v, segment %d, total %d", types, segment, total)
	}

	// Updates: in place (leaving the segment), then moving to the other type.
	if err := d.UpdateContact(ctx, uid, a3, f.contact(f.typeA, "a3@example.com", 70)); err != nil {
		t.Fatal(err)
	}
	check("update in place")
	if err := d.UpdateContact(ctx, uid, a1, f.contact(f.typeB, "a1@example.com", 5)); err != nil {
		t.Fatal(err)
	}
	check("update moving types")
	if types, segment, _ := f.listed(t); types[f.typeA] != 2 || types[f.typeB] != 2 || segment != 0 {
		t.Fatalf("after moves: types %v, segment %d", types, segment)
	}
	// Back, joining the segment again.
	if err := d.UpdateContact(ctx, uid, a1, f.contact(f.typeA, "a1@example.com", 5)); err != nil {
		t.Fatal(err)
	}
	check("update moving back")

	// An import: two new addresses, one existing, one repeated, one skipped.
	res := f.importCSV(t, f.typeA, "email,score\nn1@example.com,1\nn2@example.com,99\na2@example.com,3\nn1@example.com,2\nnot-an-address,4\n")
	if res.Added != 2 || res.Updated != 1 {
		t.Fatalf("import: %+v", res)
	}
	check("import")

	// Hand-stored segment recipients: a new one, the same again, deleted.
	for range 2 {
		if err := d.StoreSegmentRecipient(ctx, uid, mail.SegmentRecipientInput{SegmentID: f.segment, Email: "hand@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	check("store segment recipient")
	var handID int64
	if err := d.Pool.QueryRow(ctx, "SELECT id FROM segment_recipients WHERE segment_id = $1", f.segment).Scan(&handID); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteSegmentRecipient(ctx, uid, handID); err != nil {
		t.Fatal(err)
	}
	check("delete segment recipient")
	if err := d.DeleteSegmentRecipient(ctx, uid, handID); mail.ErrorCode(err) != mail.ENOTFOUND {
		t.Fatalf("second delete: %v", err)
	}

	// Deletes: one, then all or nothing, then a bulk across both types.
	if err := d.DeleteContacts(ctx, uid, []int64{a2}); err != nil {
		t.Fatal(err)
	}
	check("delete")
	if err := d.DeleteContacts(ctx, uid, []int64{a1, b1, a2}); mail.ErrorCode(err) != mail.ENOTFOUND {
		t.Fatalf("bulk delete with a deleted id: %v", err)
	}
	check("refused bulk delete")
	if err := d.DeleteContacts(ctx, uid, []int64{a1, b1, a1}); err != nil {
		t.Fatal(err)
	}
	check("bulk delete")

	// Segment rebuilds: an update, a custom field delete (values gone: no
	// score is below anything), then a segment delete.
	f.add(t, f.typeA, "c1@example.com", 60)
	if err := d.UpdateSegment(ctx, uid, f.segment, f.segmentInput(t, f.typeA, "80")); err != nil {
		t.Fatal(err)
	}
	check("segment update")
	other, err := d.CreateSegment(ctx, uid, f.segmentInput(t, f.typeB, "80"))
	if err != nil {
		t.Fatal(err)
	}
	f.add(t, f.typeB, "b2@example.com", 1)
	check("segment create")
	if err := d.DeleteCustomField(ctx, uid, f.field.ID); err != nil {
		t.Fatal(err)
	}
	check("custom field delete")
	if err := d.StoreSegmentRecipient(ctx, uid, mail.SegmentRecipientInput{SegmentID: other, Email: "hand@example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteSegment(ctx, uid, other); err != nil {
		t.Fatal(err)
	}
	check("segment delete")

	// A type delete takes its contacts and their memberships.
	f.field.ID, err = d.CreateCustomField(ctx, uid, f.field)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UpdateSegment(ctx, uid, f.segment, f.segmentInput(t, f.typeA, "80")); err != nil {
		t.Fatal(err)
	}
	f.add(t, f.typeA, "d1@example.com", 1)
	check("before type delete")
	if err := d.DeleteContactType(ctx, uid, f.typeA); err != nil {
		t.Fatal(err)
	}
	check("type delete")
	if _, segment, total := f.listed(t); segment != 0 || total != 1 {
		t.Fatalf("after type delete: segment %d, total %d", segment, total)
	}

	// Unsubscribes: global and group adds (repeats and known addresses
	// count once), then deletes, refused and done.
	group, err := d.CreateUnsubscribeGroup(ctx, uid, mail.UnsubscribeGroupInput{Name: "g", Description: "g"})
	if err != nil {
		t.Fatal(err)
	}
	emails := []mail.Email{"u1@example.com", "u2@example.com", "U1@example.com"}
	if _, err := d.Unsubscribe(ctx, uid, nil, emails); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Unsubscribe(ctx, uid, nil, emails); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Unsubscribe(ctx, uid, &group, emails[:1]); err != nil {
		t.Fatal(err)
	}
	check("unsubscribes")
	var ids []int64
	rows, _ := d.Pool.Query(ctx, "SELECT id FROM unsubscribes WHERE user_id = $1 ORDER BY unsubscribe_groups_id NULLS FIRST, id", uid)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if rows.Err() != nil || len(ids) != 3 {
		t.Fatalf("unsubscribes %v %v", ids, rows.Err())
	}
	if err := d.DeleteUnsubscribes(ctx, uid, true, ids); mail.ErrorCode(err) != mail.ENOTFOUND {
		t.Fatalf("global delete of a group entry: %v", err)
	}
	if err := d.DeleteUnsubscribes(ctx, uid, true, ids[:1]); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteUnsubscribes(ctx, uid, false, ids[2:]); err != nil {
		t.Fatal(err)
	}
	check("unsubscribe deletes")
	if gs, _, err := d.UnsubscribeGroups(ctx, uid, nil); err != nil || len(gs) != 1 || gs[0].Recipients != 0 {
		t.Fatalf("groups %+v %v", gs, err)
	}
	if n, err := d.ListUnsubscribes(ctx, uid, nil, &mail.Page{Number: 1, Size: 10}, func(*mail.Unsubscribe) error { return nil }); err != nil || n != 1 {
		t.Fatalf("global total %d %v", n, err)
	}

	// Notification recipients: a new one, the same address renamed, deletes.
	n1, err := d.SaveNotificationRecipient(ctx, uid, mail.NotificationRecipientInput{Email: "n@example.com", Owner: "N"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.SaveNotificationRecipient(ctx, uid, mail.NotificationRecipientInput{Email: "N@example.com", Owner: "M"}); err != nil {
		t.Fatal(err)
	}
	n2, err := d.SaveNotificationRecipient(ctx, uid, mail.NotificationRecipientInput{Email: "o@example.com", Owner: "O"})
	if err != nil {
		t.Fatal(err)
	}
	check("notification saves")
	if _, total, err := d.NotificationRecipients(ctx, uid, &mail.Page{Number: 1, Size: 1}); err != nil || total != 2 {
		t.Fatalf("notification total %d %v", total, err)
	}
	if err := d.DeleteNotificationRecipients(ctx, uid, []int64{n1, n2, n2 + 1000}); mail.ErrorCode(err) != mail.ENOTFOUND {
		t.Fatalf("delete with an unknown id: %v", err)
	}
	if err := d.DeleteNotificationRecipients(ctx, uid, []int64{n2, n1}); err != nil {
		t.Fatal(err)
	}
	check("notification deletes")

	// Recount rebuilds the same counts.
	if err := d.Recount(ctx, uid); err != nil {
		t.Fatal(err)
	}
	check("recount")
}

// Concurrent writers of one type and one segment (adds, moves, deletes and
// an import at once) leave exact counts, and the count rows are folded as
// they go rather than growing with the writes.
func TestCountsConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	d, uid := f.d, f.uid
	const writers, each = 6, 30
	var g errgroup.Group
	var mu sync.Mutex
	var kept []int64
	for w := range writers {
		g.Go(func() error {
			for i := range each {
				id, _, err := d.AddContact(ctx, uid, f.contact(f.typeA, fmt.Sprintf("w%d.%d@example.com", w, i), i*3))
				if err != nil {
					return err
				}
				switch i % 5 {
				case 1:
					err = d.DeleteContacts(ctx, uid, []int64{id})
				case 2:
					err = d.UpdateContact(ctx, uid, id, f.contact(f.typeB, fmt.Sprintf("w%d.%d@example.com", w, i), 1))
				default:
					mu.Lock()
					kept = append(kept, id)
					mu.Unlock()
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		var sb strings.Builder
		sb.WriteString("email,score\n")
		for i := range 500 {
			fmt.Fprintf(&sb, "imp%d@example.com,%d\n", i, i%100)
		}
		// Every third writer's first address too: added or updated,
		// whichever comes first.
		for w := 0; w < writers; w += 3 {
			fmt.Fprintf(&sb, "w%d.0@example.com,7\n", w)
		}
		_, err := f.tryImport(f.typeA, sb.String())
		return err
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, d, uid, "concurrent writers")
	if types, _, total := f.listed(t); types[f.typeA] != int64(len(kept))+500 || total != types[f.typeA]+types[f.typeB] {
		t.Fatalf("type A %d (want %d), type B %d, total %d", types[f.typeA], len(kept)+500, types[f.typeB], total)
	}
	// About one write in 16 folds its list: the rows stay far fewer than
	// the writes (6×30 adds and 6×6 moves of type A).
	var rows int
	if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM list_counts WHERE user_id = $1 AND kind = 'contact_type' AND key = $2",
		uid, f.typeA).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows > writers*each/3 {
		t.Fatalf("%d count rows for type A after %d writes: not folded", rows, writers*each)
	}
}

// A bulk delete of thousands of ids is all or nothing: one id that is not
// a live contact of the account refuses it whole; then it takes them all,
// out of their segments too.
func TestBulkDeleteAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	d, uid := f.d, f.uid
	var sb strings.Builder
	sb.WriteString("email,score\n")
	for i := range 3000 {
		fmt.Fprintf(&sb, "bulk%d@example.com,%d\n", i, i%100)
	}
	f.importCSV(t, f.typeA, sb.String())
	stranger := newListFixture(t)
	foreign := stranger.add(t, stranger.typeA, "x@example.com", 1)
	var ids []int64
	rows, err := d.Pool.Query(ctx, "SELECT id FROM contacts WHERE user_id = $1 ORDER BY id DESC", uid)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if rows.Err() != nil || len(ids) != 3000 {
		t.Fatalf("%d ids, %v", len(ids), rows.Err())
	}
	for _, extra := range []int64{foreign, ids[0] + 1_000_000} {
		if err := d.DeleteContacts(ctx, uid, append(ids[:len(ids):len(ids)], extra)); mail.ErrorCode(err) != mail.ENOTFOUND {
			t.Fatalf("with %d: %v", extra, err)
		}
	}
	types, segment, total := f.listed(t)
	if types[f.typeA] != 3000 || segment != 1500 || total != 3000 {
		t.Fatalf("after refusals: types %v, segment %d, total %d", types, segment, total)
	}
	if err := d.DeleteContacts(ctx, uid, append(ids, ids[5])); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, d, uid, "bulk delete")
	var live, members int
	if err := d.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM contacts WHERE user_id = $1 AND deleted_at IS NULL),
		(SELECT count(*) FROM segment_entries WHERE segment_id = $2)`, uid, f.segment).Scan(&live, &members); err != nil {
		t.Fatal(err)
	}
	if live != 0 || members != 0 {
		t.Fatalf("%d live contacts, %d members left", live, members)
	}
	checkCounts(t, d, stranger.uid, "the other account")
}

// The migration that introduces the kept counts counts the rows already
// there: a database at version 4 with data, migrated, has exact counts.
func TestCountsMigrationCountsExistingData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, _ := url.Parse(testdb.DSN(t))
	name := fmt.Sprintf("mailroom_counts_%d", os.Getpid())
	base.Path = "/" + name
	dsn := base.String()
	t.Cleanup(func() {
		admin := *base
		admin.Path = "/postgres"
		if c, err := pgx.Connect(ctx, admin.String()); err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	d, err := postgres.Open(ctx, dsn, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	sqlDB := stdlib.OpenDBFromPool(d.Pool)
	defer sqlDB.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `
		INSERT INTO accounts (name, public_key, secret_hash) VALUES ('a', 'pk_a', ''), ('b', 'pk_b', '');
		INSERT INTO contact_types (user_id, name) VALUES (1, 't1'), (1, 't2'), (2, 't3');
		INSERT INTO contacts (user_id, contact_type_id, email, deleted_at)
		SELECT 1 + (g % 3 = 0)::int, 1 + g % 3, 'c' || g || '@example.com', CASE WHEN g % 7 = 0 THEN now() END
		FROM generate_series(1, 100) g;
		INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value)
		VALUES (1, 2, 's', '{1}', '{"is not empty"}', '{}'), (2, 3, 's', '{1}', '{"is not empty"}', '{}');
		INSERT INTO segment_recipients (user_id, segment_id, contact_id)
		SELECT user_id, contact_type_id - 1, id FROM contacts WHERE contact_type_id > 1 AND deleted_at IS NULL;
		INSERT INTO segment_recipients (user_id, segment_id, email) VALUES (1, 1, 'hand@example.com');
		INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description) VALUES (1, '1', 'g', 'g');
		INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address)
		SELECT 1 + g % 2, CASE WHEN g % 4 = 1 THEN 1 END, 'u' || g || '@example.com' FROM generate_series(1, 30) g;
		INSERT INTO notification_recipients (user_id, email_address, email_owner) VALUES (2, 'n@example.com', 'n');
	`); err != nil {
		t.Fatal(err)
	}
	var before string
	listed := `SELECT string_agg(concat_ws(':', id, segment_id, contact_id, first_name, email), ' ' ORDER BY id) FROM %s`
	if err := d.Pool.QueryRow(ctx, fmt.Sprintf(listed, "segment_recipients")).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// The members moved to segment_members with their ids, the hand-stored
	// recipient stayed.
	var after string
	var hand int
	if err := d.Pool.QueryRow(ctx, "SELECT ("+fmt.Sprintf(listed, "segment_entries")+"), (SELECT count(*) FROM segment_recipients)").Scan(&after, &hand); err != nil {
		t.Fatal(err)
	}
	if after != before || hand != 1 {
		t.Fatalf("recipients before the migration:\n%s\nafter:\n%s (%d by hand)", before, after, hand)
	}
	var kinds int
	if err := d.Pool.QueryRow(ctx, "SELECT count(DISTINCT kind) FROM list_counts").Scan(&kinds); err != nil || kinds != 4 {
		t.Fatalf("%d kinds counted, %v", kinds, err)
	}
	for _, uid := range []int64{1, 2} {
		checkCounts(t, d, uid, fmt.Sprintf("migration, account %d", uid))
	}
}
