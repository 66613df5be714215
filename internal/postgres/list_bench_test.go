package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// bigSize is the size of every list of the benchmark account.
const bigSize = 1_000_000

// bigAccount is one account whose every list holds bigSize records: one
// contact type of 1,000,000 contacts (with a segment matching half of
// them), 1,000,000 global unsubscribes, an unsubscribe group of 1,000,000
// and 1,000,000 notification recipients. It is built once per benchmark
// run, set-based (INSERT … SELECT FROM generate_series), then its counts are
// rebuilt and the tables vacuumed, so that the lists are read as a live
// database keeps them.
type bigAccount struct {
	d       *postgres.DB
	uid     int64
	typeID  int64
	fieldID int64
	segment int64
	group   int64
}

var (
	bigOnce sync.Once
	big     bigAccount
	bigErr  error
)

func bigFixture(b *testing.B) *bigAccount {
	b.Helper()
	d := testdb.New(b)
	bigOnce.Do(func() { bigErr = big.build(context.Background(), d) })
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return &big
}

func (a *bigAccount) build(ctx context.Context, d *postgres.DB) error {
	a.d = d
	var err error
	if a.uid, _, err = d.CreateAccount(ctx, "big"); err != nil {
		return err
	}
	steps := []struct {
		sql  string
		dest *int64
	}{
		{"INSERT INTO contact_types (user_id, name) VALUES ($1, 'big') RETURNING id", &a.typeID},
		{"INSERT INTO custom_fields (user_id, field_name, field_type) VALUES ($1, 'score', 'number') RETURNING id", &a.fieldID},
		{"INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description) VALUES ($1::bigint, '9' || $1::bigint::text, 'big', 'big') RETURNING id", &a.group},
	}
	for _, s := range steps {
		if err := d.Pool.QueryRow(ctx, s.sql, a.uid).Scan(s.dest); err != nil {
			return fmt.Errorf("%s: %w", s.sql, err)
		}
	}
	for _, s := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO contacts (user_id, contact_type_id, email, first_name, country, custom)
		  SELECT $1, $2, 'user' || g || '@example.com', 'First' || g, 276, jsonb_build_object('score', g % 1000)
		  FROM generate_series(1, $3::int) g`, []any{a.uid, a.typeID, bigSize}},
		{`INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address)
		  SELECT $1, NULL, 'global' || g || '@example.com' FROM generate_series(1, $2::int) g`, []any{a.uid, bigSize}},
		{`INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address)
		  SELECT $1, $2, 'group' || g || '@example.com' FROM generate_series(1, $3::int) g`, []any{a.uid, a.group, bigSize}},
		{`INSERT INTO notification_recipients (user_id, email_address, email_owner)
		  SELECT $1, 'owner' || g || '@example.com', 'Owner ' || g FROM generate_series(1, $2::int) g`, []any{a.uid, bigSize}},
	} {
		if _, err := d.Pool.Exec(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("%s: %w", s.sql, err)
		}
	}
	if _, err := d.Pool.Exec(ctx, "VACUUM ANALYZE contacts"); err != nil {
		return err
	}
	if a.segment, err = a.d.CreateSegment(ctx, a.uid, a.halfSegment()); err != nil {
		return err
	}
	if err := recountFixture(ctx, d, a.uid); err != nil {
		return err
	}
	_, err = d.Pool.Exec(ctx, "VACUUM ANALYZE contacts, segment_members, segment_recipients, unsubscribes, notification_recipients")
	return err
}

// halfSegment matches the contacts whose score is below 500: half of them.
func (a *bigAccount) halfSegment() mail.SegmentInput {
	fields := []mail.CustomField{{ID: a.fieldID, Name: "score", Type: mail.FieldNumber}}
	in, err := mail.ParseSegment(mail.SegmentForm{
		ContactTypeID: fmt.Sprint(a.typeID), Name: "half",
		Fields: []string{fmt.Sprint(a.fieldID)}, Operators: []string{"is less than"}, Values: [][]string{{"500"}},
	}, fields)
	if err != nil {
		panic(err)
	}
	return in
}

// recountFixture rebuilds the account's kept counts after the fixture's
// direct inserts.
func recountFixture(ctx context.Context, d *postgres.DB, uid int64) error {
	return d.Recount(ctx, uid)
}

// BenchmarkListPages reads a page of 50 of each audience list (1,000,000
// records; the segment's 500,000) with its total: the first page, the last
// by page number (an OFFSET walk of the list's index) and the last by
// after_id (the keyset cursor).
func BenchmarkListPages(b *testing.B) {
	a := bigFixture(b)
	ctx := context.Background()
	lists := []struct {
		name   string
		size   int64
		cursor string // the id before the last page: $1 is its offset
		args   []any  // the cursor query's other parameters
		list   func(p *mail.Page) (int64, error)
	}{
		{"contacts", bigSize,
			"SELECT id FROM contacts WHERE user_id = $2 AND deleted_at IS NULL ORDER BY id OFFSET $1 LIMIT 1", []any{a.uid},
			func(p *mail.Page) (int64, error) {
				return a.d.ListContacts(ctx, a.uid, p, func(*postgres.Contact) error { return nil })
			}},
		{"segment-recipients", bigSize / 2,
			"SELECT id FROM segment_entries WHERE segment_id = $2 ORDER BY id OFFSET $1 LIMIT 1", []any{a.segment},
			func(p *mail.Page) (int64, error) {
				return a.d.SegmentRecipients(ctx, a.uid, a.segment, p, func(*mail.SegmentRecipient) error { return nil })
			}},
		{"global-unsubscribes", bigSize,
			"SELECT id FROM unsubscribes WHERE user_id = $2 AND unsubscribe_groups_id IS NULL ORDER BY id OFFSET $1 LIMIT 1", []any{a.uid},
			func(p *mail.Page) (int64, error) {
				return a.d.ListUnsubscribes(ctx, a.uid, nil, p, func(*mail.Unsubscribe) error { return nil })
			}},
		{"group-recipients", bigSize,
			"SELECT id FROM unsubscribes WHERE unsubscribe_groups_id = $2 ORDER BY id OFFSET $1 LIMIT 1", []any{a.group},
			func(p *mail.Page) (int64, error) {
				return a.d.ListUnsubscribes(ctx, a.uid, &a.group, p, func(*mail.Unsubscribe) error { return nil })
			}},
		{"notification-recipients", bigSize,
			"SELECT id FROM notification_recipients WHERE user_id = $2 ORDER BY id OFFSET $1 LIMIT 1", []any{a.uid},
			func(p *mail.Page) (int64, error) {
				_, total, err := a.d.NotificationRecipients(ctx, a.uid, p)
				return total, err
			}},
	}
	for _, l := range lists {
		last := l.size / 50
		var after int64
		if err := a.d.Pool.QueryRow(ctx, l.cursor, append([]any{l.size - 51}, l.args...)...).Scan(&after); err != nil {
			b.Fatal(err)
		}
		for _, p := range []struct {
			name string
			page mail.Page
		}{
			{"page=1", mail.Page{Number: 1, Size: 50}},
			{fmt.Sprintf("page=%d", last), mail.Page{Number: last, Size: 50}},
			{"after_id=last", mail.Page{Number: 1, Size: 50, After: after}},
		} {
			b.Run(l.name+"/"+p.name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					page := p.page
					total, err := l.list(&page)
					if err != nil {
						b.Fatal(err)
					}
					if total < l.size-bigSize/10 {
						b.Fatalf("total %d", total)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
			})
		}
	}
}

// BenchmarkListCounts reads the configuration lists whose records carry
// the size of an audience list: contact types (contacts_count), segments
// (segment_emails_count) and unsubscribe groups
// (unsubscribe_clients_count), each over lists of 500,000 to 1,000,000.
func BenchmarkListCounts(b *testing.B) {
	a := bigFixture(b)
	ctx := context.Background()
	for _, l := range []struct {
		name string
		list func() (int64, error)
	}{
		{"contact-types", func() (int64, error) {
			ts, _, err := a.d.ContactTypes(ctx, a.uid, nil)
			if err != nil || len(ts) != 1 {
				return 0, err
			}
			return ts[0].Contacts, nil
		}},
		{"segments", func() (int64, error) {
			ss, _, err := a.d.Segments(ctx, a.uid, nil)
			if err != nil || len(ss) != 1 {
				return 0, err
			}
			return ss[0].Recipients, nil
		}},
		{"unsubscribe-groups", func() (int64, error) {
			gs, _, err := a.d.UnsubscribeGroups(ctx, a.uid, nil)
			if err != nil || len(gs) != 1 {
				return 0, err
			}
			return gs[0].Recipients, nil
		}},
	} {
		b.Run(l.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				n, err := l.list()
				if err != nil {
					b.Fatal(err)
				}
				if n < bigSize/2 {
					b.Fatalf("count %d", n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}

// BenchmarkBulkDelete deletes 100,000 records by id, in one call as the
// bulk-delete routes make it, from lists of 1,000,000: contacts (half of
// them members of the segment), global unsubscribes and notification
// recipients. Each iteration first adds the 100,000 (untimed).
func BenchmarkBulkDelete(b *testing.B) {
	a := bigFixture(b)
	ctx := context.Background()
	const n = 100_000
	fields := []mail.CustomField{{ID: a.fieldID, Name: "score", Type: mail.FieldNumber}}
	// ids reads the ids of the account's rows that a query selects.
	ids := func(b *testing.B, sql string, args ...any) []int64 {
		rows, err := a.d.Pool.Query(ctx, sql, args...)
		if err != nil {
			b.Fatal(err)
		}
		out := make([]int64, 0, n)
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				b.Fatal(err)
			}
			out = append(out, id)
		}
		if rows.Err() != nil || len(out) != n {
			b.Fatalf("%d ids: %v", len(out), rows.Err())
		}
		if _, err := a.d.Pool.Exec(ctx, "ANALYZE contacts, segment_members, segment_recipients, unsubscribes, notification_recipients"); err != nil {
			b.Fatal(err)
		}
		return out
	}
	run := func(b *testing.B, add func(b *testing.B, round int) []int64, del func([]int64) error) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			set := add(b, i)
			b.StartTimer()
			if err := del(set); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ids/s")
	}
	b.Run("contacts", func(b *testing.B) {
		run(b, func(b *testing.B, round int) []int64 {
			var sb strings.Builder
			sb.WriteString("email,score\n")
			for j := 0; j < n; j++ {
				fmt.Fprintf(&sb, "del%d.%d.%d@example.com,%d\n", b.N, round, j, j%1000)
			}
			src, err := mail.NewContactCSV(strings.NewReader(sb.String()), fields, func(string) (int32, bool) { return 0, false })
			if err != nil {
				b.Fatal(err)
			}
			im, err := a.d.BeginContactImport(ctx, a.uid)
			if err != nil {
				b.Fatal(err)
			}
			if err := im.Copy(ctx, src); err != nil {
				b.Fatal(err)
			}
			if _, err := im.Commit(ctx, a.typeID, src); err != nil {
				b.Fatal(err)
			}
			return ids(b, "SELECT id FROM contacts WHERE user_id = $1 AND email LIKE $2 AND deleted_at IS NULL",
				a.uid, fmt.Sprintf("del%d.%d.%%", b.N, round))
		}, func(set []int64) error { return a.d.DeleteContacts(ctx, a.uid, set) })
	})
	b.Run("global-unsubscribes", func(b *testing.B) {
		run(b, func(b *testing.B, round int) []int64 {
			emails := make([]mail.Email, n)
			for j := range emails {
				emails[j] = mail.Email(fmt.Sprintf("del%d.%d.%d@example.com", b.N, round, j))
			}
			if _, err := a.d.Unsubscribe(ctx, a.uid, nil, emails); err != nil {
				b.Fatal(err)
			}
			return ids(b, "SELECT id FROM unsubscribes WHERE user_id = $1 AND email_address LIKE $2",
				a.uid, fmt.Sprintf("del%d.%d.%%", b.N, round))
		}, func(set []int64) error { return a.d.DeleteUnsubscribes(ctx, a.uid, true, set) })
	})
	b.Run("notification-recipients", func(b *testing.B) {
		run(b, func(b *testing.B, round int) []int64 {
			pattern := fmt.Sprintf("del%d.%d.", b.N, round)
			if _, err := a.d.Pool.Exec(ctx, `INSERT INTO notification_recipients (user_id, email_address, email_owner)
				SELECT $1, $2 || g || '@example.com', 'Owner' FROM generate_series(1, $3::int) g`, a.uid, pattern, n); err != nil {
				b.Fatal(err)
			}
			if err := recountFixture(ctx, a.d, a.uid); err != nil {
				b.Fatal(err)
			}
			return ids(b, "SELECT id FROM notification_recipients WHERE user_id = $1 AND email_address LIKE $2",
				a.uid, pattern+"%")
		}, func(set []int64) error { return a.d.DeleteNotificationRecipients(ctx, a.uid, set) })
	})
}
