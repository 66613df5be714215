// Command load drives a running mailroom API with concurrent clients and
// reports requests per second and latency percentiles per request kind
// (docs/operations.md, docs/performance.md). It seeds what it reads through
// the API itself:
//
//	go run ./cmd/load -url http://localhost:8080 -public pk_… -secret sk_… -c 64 -d 20s -mix read
//
// -mix read: the contact-type list, a page of 50 contacts, a contact type's
// details, the automation list; -mix mixed: the same with one write in five (contact
// adds); -mix segments: contact writes, reads and lists beside segment saves
// and updates on one contact type (segments.go), with the counts and every
// segment's members checked at the end.
//
// -start runs the load against its own bin/api and bin/worker on the -url's
// address, a database made afresh (-db) and a flushed Redis database
// (-redis), with an account of its own, and stops them afterwards (`make
// bench-load`).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/internal/apiclient"
)

// call makes one request and answers its status (0 when it went
// unanswered) and the transport error.
type call func(ctx context.Context) (int, error)

// mix is a load: the names of its kinds of request, and which one a client
// makes next (elapsed: the share of the run gone, 0 to 1) with the call
// that makes it.
type mix struct {
	ops  []string
	next func(i int64, rng *rand.Rand, elapsed float64) (int, call)
	// verify, when set, checks the account once every client is done.
	verify func() error
}

type options struct {
	base, public, secret string
	conns                int
	dur                  time.Duration
	mix                  string
	contacts             int
	seed                 uint64
	seg                  segOptions
	start                bool
	db, redis, bin       string
	dsnParams            string
}

func main() {
	var o options
	flag.StringVar(&o.base, "url", "http://localhost:8080", "the API")
	flag.StringVar(&o.public, "public", "", "an account's public key")
	flag.StringVar(&o.secret, "secret", "", "its secret key")
	flag.IntVar(&o.conns, "c", 64, "concurrent clients")
	flag.DurationVar(&o.dur, "d", 20*time.Second, "how long")
	flag.StringVar(&o.mix, "mix", "read", "read, mixed (one write in five) or segments (contact writes and segment churn, checked)")
	flag.IntVar(&o.contacts, "contacts", 0, "contacts seeded into the type the load uses (0: 2,000, or 1,000 for -mix segments)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the clients' random choices")
	flag.IntVar(&o.seg.saves, "segment-saves", 90, "-mix segments: segments saved on the type, spread over the run")
	flag.IntVar(&o.seg.updates, "segment-updates", 45, "-mix segments: segment condition changes, spread over the run")
	flag.BoolVar(&o.start, "start", false, "start bin/api and bin/worker on -url's address against a fresh -db and -redis, with an account of their own")
	flag.StringVar(&o.db, "db", "mailroom_bench_load", "with -start: the database to make afresh")
	flag.StringVar(&o.redis, "redis", "redis://127.0.0.1:6379/14", "with -start: the Redis database to flush and use")
	flag.StringVar(&o.bin, "bin", "bin", "with -start: where api and worker are built")
	flag.StringVar(&o.dsnParams, "dsn-params", "", "with -start: more DATABASE_URL parameters for the processes (session settings such as auto_explain.log_min_duration=0&session_preload_libraries=auto_explain)")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	var st *stack
	if o.start {
		var err error
		if st, err = startStack(ctx, o); err != nil {
			return err
		}
		defer st.stop()
		o.public, o.secret = st.public, st.secret
	}
	if o.public == "" || o.secret == "" {
		return fmt.Errorf("-public and -secret are required (bin/api accounts create --name load), or -start")
	}
	c := &apiclient.Client{Base: strings.TrimRight(o.base, "/") + "/api", Public: o.public, Secret: o.secret,
		HTTP: &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: o.conns, MaxConnsPerHost: o.conns}}}
	var m *mix
	var err error
	switch o.mix {
	case "read", "mixed":
		m, err = simpleMix(ctx, c, o)
	case "segments":
		m, err = segmentsMix(ctx, c, o)
	default:
		err = fmt.Errorf("-mix %q: read, mixed or segments", o.mix)
	}
	if err != nil {
		return err
	}
	var before cpuUse
	if st != nil {
		before = cpuNow(ctx, st, o.db)
	}
	wall, failed := drive(ctx, m, o)
	if st != nil {
		printCPU(before, cpuNow(ctx, st, o.db), wall)
	}
	if m.verify != nil {
		if err := m.verify(); err != nil {
			return fmt.Errorf("check failed: %w", err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d requests answered other than 200, or not at all", failed)
	}
	return nil
}

// simpleMix is -mix read and -mix mixed: a contact type of o.contacts
// contacts read round-robin, and for mixed a contact add every fifth
// request.
func simpleMix(ctx context.Context, c *apiclient.Client, o options) (*mix, error) {
	n := o.contacts
	if n == 0 {
		n = 2000
	}
	typeID, err := seedType(ctx, c, n, "email,first_name\n", func(i int) string { return fmt.Sprintf("seed%d@load.example,Seed%d\n", i, i) })
	if err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	paths := []string{"/contacts-type", "/contacts/list?per_page=50",
		fmt.Sprintf("/contacts-type/view?contact_type_id=%d", typeID), "/automations"}
	ops := []string{"GET /contacts-type", "GET /contacts/list?per_page=50", "GET /contacts-type/view", "GET /automations"}
	calls := make([]call, len(paths))
	for i, p := range paths {
		calls[i] = getPath(c, p)
	}
	reads := len(ops)
	if o.mix == "mixed" {
		var seq atomic.Int64
		ops = append(ops, "POST /contacts/add")
		calls = append(calls, func(ctx context.Context) (int, error) {
			code, _, err := c.Raw(ctx, "POST", "/contacts/add", url.Values{"contact_type_id": {fmt.Sprint(typeID)},
				"email": {fmt.Sprintf("load%d-%d@load.example", time.Now().UnixNano(), seq.Add(1))}, "first_name": {"Load"}, "country": {"276"}})
			return code, err
		})
	}
	return &mix{ops: ops, next: func(i int64, _ *rand.Rand, _ float64) (int, call) {
		k := int(i % int64(reads))
		if len(ops) > reads && i%5 == 0 {
			k = reads
		}
		return k, calls[k]
	}}, nil
}

// result is what one kind of request got.
type result struct {
	mu        sync.Mutex
	lat       []time.Duration
	errs, bad atomic.Int64 // transport errors; answers other than 200
	server    atomic.Int64 // of those, 5xx
}

// drive runs o.conns clients for o.dur, prints the table and answers how
// long it took and how many requests got an answer other than 200 or none.
func drive(ctx context.Context, m *mix, o options) (time.Duration, int64) {
	results := make([]*result, len(m.ops))
	for i := range results {
		results[i] = &result{}
	}
	var seq atomic.Int64
	loadBefore := loadAverage()
	start := time.Now()
	deadline := start.Add(o.dur)
	var wg sync.WaitGroup
	for g := range o.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(o.seed, uint64(g)))
			for {
				now := time.Now()
				if !now.Before(deadline) {
					return
				}
				k, do := m.next(seq.Add(1), rng, float64(now.Sub(start))/float64(o.dur))
				t := time.Now()
				code, err := do(ctx)
				took := time.Since(t)
				r := results[k]
				switch {
				case err != nil:
					r.errs.Add(1)
				case code != 200:
					r.bad.Add(1)
					if code >= 500 {
						r.server.Add(1)
					}
				}
				r.mu.Lock()
				r.lat = append(r.lat, took)
				r.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start) // the requests under way at the deadline included
	fmt.Printf("%d clients, %v (%.1f s with the last answers), mix %s; load average %s before, %s after\n",
		o.conns, o.dur, wall.Seconds(), o.mix, loadBefore, loadAverage())
	fmt.Printf("%-34s %7s %7s %9s %9s %9s %5s %6s %6s\n", "request", "count", "req/s", "p50", "p99", "max", "5xx", "non200", "errors")
	var all []time.Duration
	var server, bad, errs int64
	for k, r := range results {
		if len(r.lat) == 0 {
			continue
		}
		all = append(all, r.lat...)
		server, bad, errs = server+r.server.Load(), bad+r.bad.Load(), errs+r.errs.Load()
		printRow(m.ops[k], r.lat, wall, r.server.Load(), r.bad.Load(), r.errs.Load())
	}
	printRow("all", all, wall, server, bad, errs)
	return wall, bad + errs
}

// loadAverage is the machine's one-minute load average ("?" where unknown).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func printRow(name string, lat []time.Duration, wall time.Duration, server, bad, errs int64) {
	slices.Sort(lat)
	q := func(p int) time.Duration { return lat[min(len(lat)-1, len(lat)*p/100)].Round(100 * time.Microsecond) }
	fmt.Printf("%-34s %7d %7.1f %9s %9s %9s %5d %6d %6d\n", name, len(lat), float64(len(lat))/wall.Seconds(),
		q(50), q(99), lat[len(lat)-1].Round(100*time.Microsecond), server, bad, errs)
}

// seedType makes a contact type with n contacts by CSV upload (header, then
// row(i) for each) and answers its id.
func seedType(ctx context.Context, c *apiclient.Client, n int, header string, row func(i int) string) (int64, error) {
	return c.ContactType(ctx, fmt.Sprintf("load %d", time.Now().UnixNano()), func(w *bufio.Writer) {
		w.WriteString(header)
		for i := range n {
			w.WriteString(row(i))
		}
	})
}
