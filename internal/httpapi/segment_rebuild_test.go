package httpapi_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/testdb"
)

// segmentMismatch compares a segment's contact members, and its kept
// count, with what its condition (first_name starting with prefix) selects
// now; it describes the difference, "" when there is none.
func segmentMismatch(t *testing.T, acct account, typ, segment int64, prefix string) string {
	t.Helper()
	var missing, extra, members, counted int64
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM contacts c WHERE c.contact_type_id = $1 AND c.deleted_at IS NULL AND starts_with(lower(c.first_name), $3)
		   AND NOT EXISTS (SELECT 1 FROM segment_members r WHERE r.segment_id = $2 AND r.contact_id = c.id)),
		(SELECT count(*) FROM segment_members r WHERE r.segment_id = $2
		   AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = r.contact_id AND c.contact_type_id = $1
		                   AND c.deleted_at IS NULL AND starts_with(lower(c.first_name), $3))),
		(SELECT count(*) FROM segment_entries r WHERE r.segment_id = $2),
		(SELECT COALESCE(sum(n), 0) FROM list_counts WHERE user_id = $4 AND kind = 'segment' AND key = $2)`,
		typ, segment, prefix, acct.id).Scan(&missing, &extra, &members, &counted); err != nil {
		t.Fatal(err)
	}
	if missing != 0 || extra != 0 || members != counted {
		return fmt.Sprintf("%d matching contacts missing, %d members that do not match, %d members counted as %d",
			missing, extra, members, counted)
	}
	return ""
}

// A rebuild runs in steps while contacts change under it: at the end the
// members are exactly the matching contacts, and the count is theirs.
func TestSegmentRebuildStepsWithConcurrentWriters(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Steps")
	var ids []int64
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `WITH x AS (
		INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'c' || g || '@example.com', CASE WHEN g % 3 = 0 THEN 'Alpha' ELSE 'Beta' END
		FROM generate_series(1, 16000) g RETURNING id)
		SELECT array_agg(id ORDER BY id) FROM x`, acct.id, typ).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	seg := cond(typ, 2, "starts with", "a")
	seg.Set("segment_name", "A")
	segment := saveSegment(t, a, acct, seg)
	if d := segmentMismatch(t, acct, typ, segment, "a"); d != "" {
		t.Fatal("after save: " + d)
	}

	// Writers rename, add and delete contacts while the conditions change
	// back and forth (each change a rebuild of four steps).
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := ids[r.IntN(len(ids))]
				var body url.Values
				var path string
				switch n % 4 {
				case 0, 1:
					path, body = "/api/contacts/update", url.Values{"contact_id": {fmt.Sprint(id)}, "contact_type_id": {fmt.Sprint(typ)},
						"email": {fmt.Sprintf("w%d.%d@example.com", w, n)}, "country": {"276"},
						"first_name": {[]string{"Alpha", "Beta", "Gamma", "Bravo"}[r.IntN(4)]}}
				case 2:
					path, body = "/api/contacts/add", url.Values{"contact_type_id": {fmt.Sprint(typ)},
						"email": {fmt.Sprintf("new%d.%d@example.com", w, n)}, "country": {"276"},
						"first_name": {[]string{"Alpha", "Beta", "Gamma", "Bravo"}[r.IntN(4)]}}
				case 3:
					path = fmt.Sprintf("/api/contacts/delete?contact_id=%d", id)
				}
				method := "POST"
				if body == nil {
					method = "DELETE"
				}
				if res := a.do(req{method: method, path: path, acct: &acct, body: body}); res.code != 200 && res.code != 404 && res.code != 422 {
					t.Errorf("%s %s: %d %s", method, path, res.code, res.body)
				}
			}
		}()
	}
	prefixes := []string{"b", "a", "g", "b"}
	for _, p := range prefixes {
		up := cond(typ, 2, "starts with", p)
		up.Set("segment_name", "A")
		up.Set("segment_id", fmt.Sprint(segment))
		a.do(req{method: "POST", path: "/api/segment/update", acct: &acct, body: up}).
			expect(t, 200, `{"status":"success","message":"Updated Successfully"}`)
	}
	close(stop)
	wg.Wait()
	if d := segmentMismatch(t, acct, typ, segment, prefixes[len(prefixes)-1]); d != "" {
		t.Fatal("after updates with writers: " + d)
	}
	var pending bool
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT rebuild_next IS NOT NULL FROM segments WHERE id = $1", segment).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending {
		t.Fatal("the rebuild is still marked pending")
	}
}

// A rebuild a stopped process left half done is resumed from its step,
// and ends with the right members.
func TestSegmentRebuildResumes(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Resume")
	pool := testdb.New(t).Pool
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'r' || g || '@example.com', CASE WHEN g % 2 = 0 THEN 'Alpha' ELSE 'Beta' END
		FROM generate_series(1, 12000) g`, acct.id, typ); err != nil {
		t.Fatal(err)
	}
	seg := cond(typ, 2, "starts with", "a")
	seg.Set("segment_name", "A")
	a.do(req{method: "POST", path: "/api/segment/save", acct: &acct, body: seg}).
		expect(t, 200, `{"status":"success","message":"Saved Successfully"}`)
	// As a process that stopped after the first step of a change to "b":
	// conditions changed, members of the first 5000 contacts redone, the
	// rest still by the old conditions.
	var segment, mid int64
	if err := pool.QueryRow(ctx, `SELECT max(s.id), (SELECT id FROM contacts WHERE contact_type_id = $2 ORDER BY id OFFSET 5000 LIMIT 1)
		FROM segments s WHERE s.user_id = $1`, acct.id, typ).Scan(&segment, &mid); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE segments SET value = '{b}', rebuild_gen = rebuild_gen + 1, rebuild_next = $2 WHERE id = $1;`,
		segment, mid); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		WITH gone AS (DELETE FROM segment_members r USING contacts c
		              WHERE r.segment_id = $1 AND c.id = r.contact_id AND c.id < $2 RETURNING r.id),
		     joined AS (INSERT INTO segment_members (user_id, segment_id, contact_id)
		                SELECT user_id, $1, id FROM contacts WHERE contact_type_id = $3 AND id < $2 AND first_name = 'Beta' RETURNING id)
		INSERT INTO list_counts (user_id, kind, key, n)
		SELECT $4, 'segment', $1, (SELECT count(*) FROM joined) - (SELECT count(*) FROM gone)`, segment, mid, typ, acct.id); err != nil {
		t.Fatal(err)
	}
	if d := segmentMismatch(t, acct, typ, segment, "b"); d == "" {
		t.Fatal("the half-done rebuild already looks done: the test proves nothing")
	}
	if err := testdb.New(t).ResumeSegmentRebuilds(ctx); err != nil {
		t.Fatal(err)
	}
	if d := segmentMismatch(t, acct, typ, segment, "b"); d != "" {
		t.Fatal("after resume: " + d)
	}
}

// A rebuild gets through a type that writers never leave alone: its steps
// queue for the type's writer lock, and writers that come later queue
// behind them (with row locks the writers' FOR SHARE kept overtaking the
// step's FOR UPDATE, and the update never ended while they wrote).
func TestSegmentRebuildNotStarvedByWriters(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Busy")
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'b' || g || '@example.com', 'Alpha' FROM generate_series(1, 12000) g`, acct.id, typ); err != nil {
		t.Fatal(err)
	}
	seg := cond(typ, 2, "starts with", "a")
	seg.Set("segment_name", "A")
	segment := saveSegment(t, a, acct, seg)
	updated := make(chan response, 1)
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-updated:
					updated <- response{}
					return
				default:
				}
				a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{"contact_type_id": {fmt.Sprint(typ)},
					"email": {fmt.Sprintf("w%d.%d@example.com", w, n)}, "country": {"276"}, "first_name": {"Beta"}}})
			}
		}()
	}
	up := cond(typ, 2, "starts with", "b")
	up.Set("segment_name", "A")
	up.Set("segment_id", fmt.Sprint(segment))
	done := make(chan response, 1)
	go func() { done <- a.do(req{method: "POST", path: "/api/segment/update", acct: &acct, body: up}) }()
	select {
	case r := <-done:
		updated <- response{} // stop the writers
		wg.Wait()
		r.expect(t, 200, `{"status":"success","message":"Updated Successfully"}`)
	case <-time.After(60 * time.Second):
		updated <- response{}
		wg.Wait()
		<-done
		t.Fatal("the segment update did not end while writers wrote: its rebuild was starved")
	}
	if d := segmentMismatch(t, acct, typ, segment, "b"); d != "" {
		t.Fatal(d)
	}
}
