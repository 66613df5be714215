package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

// The load benchmarks run the real API process against the package's test
// database, as the outside attack on the data layer did (issue 13): a
// mixed workload of 64 clients, single writers during imports, and slow
// readers of a long list.

// fixture is an account of the API process with one contact type.
type fixture struct {
	p      *apiProcess
	conn   *pgx.Conn
	userID int64
	typeID int64
}

func newFixture(b *testing.B) *fixture {
	b.Helper()
	p := startAPI(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	f := &fixture{p: p, conn: conn}
	if err := conn.QueryRow(ctx, "SELECT id FROM accounts WHERE public_key = $1", p.public).Scan(&f.userID); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO custom_fields (user_id, field_name, field_type)
		VALUES ($1, 'score', 'number'), ($1, 'joined', 'datetime-local')`, f.userID); err != nil {
		b.Fatal(err)
	}
	f.typeID = f.newType(b, "load")
	return f
}

func (f *fixture) newType(b *testing.B, name string) int64 {
	b.Helper()
	var id int64
	if err := f.conn.QueryRow(context.Background(), "INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id",
		f.userID, name).Scan(&id); err != nil {
		b.Fatal(err)
	}
	return id
}

// seed imports n generated contacts into the fixture's type through the
// API (so every count and membership the API keeps is kept).
func (f *fixture) seed(b *testing.B, n int) {
	b.Helper()
	f.p.upload(b, f.typeID, n, 0)
}

// call makes one API request and returns its status and duration.
func (f *fixture) call(client *http.Client, method, path string, form url.Values) (int, time.Duration, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, f.p.url+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("PublicKey", f.p.public)
	req.Header.Set("SecretKey", f.p.secret)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, time.Since(start), err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), nil
}

// latencies collects request durations by operation.
type latencies struct {
	mu   sync.Mutex
	byOp map[string][]time.Duration
	bad  map[string]int // answers other than 200 (and 404 for deletes), by "op code"
}

func (l *latencies) add(op string, d time.Duration, code int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byOp[op] = append(l.byOp[op], d)
	if !ok {
		l.bad[fmt.Sprint(op, " ", code)]++
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkMixedLoad is 64 clients mixing contact list pages, details,
// adds, updates and deletes with segment lists, details and updates, over
// a contact type of 100,000 contacts with three segments, for 15 seconds
// per iteration. It reports throughput and p50/p99 latency, overall and
// per operation.
func BenchmarkMixedLoad(b *testing.B) {
	f := newFixture(b)
	f.seed(b, 100_000)
	ctx := context.Background()
	var ids []int64
	var emails []string
	if err := f.conn.QueryRow(ctx, "SELECT array_agg(id ORDER BY id), array_agg(email ORDER BY id) FROM contacts WHERE contact_type_id = $1",
		f.typeID).Scan(&ids, &emails); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var segments []int64
	for i, c := range []struct{ field, op, value string }{
		{"2", "starts with", "First1"}, {"1", "contains", "7@"}, {"0", "is within the last", "30"},
	} {
		form := url.Values{"contact_type_id": {fmt.Sprint(f.typeID)}, "segment_name": {fmt.Sprint("seg", i)},
			"select_field[0]": {c.field}, "select_operator[0]": {c.op}, "value[0]": {c.value}}
		if code, _, err := f.call(client, "POST", "/api/segment/save", form); err != nil || code != 200 {
			b.Fatalf("segment save: %d %v", code, err)
		}
	}
	if err := f.conn.QueryRow(ctx, "SELECT array_agg(id ORDER BY id) FROM segments WHERE user_id = $1", f.userID).Scan(&segments); err != nil {
		b.Fatal(err)
	}

	var added atomic.Int64
	ops := []op{
		{"contact-list", 15, func(r *rand.Rand) (string, string, url.Values) {
			return "GET", fmt.Sprintf("/api/contacts/list?page=%d&per_page=50", 1+r.IntN(100)), nil
		}},
		{"contact-details", 30, func(r *rand.Rand) (string, string, url.Values) {
			return "GET", fmt.Sprintf("/api/contacts/details?contact_id=%d", ids[r.IntN(len(ids))]), nil
		}},
		{"contact-add", 15, func(r *rand.Rand) (string, string, url.Values) {
			n := added.Add(1)
			return "POST", "/api/contacts/add", url.Values{"contact_type_id": {fmt.Sprint(f.typeID)},
				"email": {fmt.Sprintf("load%d@example.com", n)}, "first_name": {"First" + strconv.FormatInt(n, 10)}, "country": {"276"}}
		}},
		{"contact-update", 15, func(r *rand.Rand) (string, string, url.Values) {
			i := r.IntN(len(ids))
			return "POST", "/api/contacts/update", url.Values{"contact_id": {fmt.Sprint(ids[i])}, "contact_type_id": {fmt.Sprint(f.typeID)},
				"email": {emails[i]}, "first_name": {fmt.Sprint("First", r.IntN(100))}, "country": {"276"}}
		}},
		{"contact-delete", 5, func(r *rand.Rand) (string, string, url.Values) {
			return "DELETE", fmt.Sprintf("/api/contacts/delete?contact_id=%d", ids[r.IntN(len(ids))]), nil
		}},
		{"contact-types", 5, func(r *rand.Rand) (string, string, url.Values) {
			return "GET", "/api/contacts-type", nil
		}},
		{"segment-list", 5, func(r *rand.Rand) (string, string, url.Values) {
			return "GET", "/api/segment/list", nil
		}},
		{"segment-details", 5, func(r *rand.Rand) (string, string, url.Values) {
			return "GET", fmt.Sprintf("/api/segment/details?segment_id=%d", segments[r.IntN(len(segments))]), nil
		}},
		{"segment-update", 5, func(r *rand.Rand) (string, string, url.Values) {
			return "POST", "/api/segment/update", url.Values{"segment_id": {fmt.Sprint(segments[r.IntN(len(segments))])},
				"contact_type_id": {fmt.Sprint(f.typeID)}, "segment_name": {"updated"}, "select_field[0]": {"2"},
				"select_operator[0]": {"starts with"}, "value[0]": {fmt.Sprint("First", r.IntN(10))}}
		}},
	}
	for _, mix := range []struct {
		name           string
		segmentUpdates bool
	}{{"all", true}, {"no-segment-updates", false}} {
		b.Run(mix.name, func(b *testing.B) {
			var chosen []op
			for _, o := range ops {
				if o.name != "segment-update" || mix.segmentUpdates {
					chosen = append(chosen, o)
				}
			}
			runMix(b, f, client, chosen)
		})
	}
}

// op is one kind of request of a mixed load, picked by weight.
type op struct {
	name   string
	weight int
	run    func(r *rand.Rand) (string, string, url.Values)
}

// runMix runs 64 clients picking ops by weight for 15 seconds per
// iteration, and reports throughput and latencies.
func runMix(b *testing.B, f *fixture, client *http.Client, ops []op) {
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	const clients, duration = 64, 15 * time.Second
	for i := 0; i < b.N; i++ {
		lat := &latencies{byOp: map[string][]time.Duration{}, bad: map[string]int{}}
		stop := time.Now().Add(duration)
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(c), uint64(i)))
				for time.Now().Before(stop) {
					pick := r.IntN(total)
					var o op
					for _, o = range ops {
						if pick -= o.weight; pick < 0 {
							break
						}
					}
					method, path, form := o.run(r)
					code, d, err := f.call(client, method, path, form)
					// A contact another client deleted is a 404 to details,
					// update and delete alike.
					ok := err == nil && (code == 200 || (code == 404 && strings.HasPrefix(o.name, "contact-")))
					lat.add(o.name, d, code, ok)
				}
			}()
		}
		wg.Wait()
		var all []time.Duration
		for name, ds := range lat.byOp {
			all = append(all, ds...)
			b.ReportMetric(ms(percentile(ds, 0.99)), "p99-"+name+"-ms")
		}
		bad := 0
		for k, n := range lat.bad {
			bad += n
			b.Logf("failed: %s x%d", k, n)
		}
		b.ReportMetric(float64(len(all))/duration.Seconds(), "req/s")
		b.ReportMetric(ms(percentile(all, 0.50)), "p50-ms")
		b.ReportMetric(ms(percentile(all, 0.99)), "p99-ms")
		b.ReportMetric(float64(bad), "failed")
	}
}

// BenchmarkAddDuringImport adds single contacts to a contact type, one
// after another, while 1,000,000-row imports run into it; it reports the
// longest and the p99 wait of an add, and the imports' rate.
func BenchmarkAddDuringImport(b *testing.B) {
	f := newFixture(b)
	f.seed(b, 100_000)
	client := &http.Client{}
	for i := 0; i < b.N; i++ {
		done := make(chan time.Duration)
		go func() {
			start := time.Now()
			f.p.upload(b, f.typeID, 1_000_000, 1+i)
			done <- time.Since(start)
		}()
		var waits []time.Duration
		var importTime time.Duration
	loop:
		for n := 0; ; n++ {
			select {
			case importTime = <-done:
				break loop
			default:
			}
			code, d, err := f.call(client, "POST", "/api/contacts/add", url.Values{"contact_type_id": {fmt.Sprint(f.typeID)},
				"email": {fmt.Sprintf("single%d.%d@example.com", i, n)}, "country": {"276"}})
			if err != nil || code != 200 {
				b.Fatalf("add: %d %v", code, err)
			}
			waits = append(waits, d)
		}
		b.ReportMetric(ms(percentile(waits, 1)), "max-add-ms")
		b.ReportMetric(ms(percentile(waits, 0.99)), "p99-add-ms")
		b.ReportMetric(float64(len(waits)), "adds")
		b.ReportMetric(1_000_000/importTime.Seconds(), "import-rows/s")
	}
}

// BenchmarkSlowReaders opens 50 streaming lists of 104,000 contacts whose
// clients read 16 KB every 100 ms, and reports how much the API process's
// resident memory grew.
func BenchmarkSlowReaders(b *testing.B) {
	f := newFixture(b)
	f.seed(b, 104_000)
	for i := 0; i < b.N; i++ {
		base := f.p.peakRSS(b)
		var wg sync.WaitGroup
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := net.Dial("tcp", strings.TrimPrefix(f.p.url, "http://"))
				if err != nil {
					b.Error(err)
					return
				}
				defer conn.Close()
				// A small receive window, as a slow client on a slow link.
				conn.(*net.TCPConn).SetReadBuffer(16 << 10)
				fmt.Fprintf(conn, "GET /api/contacts/list HTTP/1.1\r\nHost: x\r\nPublicKey: %s\r\nSecretKey: %s\r\n\r\n", f.p.public, f.p.secret)
				buf := make([]byte, 16<<10)
				for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
					if _, err := conn.Read(buf); err != nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		peak := f.p.peakRSS(b)
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
		b.ReportMetric(float64(peak-base)/(1<<20), "rss-growth-MB")
	}
}

// BenchmarkClickRedirect is 64 clients following tracked links: each GET
// /t/c/{token} of a send of 100,000 delivered mails and 10 links, tokens
// made by the send's signer for random mails and links, answered 302
// without being followed. It reports req/s and p50/p99 latency for 15
// seconds per iteration, then checks that the recorder wrote every click
// (the load generator shares the two cores with the API).
func BenchmarkClickRedirect(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	d := testdb.New(b)
	const mails, links = 100_000, 10
	send := 980_000 + f.userID%10_000
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS deliveries_p98 PARTITION OF deliveries FOR VALUES FROM (980000) TO (990000)`,
		`INSERT INTO single_sends (id, user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader,
			status, unique_open_token) OVERRIDING SYSTEM VALUE
			VALUES ($2, $1, gen_random_uuid(), 1, 1, 1, 'clicks', 's', 'p', 3, '{"contacts_1": "LT"}')`,
		`INSERT INTO deliveries (send_id, user_id, email, list_key, status)
			SELECT $2, $1, 'c' || i || '@clicks.example', 'contacts_1', 2 FROM generate_series(1, ` + strconv.Itoa(mails) + `) i`,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, f.userID, send)
		}
		if _, err := f.conn.Exec(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
	var ids []int64
	if err := f.conn.QueryRow(ctx, "SELECT array_agg(id) FROM deliveries WHERE send_id = $1", send).Scan(&ids); err != nil {
		b.Fatal(err)
	}
	urls := make([]string, links)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://shop.example/item/%d?utm_source=mailroom", i)
	}
	if _, err := d.NumberLinks(ctx, send, urls); err != nil {
		b.Fatal(err)
	}
	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		b.Fatal(err)
	}
	ck := mail.NewTokenSigner(key).ClickKey(send)
	r := rand.New(rand.NewPCG(1, 2))
	paths := make([]string, 200_000)
	for i := range paths {
		paths[i] = f.p.url + mail.ClickPath + string(ck.Seal(nil, ids[r.IntN(len(ids))], r.IntN(links)))
	}
	client := &http.Client{
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	const clients, duration = 64, 15 * time.Second
	var redirected atomic.Int64
	for i := 0; i < b.N; i++ {
		lat := make([][]time.Duration, clients)
		var bad, next atomic.Int64
		stop := time.Now().Add(duration)
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					p := paths[next.Add(1)%int64(len(paths))]
					start := time.Now()
					resp, err := client.Get(p)
					if err != nil {
						bad.Add(1)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					lat[c] = append(lat[c], time.Since(start))
					if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), "https://shop.example/item/") {
						bad.Add(1)
						continue
					}
					redirected.Add(1)
				}
			}()
		}
		wg.Wait()
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		b.ReportMetric(float64(len(all))/duration.Seconds(), "req/s")
		b.ReportMetric(ms(percentile(all, 0.50)), "p50-ms")
		b.ReportMetric(ms(percentile(all, 0.99)), "p99-ms")
		b.ReportMetric(float64(bad.Load()), "failed")
	}
	// The recorder writes a second after the last click at the latest.
	var written int64
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(200 * time.Millisecond) {
		if err := f.conn.QueryRow(ctx, "SELECT COALESCE(sum(clicks), 0) FROM delivery_clicks WHERE send_id = $1", send).Scan(&written); err != nil {
			b.Fatal(err)
		}
		if written == redirected.Load() {
			break
		}
	}
	if written != redirected.Load() {
		b.Fatalf("%d redirects answered, %d clicks written", redirected.Load(), written)
	}
}
