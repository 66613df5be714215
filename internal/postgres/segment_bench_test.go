package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// BenchmarkSegmentRebuild builds a segment over a contact type of
// 1,000,000 contacts: about half match a custom number range and a text
// condition.
func BenchmarkSegmentRebuild(b *testing.B) {
	ctx := context.Background()
	d := testdb.New(b)
	uid, _, err := d.CreateAccount(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	var typeID, fieldID int64
	if err := d.Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'big') RETURNING id", uid).Scan(&typeID); err != nil {
		b.Fatal(err)
	}
	if err := d.Pool.QueryRow(ctx, "INSERT INTO custom_fields (user_id, field_name, field_type) VALUES ($1, 'score', 'number') RETURNING id", uid).Scan(&fieldID); err != nil {
		b.Fatal(err)
	}
	const contacts = 1_000_000
	if _, err := d.Pool.Exec(ctx, `INSERT INTO contacts (user_id, contact_type_id, email, first_name, country, custom)
		SELECT $1, $2, 'user' || g || '@example.com', 'First' || g, 276, jsonb_build_object('score', g % 1000)
		FROM generate_series(1, $3::int) g`, uid, typeID, contacts); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, "VACUUM ANALYZE contacts"); err != nil {
		b.Fatal(err)
	}
	form := mail.SegmentForm{
		ContactTypeID: fmt.Sprint(typeID), Name: "half",
		Fields:    []string{fmt.Sprint(fieldID), "2"},
		Operators: []string{"is between", "starts with"},
		Values:    [][]string{{"0", "499"}, {"first"}},
	}
	in, err := mail.ParseSegment(form, []mail.CustomField{{ID: fieldID, Name: "score", Type: mail.FieldNumber}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.CreateSegment(ctx, uid, in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var members int64
	d.Pool.QueryRow(ctx, "SELECT count(*) FROM segment_entries WHERE user_id = $1", uid).Scan(&members)
	b.ReportMetric(float64(members)/float64(b.N), "members/op")
	b.ReportMetric(float64(contacts)*float64(b.N)/b.Elapsed().Seconds(), "contacts/s")
}

// BenchmarkImportWithSegments imports 20,000 new contacts into a contact
// type with no segment and with 100 (first_name starts with N{i}, about
// 1.9 memberships a contact; every first name different): rows/s of the
// whole import, the segments' refresh included.
func BenchmarkImportWithSegments(b *testing.B) {
	ctx := context.Background()
	d := testdb.New(b)
	uid, _, err := d.CreateAccount(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	const rows = 20_000
	for _, segments := range []int{0, 100} {
		b.Run(fmt.Sprint("segments=", segments), func(b *testing.B) {
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				var typeID int64
				if err := d.Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id",
					uid, fmt.Sprint("t", segments, "-", i)).Scan(&typeID); err != nil {
					b.Fatal(err)
				}
				prefixSegments(b, d, uid, typeID, segments)
				var csv strings.Builder
				csv.WriteString("email,first_name\n")
				for r := range rows {
					fmt.Fprintf(&csv, "u%d-%d-%d@example.com,N%d x%d\n", segments, i, r, r%(segments+10), r)
				}
				src, err := mail.NewContactCSV(strings.NewReader(csv.String()), nil, func(string) (int32, bool) { return 0, false })
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				im, err := d.BeginContactImport(ctx, uid)
				if err != nil {
					b.Fatal(err)
				}
				if err := im.Copy(ctx, src); err != nil {
					b.Fatal(err)
				}
				if _, err := im.Commit(ctx, typeID, src); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(t0)
			}
			b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "rows/s")
		})
	}
}

// BenchmarkAddContactWithSegments adds one contact at a time to a contact
// type with no segment and with 100 (as BenchmarkImportWithSegments').
func BenchmarkAddContactWithSegments(b *testing.B) {
	ctx := context.Background()
	d := testdb.New(b)
	uid, _, err := d.CreateAccount(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, segments := range []int{0, 100} {
		b.Run(fmt.Sprint("segments=", segments), func(b *testing.B) {
			var typeID int64
			if err := d.Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id",
				uid, fmt.Sprint("t", segments, "-", b.N)).Scan(&typeID); err != nil {
				b.Fatal(err)
			}
			prefixSegments(b, d, uid, typeID, segments)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				name := fmt.Sprintf("N%d x%d", i%(segments+10), i)
				in := mail.ContactInput{ContactTypeID: typeID, Email: mail.Email(fmt.Sprintf("a%d-%d-%d@example.com", segments, b.N, i)), FirstName: &name}
				if _, _, err := d.AddContact(ctx, uid, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// prefixSegments makes n segments on a contact type: segment i holds the
// contacts whose first name starts with N{i}.
func prefixSegments(b *testing.B, d *postgres.DB, uid, typeID int64, n int) {
	b.Helper()
	for i := range n {
		in, err := mail.ParseSegment(mail.SegmentForm{ContactTypeID: fmt.Sprint(typeID), Name: fmt.Sprint("s", i),
			Fields: []string{"2"}, Operators: []string{"starts with"}, Values: [][]string{{fmt.Sprint("N", i)}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.CreateSegment(context.Background(), uid, in); err != nil {
			b.Fatal(err)
		}
	}
}
