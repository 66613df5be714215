// Command load drives a running mailroom API with concurrent clients and
// reports requests per second and latency percentiles per request kind
// (docs/operations.md). It seeds what it reads through the API itself:
//
//	go run ./cmd/load -url http://localhost:8080 -public pk_… -secret sk_… -c 64 -d 20s -mix read
//
// -mix read: the contact-type list, a page of 50 contacts, a contact type's
// details, the automation list; -mix mixed: the same with one write in five (contact
// adds).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
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

// op is one kind of request the load makes.
type op struct {
	name  string
	write bool
	run   func(ctx context.Context, c *apiclient.Client, i int64) (int, error)
}

func main() {
	base := flag.String("url", "http://localhost:8080", "the API")
	public := flag.String("public", "", "an account's public key")
	secret := flag.String("secret", "", "its secret key")
	conns := flag.Int("c", 64, "concurrent clients")
	dur := flag.Duration("d", 20*time.Second, "how long")
	mix := flag.String("mix", "read", "read or mixed (one write in five)")
	contacts := flag.Int("contacts", 2000, "contacts seeded into the type the load reads")
	flag.Parse()
	if *public == "" || *secret == "" {
		fmt.Fprintln(os.Stderr, "load: -public and -secret are required (bin/api accounts create --name load)")
		os.Exit(2)
	}
	c := &apiclient.Client{Base: strings.TrimRight(*base, "/") + "/api", Public: *public, Secret: *secret,
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns}}}
	ctx := context.Background()
	typeID, err := seed(ctx, c, *contacts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load: seeding:", err)
		os.Exit(1)
	}
	reads := []op{
		{name: "GET /contacts-type", run: get("/contacts-type")},
		{name: "GET /contacts/list?per_page=50", run: get("/contacts/list?per_page=50")},
		{name: "GET /contacts-type/view", run: get(fmt.Sprintf("/contacts-type/view?contact_type_id=%d", typeID))},
		{name: "GET /automations", run: get("/automations")},
	}
	writes := []op{
		{name: "POST /contacts/add", write: true, run: func(ctx context.Context, c *apiclient.Client, i int64) (int, error) {
			code, _, err := c.Raw(ctx, "POST", "/contacts/add", url.Values{"contact_type_id": {fmt.Sprint(typeID)},
				"email": {fmt.Sprintf("load%d-%d@load.example", time.Now().UnixNano(), i)}, "first_name": {"Load"}, "country": {"276"}})
			return code, err
		}},
	}
	ops := reads
	if *mix == "mixed" {
		ops = append(slices.Clone(reads), writes...)
	}
	type result struct {
		lat  []time.Duration
		errs atomic.Int64
		bad  atomic.Int64
		mu   sync.Mutex
	}
	results := make([]*result, len(ops))
	for i := range results {
		results[i] = &result{}
	}
	var seq atomic.Int64
	deadline := time.Now().Add(*dur)
	var wg sync.WaitGroup
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				i := seq.Add(1)
				k := int(i % int64(len(reads)))
				if *mix == "mixed" && i%5 == 0 {
					k = len(reads) + int(i/5%int64(len(writes)))
				}
				start := time.Now()
				code, err := ops[k].run(ctx, c, i)
				took := time.Since(start)
				r := results[k]
				switch {
				case err != nil:
					r.errs.Add(1)
				case code != 200:
					r.bad.Add(1)
				}
				r.mu.Lock()
				r.lat = append(r.lat, took)
				r.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	total := 0
	fmt.Printf("%d clients, %v, mix %s\n", *conns, *dur, *mix)
	fmt.Printf("%-32s %8s %9s %9s %9s %6s %6s\n", "request", "count", "req/s", "p50", "p99", "non200", "errors")
	for k, r := range results {
		if len(r.lat) == 0 {
			continue
		}
		slices.Sort(r.lat)
		total += len(r.lat)
		fmt.Printf("%-32s %8d %9.0f %9s %9s %6d %6d\n", ops[k].name, len(r.lat), float64(len(r.lat))/dur.Seconds(),
			r.lat[len(r.lat)/2].Round(10*time.Microsecond), r.lat[len(r.lat)*99/100].Round(10*time.Microsecond), r.bad.Load(), r.errs.Load())
	}
	fmt.Printf("%-32s %8d %9.0f\n", "all", total, float64(total)/dur.Seconds())
}

func get(path string) func(context.Context, *apiclient.Client, int64) (int, error) {
	return func(ctx context.Context, c *apiclient.Client, _ int64) (int, error) {
		code, _, err := c.Raw(ctx, "GET", path, nil)
		return code, err
	}
}

// seed makes a contact type with n contacts by CSV upload and answers its id.
func seed(ctx context.Context, c *apiclient.Client, n int) (int64, error) {
	return c.ContactType(ctx, fmt.Sprintf("load %d", time.Now().UnixNano()), func(w *bufio.Writer) {
		w.WriteString("email,first_name\n")
		for i := range n {
			fmt.Fprintf(w, "seed%d@load.example,Seed%d\n", i, i)
		}
	})
}
