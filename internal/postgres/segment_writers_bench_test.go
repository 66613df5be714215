package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/postgres/db"
	"github.com/mailroom/mailroom/internal/testdb"
)

// BenchmarkWritersDuringRebuild saves a segment over a contact type of
// 1,000,000 contacts that has 10 segments already, then changes its
// conditions, while 8 writers add, update and delete contacts of the type
// through AddContact, UpdateContact and DeleteContacts without a pause.
// It reports the rebuild (ns/op, contacts/s) and the latency of the
// writes that started during it (p50, p99, max); rebuild=none is the
// writers alone for 3 s. Afterwards every segment's members must equal a
// full evaluation of its conditions, and its kept count their number.
func BenchmarkWritersDuringRebuild(b *testing.B) {
	const (
		contacts = 1_000_000
		writers  = 8
	)
	ctx := context.Background()
	d := testdb.New(b)
	t0 := time.Now()
	uid, _, err := d.CreateAccount(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	var typeID int64
	if err := d.Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'busy') RETURNING id", uid).Scan(&typeID); err != nil {
		b.Fatal(err)
	}
	scoreID, err := d.CreateCustomField(ctx, uid, mail.CustomField{Name: "score", Type: mail.FieldNumber})
	if err != nil {
		b.Fatal(err)
	}
	fields := []mail.CustomField{{ID: scoreID, Name: "score", Type: mail.FieldNumber}}
	if _, err := d.Pool.Exec(ctx, `INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name, country, custom)
		SELECT $1, $2, 'c' || g || '@example.com', 'N' || g % 1000, 'L' || g % 7, 276, jsonb_build_object('score', g % 1000)
		FROM generate_series(1, $3::int) g`, uid, typeID, contacts); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `INSERT INTO list_counts (user_id, kind, key, n) VALUES ($1, 'contact_type', $2, $3)`, uid, typeID, contacts); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, "VACUUM ANALYZE contacts"); err != nil {
		b.Fatal(err)
	}
	segment := func(name, or string, conds ...[]string) mail.SegmentInput {
		f := mail.SegmentForm{ContactTypeID: fmt.Sprint(typeID), Name: name, QueryType: or}
		for _, c := range conds {
			f.Fields, f.Operators, f.Values = append(f.Fields, c[0]), append(f.Operators, c[1]), append(f.Values, c[2:])
		}
		in, err := mail.ParseSegment(f, fields)
		if err != nil {
			b.Fatal(err)
		}
		return in
	}
	score := fmt.Sprint(scoreID)
	// The segments the writers keep up to date: exact and prefix first
	// names (guarded in the refresh), a number range, an or.
	existing := []mail.SegmentInput{
		segment("is N0", "", []string{"2", "is", "N0"}),
		segment("is N7", "", []string{"2", "is", "N7"}),
		segment("is N14", "", []string{"2", "is", "N14"}),
		segment("is N21", "", []string{"2", "is", "N21"}),
		segment("is N28 and L0", "", []string{"2", "is", "N28"}, []string{"3", "is", "L0"}),
		segment("is N35", "", []string{"2", "is", "N35"}),
		segment("starts N96", "", []string{"2", "starts with", "N96"}),
		segment("starts N97", "", []string{"2", "starts with", "N97"}),
		segment("score > 990", "", []string{score, "is greater than", "990"}),
		segment("L3 or score < 5", "or", []string{"3", "is", "L3"}, []string{score, "is less than", "5"}),
	}
	for _, in := range existing {
		if _, err := d.CreateSegment(ctx, uid, in); err != nil {
			b.Fatal(err)
		}
	}
	var ids []int64
	if err := d.Pool.QueryRow(ctx, "SELECT array_agg(id ORDER BY id) FROM contacts WHERE contact_type_id = $1", typeID).Scan(&ids); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d contacts, %d segments in %s", len(ids), len(existing), time.Since(t0).Round(time.Millisecond))

	// Each writer owns every writers-th contact: it updates them, deletes
	// them from the end, and owns the ones it adds.
	owned := make([][]int64, writers)
	for i, id := range ids {
		owned[i%writers] = append(owned[i%writers], id)
	}
	var round int
	// during runs the writers while op runs, and reports the op's time and
	// the latencies of the writes that started during it.
	during := func(b *testing.B, op func()) (took time.Duration, lat []time.Duration) {
		round++
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failed error
		var from, to time.Time
		per := make([][]time.Duration, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				mine := owned[w]
				for n := 0; ; n++ {
					select {
					case <-stop:
						owned[w] = mine
						return
					default:
					}
					at := time.Now()
					var err error
					switch n % 4 {
					case 0, 1:
						id := mine[rng.IntN(len(mine))]
						var in mail.ContactInput
						if in, err = writerInput(typeID, fmt.Sprintf("u%d.%d.%d@example.com", round, w, n), rng, fields); err == nil {
							err = d.UpdateContact(ctx, uid, id, in)
						}
					case 2:
						var in mail.ContactInput
						if in, err = writerInput(typeID, fmt.Sprintf("a%d.%d.%d@example.com", round, w, n), rng, fields); err == nil {
							var id int64
							if id, _, err = d.AddContact(ctx, uid, in); err == nil {
								mine = append(mine, id)
							}
						}
					case 3:
						id := mine[len(mine)-1]
						mine = mine[:len(mine)-1]
						err = d.DeleteContacts(ctx, uid, []int64{id})
					}
					took := time.Since(at)
					if err != nil {
						mu.Lock()
						failed = errors.Join(failed, fmt.Errorf("writer %d, write %d: %w", w, n, err))
						mu.Unlock()
					}
					mu.Lock()
					if !from.IsZero() && !at.Before(from) && (to.IsZero() || at.Before(to)) {
						per[w] = append(per[w], took)
					}
					mu.Unlock()
				}
			}()
		}
		time.Sleep(300 * time.Millisecond) // the writers at their pace
		mu.Lock()
		from = time.Now()
		mu.Unlock()
		b.StartTimer()
		op()
		b.StopTimer()
		mu.Lock()
		to = time.Now()
		mu.Unlock()
		close(stop)
		wg.Wait()
		if failed != nil {
			b.Fatal(failed)
		}
		for _, p := range per {
			lat = append(lat, p...)
		}
		return to.Sub(from), lat
	}

	var halfID int64
	half := [2]mail.SegmentInput{
		segment("half", "", []string{score, "is between", "0", "499"}, []string{"2", "starts with", "n"}),
		segment("half", "", []string{score, "is between", "250", "749"}, []string{"2", "starts with", "n"}),
	}
	run := func(name string, op func(b *testing.B, i int)) {
		b.Run("rebuild="+name, func(b *testing.B) {
			b.StopTimer()
			var lat []time.Duration
			var took time.Duration
			for i := 0; i < b.N; i++ {
				t, l := during(b, func() { op(b, i) })
				took += t
				lat = append(lat, l...)
			}
			slices.Sort(lat)
			q := func(p float64) float64 {
				if len(lat) == 0 {
					return 0
				}
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / 1e6
			}
			b.ReportMetric(q(0.5), "writer-p50-ms")
			b.ReportMetric(q(0.99), "writer-p99-ms")
			b.ReportMetric(q(1), "writer-max-ms")
			b.ReportMetric(float64(len(lat))/took.Seconds(), "writes/s")
			if name != "none" {
				b.ReportMetric(float64(contacts)*float64(b.N)/took.Seconds(), "contacts/s")
			}
			checkSegments(b, d, uid, typeID, fields)
		})
	}
	run("none", func(b *testing.B, _ int) { time.Sleep(3 * time.Second) })
	run("save", func(b *testing.B, i int) {
		if halfID != 0 {
			b.StopTimer()
			if err := d.DeleteSegment(ctx, uid, halfID); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if halfID, err = d.CreateSegment(ctx, uid, half[0]); err != nil {
			b.Fatal(err)
		}
	})
	var gen int
	run("update", func(b *testing.B, _ int) {
		if halfID == 0 { // run alone (-bench .../rebuild=update)
			b.StopTimer()
			if halfID, err = d.CreateSegment(ctx, uid, half[0]); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		gen++
		if err := d.UpdateSegment(ctx, uid, halfID, half[gen%2]); err != nil {
			b.Fatal(err)
		}
	})
}

// writerInput is a contact write as the API parses it: a random first
// name, last name and score.
func writerInput(typeID int64, email string, rng *rand.Rand, fields []mail.CustomField) (mail.ContactInput, error) {
	v := map[string]string{
		"contact_type_id": fmt.Sprint(typeID), "email": email, "country": "276",
		"first_name": fmt.Sprint("N", rng.IntN(1000)), "last_name": fmt.Sprint("L", rng.IntN(7)),
	}
	return mail.ParseContact(mail.ContactForm{
		Get:    func(k string) (string, bool) { s, ok := v[k]; return s, ok },
		Custom: map[string]string{"score": fmt.Sprint(rng.IntN(1000))},
	}, fields, func(id int32) bool { return id == 276 })
}

// checkSegments fails b unless every live segment of the type has as
// contact members exactly the contacts its conditions pick, and as kept
// count their number.
func checkSegments(b *testing.B, d *postgres.DB, uid, typeID int64, fields []mail.CustomField) {
	b.Helper()
	ctx := context.Background()
	segs, err := db.New(d.Pool).LiveSegmentsOfTypes(ctx, db.LiveSegmentsOfTypesParams{UserID: uid, TypeIds: []int64{typeID}})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range segs {
		var pending bool
		if err := d.Pool.QueryRow(ctx, "SELECT rebuild_next IS NOT NULL FROM segments WHERE id = $1", s.ID).Scan(&pending); err != nil {
			b.Fatal(err)
		}
		conds := mail.StoredConditions(s.SelectField, s.SelectOperator, s.Value, fields)
		pred, args := postgres.SegmentPredicate(conds, s.QueryType != nil && *s.QueryType == "or")
		n := len(args)
		var missing, extra, members, kept int64
		if err := d.Pool.QueryRow(ctx, fmt.Sprintf(`
			WITH want AS MATERIALIZED (
			    SELECT c.id FROM contacts c
			    WHERE c.user_id = $%[1]d AND c.contact_type_id = $%[2]d AND c.deleted_at IS NULL AND %[4]s
			), got AS MATERIALIZED (
			    SELECT contact_id AS id FROM segment_members WHERE segment_id = $%[3]d
			)
			SELECT (SELECT count(*) FROM (SELECT id FROM want EXCEPT SELECT id FROM got) x),
			       (SELECT count(*) FROM (SELECT id FROM got EXCEPT SELECT id FROM want) x),
			       (SELECT count(*) FROM segment_entries WHERE segment_id = $%[3]d),
			       (SELECT COALESCE(sum(n), 0)::bigint FROM list_counts WHERE user_id = $%[1]d AND kind = 'segment' AND key = $%[3]d)`,
			n+1, n+2, n+3, pred), append(args, uid, typeID, s.ID)...).Scan(&missing, &extra, &members, &kept); err != nil {
			b.Fatal(err)
		}
		if pending || missing != 0 || extra != 0 || members != kept {
			b.Errorf("segment %d (%v %v %v): pending %v, %d matching contacts missing, %d members that do not match, %d members counted as %d",
				s.ID, s.SelectField, s.SelectOperator, s.Value, pending, missing, extra, members, kept)
		}
	}
}
