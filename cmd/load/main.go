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
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type client struct {
	base, public, secret string
	http                 *http.Client
}

func (c *client) do(ctx context.Context, method, path string, form url.Values) (int, []byte, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("PublicKey", c.public)
	req.Header.Set("SecretKey", c.secret)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// op is one kind of request the load makes.
type op struct {
	name  string
	write bool
	run   func(ctx context.Context, c *client, i int64) (int, error)
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
	c := &client{base: strings.TrimRight(*base, "/"), public: *public, secret: *secret,
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns}}}
	ctx := context.Background()
	typeID, err := seed(ctx, c, *contacts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load: seeding:", err)
		os.Exit(1)
	}
	reads := []op{
		{name: "GET /contacts-type", run: get("/api/contacts-type")},
		{name: "GET /contacts/list?per_page=50", run: get("/api/contacts/list?per_page=50")},
		{name: "GET /contacts-type/view", run: get(fmt.Sprintf("/api/contacts-type/view?contact_type_id=%d", typeID))},
		{name: "GET /automations", run: get("/api/automations")},
	}
	writes := []op{
		{name: "POST /contacts/add", write: true, run: func(ctx context.Context, c *client, i int64) (int, error) {
			code, _, err := c.do(ctx, "POST", "/api/contacts/add", url.Values{"contact_type_id": {fmt.Sprint(typeID)},
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

func get(path string) func(context.Context, *client, int64) (int, error) {
	return func(ctx context.Context, c *client, _ int64) (int, error) {
		code, _, err := c.do(ctx, "GET", path, nil)
		return code, err
	}
}

// seed makes a contact type with n contacts by CSV upload and answers its id.
func seed(ctx context.Context, c *client, n int) (int64, error) {
	name := fmt.Sprintf("load %d", time.Now().UnixNano())
	if code, b, err := c.do(ctx, "POST", "/api/contacts-type/add", url.Values{"name": {name}}); err != nil || code != 200 {
		return 0, fmt.Errorf("contact type: %d %s %v", code, b, err)
	}
	code, b, err := c.do(ctx, "GET", "/api/contacts-type", nil)
	if err != nil || code != 200 {
		return 0, fmt.Errorf("contact types: %d %v", code, err)
	}
	var list struct {
		Message struct {
			ContactTypes []struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			} `json:"contactTypes"`
		} `json:"message"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return 0, err
	}
	var id int64
	for _, t := range list.Message.ContactTypes {
		if t.Name == name {
			id = t.ID
		}
	}
	if id == 0 {
		return 0, fmt.Errorf("the new contact type is not listed: %s", b)
	}
	var csv bytes.Buffer
	csv.WriteString("email,first_name\n")
	for i := range n {
		fmt.Fprintf(&csv, "seed%d@load.example,Seed%d\n", i, i)
	}
	var body bytes.Buffer
	w := multipartWriter(&body, id, csv.Bytes())
	req, _ := http.NewRequestWithContext(ctx, "POST", c.base+"/api/contacts/upload-csv", &body)
	req.Header.Set("Content-Type", w)
	req.Header.Set("PublicKey", c.public)
	req.Header.Set("SecretKey", c.secret)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("csv upload: %d %s", resp.StatusCode, b)
	}
	return id, nil
}
