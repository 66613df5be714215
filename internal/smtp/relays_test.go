package smtp_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"
	"github.com/redis/go-redis/v9"

	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
)

// relayURL is SMTP_URL's entry for a test server.
func relayURL(s *smtptest.Server, query string) string {
	return "smtp://" + s.Addr + "?pool=4&" + query
}

// relaysOf parses raw and makes its relays, closed when t ends.
func relaysOf(t *testing.T, raw string, pace smtp.RelayPace) *smtp.Relays {
	t.Helper()
	cfgs, err := smtp.ParseURLs(raw)
	if err != nil {
		t.Fatal(err)
	}
	rs := smtp.NewRelays(cfgs, pace)
	t.Cleanup(func() { rs.Close() })
	return rs
}

// sendThrough sends n mails to rcpt<i>@<domain> through tr, 16 at a time,
// calling between(i) before the i-th; it fails the test on any mail not
// accepted.
func sendThrough(t *testing.T, tr smtp.Transport, n int, route func(i int) smtp.Route, between func(i int)) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if between != nil {
					between(i)
				}
				m := &smtp.Message{From: "news@shop.example", To: fmt.Sprintf("rcpt%d@example.com", i),
					Data: []byte("Subject: hi\r\n\r\nhello\r\n"), Route: route(i)}
				if res := tr.Send(context.Background(), m); res.Class != smtp.Accepted {
					t.Errorf("mail %d: %v at %v: %v", i, res.Class, res.Stage, res.Err)
				}
			}
		})
	}
	wg.Wait()
}

func noRoute(int) smtp.Route { return smtp.Route{} }

// The relays share the mail by their weights, to the mail.
func TestRelaysSplitByWeight(t *testing.T) {
	a, b, c := smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{})
	rs := relaysOf(t, relayURL(a, "name=a&weight=1")+" "+relayURL(b, "name=b&weight=2")+"\n"+relayURL(c, "name=c&weight=3"), nil)
	sendThrough(t, rs, 600, noRoute, nil)
	if got := [3]int{a.Count(), b.Count(), c.Count()}; got != [3]int{100, 200, 300} {
		t.Fatalf("600 mails over weights 1, 2, 3 went %v, want [100 200 300]", got)
	}
	stats := rs.Stats()
	for i, want := range []int64{100, 200, 300} {
		if stats[i].Sent != want || stats[i].Out || stats[i].Failovers != 0 {
			t.Errorf("relay %s: %+v, want %d sent, in, no failover", stats[i].Name, stats[i], want)
		}
	}
}

// A relay that goes away mid-send is taken out and its mails go to the
// others: every mail delivered once, none failed, the rest split by the
// others' weights.
func TestRelaysFailover(t *testing.T) {
	a, b, c := smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{})
	rs := relaysOf(t, relayURL(a, "name=a")+" "+relayURL(b, "name=b")+" "+relayURL(c, "name=c"), nil)
	const n = 3000
	var once sync.Once
	sendThrough(t, rs, n, noRoute, func(i int) {
		if i == 900 {
			once.Do(b.GoAway)
		}
	})
	total := a.Count() + b.Count() + c.Count()
	if total != n {
		t.Fatalf("%d mails received of %d (a %d, b %d, c %d)", total, n, a.Count(), b.Count(), c.Count())
	}
	seen := map[string]int{}
	for _, s := range []*smtptest.Server{a, b, c} {
		for _, m := range s.Messages() {
			for _, to := range m.To {
				seen[to]++
			}
		}
	}
	for to, k := range seen {
		if k != 1 {
			t.Errorf("%s received %d times", to, k)
		}
	}
	if len(seen) != n {
		t.Errorf("%d recipients received, want %d", len(seen), n)
	}
	// b took about a third of the first 900 and nothing after; a and c
	// share the rest evenly.
	if b.Count() < 250 || b.Count() > 350 {
		t.Errorf("b, gone after mail 900, took %d", b.Count())
	}
	if d := a.Count() - c.Count(); d < -n/50 || d > n/50 {
		t.Errorf("a took %d and c %d: not an even split", a.Count(), c.Count())
	}
	st := rs.Stats()
	if !st[1].Out || st[1].Failovers == 0 || st[0].Out || st[2].Out {
		t.Errorf("after b went away: %+v", st)
	}
}

// A mail goes to the relay its send names, else its sender domain's, else
// its recipient provider's, else to the relays without rules; a backup
// (weight 0) only when no other takes mail; a route whose relays are out
// goes to the others.
func TestRelaysRoute(t *testing.T) {
	general, brand, gmail, pinned, backup := smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{}),
		smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{})
	rs := relaysOf(t, strings.Join([]string{
		relayURL(general, "name=general"),
		relayURL(brand, "name=brand&senders=Brand.example,other.example"),
		relayURL(gmail, "name=gmail-pool&providers=gmail"),
		relayURL(pinned, "name=pinned&weight=0"),
		relayURL(backup, "name=backup&weight=0"),
	}, " "), nil)
	routes := []smtp.Route{
		{},                              // general
		{SenderDomain: "brand.example"}, // brand
		{Provider: "gmail"},             // gmail-pool
		{SenderDomain: "brand.example", Provider: "gmail"}, // brand: the sender's rule first
		{Relay: "pinned", Provider: "gmail"},               // pinned: the send's relay first
		{Relay: "nowhere", Provider: "yahoo"},              // general: an unknown relay is no route
	}
	want := []*smtptest.Server{general, brand, gmail, brand, pinned, general}
	for i, r := range routes {
		before := want[i].Count()
		sendThrough(t, rs, 1, func(int) smtp.Route { return r }, nil)
		if want[i].Count() != before+1 {
			t.Errorf("route %+v did not go to relay %d", r, i)
		}
	}
	if backup.Count() != 0 {
		t.Errorf("the backup took %d mails while the others were up", backup.Count())
	}
	// The brand relay goes away: its mails go to the general one.
	brand.GoAway()
	before := general.Count()
	sendThrough(t, rs, 20, func(int) smtp.Route { return smtp.Route{SenderDomain: "brand.example"} }, nil)
	if general.Count() != before+20 {
		t.Errorf("with brand gone, general took %d of its 20 mails", general.Count()-before)
	}
	// Every relay but the backup gone: the backup takes the mail.
	general.GoAway()
	gmail.GoAway()
	pinned.GoAway()
	sendThrough(t, rs, 30, noRoute, nil)
	if backup.Count() != 30 {
		t.Errorf("with the others gone, the backup took %d of 30", backup.Count())
	}
}

// With every relay gone a mail fails before its recipient (not tried), at
// once while they back off, and a relay is tried again once its back-off
// ends.
func TestRelaysAllOut(t *testing.T) {
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	rs := relaysOf(t, "smtp://"+closed()+"?name=x smtp://"+closed()+"?name=y", nil)
	rs.BackOff, rs.MaxBackOff = 50*time.Millisecond, time.Second
	m := &smtp.Message{From: "a@shop.example", To: "b@example.com", Data: []byte("\r\nhi\r\n")}
	res := rs.Send(context.Background(), m)
	if res.Class != smtp.Temporary || res.Stage != smtp.StageConnect || !strings.Contains(res.Err.Error(), "relay y") {
		t.Fatalf("both relays refused: %+v", res)
	}
	res = rs.Send(context.Background(), m)
	if res.Err != smtp.ErrNoRelay {
		t.Fatalf("while both back off: %+v, want ErrNoRelay", res)
	}
	st := rs.Stats()
	if st[0].Pool.Dials != 1 || st[1].Pool.Dials != 1 {
		t.Fatalf("backing off, the relays were dialled again: %+v", st)
	}
	time.Sleep(60 * time.Millisecond)
	rs.Send(context.Background(), m)
	if st := rs.Stats(); st[0].Pool.Dials != 2 || st[1].Pool.Dials != 2 {
		t.Fatalf("after the back-off the relays were not tried again: %+v", st)
	}
	// Failing again, the back-off doubled: 50 ms later they are still out.
	time.Sleep(60 * time.Millisecond)
	if res := rs.Send(context.Background(), m); res.Err != smtp.ErrNoRelay {
		t.Fatalf("the back-off did not double: %+v", res)
	}
}

// A relay's rate holds across Relays sharing its Redis buckets (two
// workers), and the mails over it go to the other relay.
func TestRelaysRate(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 12})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis: %v", err)
	}
	pace := ratelimit.NewRelays(rdb, "test:relay:"+time.Now().Format("150405.000000")+":")
	slow, fast := smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{})
	raw := relayURL(slow, "name=slow&rate=20") + " " + relayURL(fast, "name=fast")
	w1, w2 := relaysOf(t, raw, pace), relaysOf(t, raw, pace)
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range []*smtp.Relays{w1, w2} {
		wg.Go(func() { sendThrough(t, w, 400, noRoute, nil) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	if slow.Count()+fast.Count() != 800 {
		t.Fatalf("%d + %d mails of 800", slow.Count(), fast.Count())
	}
	// At most the burst (20) and 20 a second since.
	if limit := 20 + int(20*elapsed.Seconds()) + 1; slow.Count() > limit {
		t.Fatalf("the relay of rate 20 took %d mails in %s (at most %d)", slow.Count(), elapsed, limit)
	}
	if slow.Count() == 0 {
		t.Fatal("the rated relay took no mail")
	}
	// Only the rated relay: the mails wait for the rate, none fails.
	only := relaysOf(t, relayURL(slow, "name=only&rate=20"), pace)
	start, before := time.Now(), slow.Count()
	sendThrough(t, only, 50, noRoute, nil)
	if got := slow.Count() - before; got != 50 {
		t.Fatalf("the only relay took %d of 50", got)
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Fatalf("50 mails at 20 a second (burst 20) went in %s", elapsed)
	}
}

// SMTP_URL's forms, and what it refuses.
func TestParseURLs(t *testing.T) {
	cfgs, err := smtp.ParseURLs("smtp://mx1.relay.example:2525?pool=4&weight=3&rate=100&senders=a.example,B.example&providers=gmail,yahoo  smtps://u:p@mx2.relay.example?name=second&weight=0")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 2 || cfgs[0].Name != "mx1" || cfgs[0].Weight != 3 || cfgs[0].Rate != 100 || cfgs[0].Size != 4 ||
		cfgs[0].Addr != "mx1.relay.example:2525" || strings.Join(cfgs[0].Senders, " ") != "a.example b.example" ||
		strings.Join(cfgs[0].Providers, " ") != "gmail yahoo" {
		t.Errorf("first relay: %+v", cfgs[0])
	}
	if c := cfgs[1]; c.Name != "second" || c.Weight != 0 || c.Security != smtp.TLS || c.Username != "u" || c.Addr != "mx2.relay.example:465" {
		t.Errorf("second relay: %+v", c)
	}
	if v6, err := smtp.ParseURLs("smtp://[::1]:2525 smtp://10.0.0.7?name=second"); err != nil || v6[0].Addr != "[::1]:2525" ||
		v6[0].Name != "relay" || v6[1].Addr != "10.0.0.7:25" {
		t.Errorf("an IPv6 relay and an IP: %+v %v", v6, err)
	}
	for raw, want := range map[string]string{
		"":                                   "SMTP_URL: no relay",
		"smtp://a.example?weight=0":          "SMTP_URL: every relay has weight=0; at least one must take mail",
		"smtp://a.example smtp://a.example":  `SMTP_URL relay 2: the name "a" is taken by another relay (set name=)`,
		"smtp://a.example?weight=x":          `SMTP_URL: weight="x" is not a number from 0 to 1000`,
		"smtp://a.example?rate=-1":           `SMTP_URL: rate="-1" is not a number from 0 to 1000000`,
		"smtp://a.example?name=A%20B":        `SMTP_URL: name="A B" is not a relay name (a-z, 0-9, - and _, up to 63)`,
		"smtp://a.example?providers=hotmail": `SMTP_URL: providers="hotmail": "hotmail" is not one of gmail, microsoft, yahoo, apple, others`,
		"smtp://a.example?senders=x@y.z":     `SMTP_URL: senders="x@y.z": "x@y.z" is not a domain`,
		"smtp://a.example?senders=a..b":      `SMTP_URL: senders="a..b": "a..b" is not a domain`,
		"smtp://a.example:0":                 `SMTP_URL: port "0" is not a number from 1 to 65535`,
		"smtp://a.example/x":                 `SMTP_URL: a path or fragment after the host (a password holding /, ? or # must be percent-encoded)`,
		"smtp://a.example http://b.example":  `SMTP_URL relay 2: SMTP_URL: scheme "http" is not smtp or smtps`,
	} {
		if _, err := smtp.ParseURLs(raw); err == nil || err.Error() != want {
			t.Errorf("ParseURLs(%q) = %v, want %s", raw, err, want)
		}
	}
}

// A relay refusing one sender at MAIL FROM (a 5xx, or a 4xx other than
// 421) stays in for the other senders' mail; the refused mail goes to the
// next relay, and fails only where every relay refuses it.
func TestRelaysSenderRefusal(t *testing.T) {
	picky := smtptest.New(t, smtptest.Options{Sender: func(from string) error {
		if strings.HasSuffix(from, "@bad.example") {
			return smtptest.Permanent("5.7.1 sender address rejected")
		}
		return nil
	}})
	other := smtptest.New(t, smtptest.Options{})
	rs := relaysOf(t, relayURL(picky, "name=picky&weight=1000")+" "+relayURL(other, "name=other&weight=1"), nil)
	bad := &smtp.Message{From: "news@bad.example", To: "a@example.com", Data: []byte("\r\nhi\r\n")}
	if res := rs.Send(context.Background(), bad); res.Class != smtp.Accepted || other.Count() != 1 {
		t.Fatalf("the refused sender's mail: %+v, other took %d", res, other.Count())
	}
	good := &smtp.Message{From: "news@good.example", To: "b@example.com", Data: []byte("\r\nhi\r\n")}
	for range 10 {
		if res := rs.Send(context.Background(), good); res.Class != smtp.Accepted {
			t.Fatalf("a good sender's mail after the refusal: %+v", res)
		}
	}
	if st := rs.Stats(); st[0].Out || st[1].Out || picky.Count() < 9 {
		t.Fatalf("after one sender's refusal: %+v, picky took %d of 10", st, picky.Count())
	}
	// Refused everywhere: the refusal is the answer, no relay goes out.
	only := relaysOf(t, relayURL(picky, "name=only-picky")+" "+relayURL(picky, "name=picky-too"), nil)
	res := only.Send(context.Background(), bad)
	if res.Class != smtp.Permanent || res.Stage != smtp.StageSender || res.Code != 550 {
		t.Fatalf("refused by every relay: %+v", res)
	}
	if st := only.Stats(); st[0].Out || st[1].Out {
		t.Fatalf("a sender's refusal took relays out: %+v", st)
	}
	// 530 (authentication required) and 452 (no storage) refuse every
	// sender alike: the relay's trouble, it goes out.
	for _, code := range []int{530, 452} {
		refusing := smtptest.New(t, smtptest.Options{Sender: func(string) error {
			return &gosmtp.SMTPError{Code: code, EnhancedCode: gosmtp.EnhancedCode{5, 7, 0}, Message: "no"}
		}})
		rs := relaysOf(t, relayURL(refusing, "name=refusing&weight=1000")+" "+relayURL(other, "name=fallback"), nil)
		if res := rs.Send(context.Background(), good); res.Class != smtp.Accepted {
			t.Fatalf("%d at MAIL FROM: the mail did not fail over: %+v", code, res)
		}
		if st := rs.Stats(); !st[0].Out {
			t.Fatalf("%d at MAIL FROM left the relay in: %+v", code, st[0])
		}
	}
}

// One outage is one step of back-off however many mails were on their way
// to the relay, and a mail it accepts again resets it.
func TestRelaysBackOffSteps(t *testing.T) {
	var closing atomic.Bool
	flaky := smtptest.New(t, smtptest.Options{Sender: func(string) error {
		if closing.Load() {
			return smtptest.Closing("try later")
		}
		return nil
	}})
	steady := smtptest.New(t, smtptest.Options{})
	rs := relaysOf(t, relayURL(flaky, "name=flaky&weight=1000&pool=16")+" "+relayURL(steady, "name=steady&weight=1"), nil)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	smtp.SetNow(rs, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	outFor := func() time.Duration {
		until := rs.Stats()[0].OutUntil // Stats reads the clock
		mu.Lock()
		defer mu.Unlock()
		return until.Sub(now)
	}
	sendThrough(t, rs, 32, noRoute, nil) // the pool's connections open
	closing.Store(true)
	sendThrough(t, rs, 32, noRoute, nil) // 16 at once find it closing
	if d := outFor(); d != 5*time.Second {
		t.Fatalf("one outage met by many mails backs off %s, want 5s", d)
	}
	advance(6 * time.Second)
	sendThrough(t, rs, 8, noRoute, nil) // still closing: the second step
	if d := outFor(); d != 10*time.Second {
		t.Fatalf("the second outage in a row backs off %s, want 10s", d)
	}
	advance(11 * time.Second)
	closing.Store(false)
	sendThrough(t, rs, 8, noRoute, nil) // back: it takes mail, the count resets
	closing.Store(true)
	sendThrough(t, rs, 8, noRoute, nil)
	if d := outFor(); d != 5*time.Second {
		t.Fatalf("an outage after the relay took mail again backs off %s, want 5s", d)
	}
}

// Mails waiting for a connection of a relay that never answers go to the
// next relay once it is out, without dialling it each.
func TestRelaysSilentRelay(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	good := smtptest.New(t, smtptest.Options{})
	cfgs, err := smtp.ParseURLs("smtp://" + l.Addr().String() + "?name=silent&pool=4&weight=1000 " + relayURL(good, "name=good"))
	if err != nil {
		t.Fatal(err)
	}
	cfgs[0].Timeout = 300 * time.Millisecond
	rs := smtp.NewRelays(cfgs, nil)
	t.Cleanup(func() { rs.Close() })
	sendThrough(t, rs, 100, noRoute, nil)
	if good.Count() != 100 {
		t.Fatalf("the answering relay took %d of 100", good.Count())
	}
	if st := rs.Stats(); st[0].Pool.Dials > 8 {
		t.Fatalf("the silent relay was dialled %d times for 100 mails (pool 4)", st[0].Pool.Dials)
	}
}

// Kept connections the server closed meanwhile (its idle timeout) fail
// nothing: the mail goes on a fresh connection, and the relay stays in.
func TestStaleConnections(t *testing.T) {
	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	t.Cleanup(func() { pool.Close() })
	rs := relaysOf(t, relayURL(s, "name=only&rate=1000")+" "+relayURL(smtptest.New(t, smtptest.Options{}), "name=other&weight=0"), nil)
	for _, tr := range []smtp.Transport{pool, rs} {
		sendThrough(t, tr, 8, noRoute, nil)
		s.CloseConnections()
		sendThrough(t, tr, 8, noRoute, nil) // fails the test on a mail not accepted
	}
	if st := rs.Stats(); st[0].Out || st[0].Failovers != 0 {
		t.Fatalf("closed idle connections took the relay out: %+v", st[0])
	}
	if s.Count() != 32 {
		t.Fatalf("the server took %d of 32", s.Count())
	}
}

// A relay that has spent its rate holds its tier's mails until it has
// rate again: they do not go to a backup or to another tier's relay.
func TestRelaysRateWaitsInItsTier(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 12})
	t.Cleanup(func() { rdb.Close() })
	pace := ratelimit.NewRelays(rdb, "test:relaytier:"+time.Now().Format("150405.000000")+":")
	rated, backup, gmail := smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{})
	rs := relaysOf(t, relayURL(rated, "name=rated&rate=10")+" "+relayURL(backup, "name=backup&weight=0")+" "+
		relayURL(gmail, "name=gmail-pool&providers=gmail"), pace)
	start := time.Now()
	sendThrough(t, rs, 25, noRoute, nil)
	if rated.Count() != 25 || backup.Count() != 0 || gmail.Count() != 0 {
		t.Fatalf("rated %d, backup %d, gmail %d of 25", rated.Count(), backup.Count(), gmail.Count())
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Fatalf("25 mails at 10 a second (burst 10) went in %s", elapsed)
	}
	// A mail whose context ended while the pace was asked grants no one
	// else unpaced mail (it is not Redis away).
	never := smtp.NewRelays(mustParse(t, relayURL(rated, "name=never&rate=5")), neverPace{})
	t.Cleanup(func() { never.Close() })
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	never.Send(cancelled, &smtp.Message{From: "a@shop.example", To: "b@example.com", Data: []byte("\r\nhi\r\n")})
	soon, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	if res := never.Send(soon, &smtp.Message{From: "a@shop.example", To: "c@example.com", Data: []byte("\r\nhi\r\n")}); res.Class == smtp.Accepted {
		t.Fatalf("a relay whose pace grants nothing took a mail after a cancelled one: %+v", res)
	}
}

// neverPace grants nothing, and fails once the context ended.
type neverPace struct{}

func (neverPace) Take(ctx context.Context, _ string, _, _ int) (int, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	return 0, time.Hour, nil
}

func mustParse(t *testing.T, raw string) []smtp.RelayConfig {
	t.Helper()
	cfgs, err := smtp.ParseURLs(raw)
	if err != nil {
		t.Fatal(err)
	}
	return cfgs
}
