package inbound

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/smtp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
)

// dialFrom opens a TCP connection to addr from the loopback address
// from (127.0.0.0/8 is all loopback on Linux), closed when the test ends.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// deliverWithin is smtptest.Deliver from 127.0.0.1, failing the test if
// it has not answered by the deadline of ctx.
func deliverWithin(ctx context.Context, t *testing.T, addr, rcpt string, data []byte) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- smtptest.Deliver(addr, "", []string{rcpt}, data) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		t.Fatalf("no answer within the deadline (%v): the listener stalls", ctx.Err())
		return nil
	}
}

// 100 connections from one address that never say a word do not keep
// a bounce from another sender out: it is greeted, answered 250 and
// recorded at once (the deadline is generous: it only tells "at once"
// from "when the idle ones time out", a minute later).
func TestIdleConnectionsDoNotStallIntake(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net")
	_, addr := listen(t, d, f, Config{})
	for range 100 {
		dialFrom(t, "127.0.0.2", addr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v := f.values("ann@example.net")
	if err := deliverWithin(ctx, t, addr, v["{{VERP}}"], sample(t, "dsn-postfix-5.1.1.eml", v)); err != nil {
		t.Fatalf("the bounce: %v, want 250", err)
	}
	if status := scalar[int16](t, d, `SELECT status FROM deliveries WHERE send_id = $1 AND id = $2`,
		f.send, f.ids["ann@example.net"]); status != int16(mail.DeliveryBounced) {
		t.Errorf("delivery status %d, want bounced (%d)", status, mail.DeliveryBounced)
	}
}

// logLines collects a server's JSON log lines.
type logLines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// with are the lines whose msg is msg.
func (l *logLines) with(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(l.b.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

const cutLine = "inbound SMTP connections cut or refused"

// cuts are the counts of the cutLine lines logged, summed by reason.
func (l *logLines) cuts(t *testing.T) (n [cutReasons]float64) {
	t.Helper()
	for _, line := range l.with(t, cutLine) {
		for i, name := range cutNames {
			n[i] += line[name].(float64)
		}
	}
	return n
}

// helloFrom connects to addr from the address from and says EHLO, all
// within the deadline dl.
func helloFrom(t *testing.T, from, addr string, dl time.Time) (*smtp.Client, net.Conn) {
	t.Helper()
	c := dialFrom(t, from, addr)
	c.SetDeadline(dl)
	cl, err := smtp.NewClient(c, "127.0.0.1")
	if err != nil {
		t.Fatalf("%s: %v", from, err)
	}
	if err := cl.Hello("client.example"); err != nil {
		t.Fatalf("%s: %v", from, err)
	}
	return cl, c
}

// observed makes a server log into lines and read its clock from now
// (unix seconds), so the once-a-minute line is tested without waiting.
func observed(lines *logLines, now *atomic.Int64) func(*Server) {
	now.Store(1_000_000)
	return func(s *Server) {
		s.log = slog.New(slog.NewJSONHandler(lines, nil))
		s.now = func() time.Time { return time.Unix(now.Load(), 0) }
	}
}

// readLine reads one reply line of c, by the deadline of ctx.
func readLine(ctx context.Context, t *testing.T, r *bufio.Reader, c net.Conn) string {
	t.Helper()
	dl, _ := ctx.Deadline()
	c.SetReadDeadline(dl)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a reply from %s: %v (so far %q)", c.LocalAddr(), err, line)
	}
	return strings.TrimRight(line, "\r\n")
}

// closedBy reports whether the server closed c (EOF) by the deadline of
// ctx.
func closedBy(ctx context.Context, r *bufio.Reader, c net.Conn) bool {
	dl, _ := ctx.Deadline()
	c.SetReadDeadline(dl)
	_, err := r.ReadString('\n')
	return errors.Is(err, io.EOF)
}

// A connection past MaxConnsPerIP from its address is answered 421 at
// once and closed while other addresses are served; past MaxConns a
// newcomer takes the slot of a silent connection (of the address holding
// the most), which is answered 421 and closed. Both are counted in the
// once-a-minute log line.
func TestConnectionCaps(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net")
	var lines logLines
	var now atomic.Int64
	s, addr := listen(t, d, f, Config{MaxConns: 5, MaxConnsPerIP: 2}, observed(&lines, &now), noGrace)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type conn struct {
		r *bufio.Reader
		c net.Conn
	}
	greet := func(from string) (string, conn) {
		c := dialFrom(t, from, addr)
		r := bufio.NewReader(c)
		return readLine(ctx, t, r, c), conn{r, c}
	}
	greeted := func(from string) conn {
		t.Helper()
		g, c := greet(from)
		if g != "220 "+bounceDomain+" ESMTP Service Ready" {
			t.Fatalf("%s: greeting %q", from, g)
		}
		return c
	}

	first, second := greeted("127.0.0.2"), greeted("127.0.0.2")
	g, c := greet("127.0.0.2")
	if want := "421 4.7.0 " + bounceDomain + " Too many connections from your address, try again later"; g != want {
		t.Errorf("third connection from one address: %q, want %q", g, want)
	}
	if !closedBy(ctx, c.r, c.c) {
		t.Error("the refused connection is not closed")
	}

	// Another address is served, and a bounce delivered; its client stays
	// connected (3 of 5 slots).
	client, err := smtp.NewClient(dialFrom(t, "127.0.0.1", addr), "127.0.0.1")
	if err != nil {
		t.Fatalf("127.0.0.1 beside two connections of 127.0.0.2: %v", err)
	}
	v := f.values("ann@example.net")
	if err := client.Hello("client.example"); err != nil {
		t.Fatal(err)
	}
	if err := client.Mail(""); err != nil {
		t.Fatal(err)
	}
	bounceAnn(t, d, f, client, v)

	third := greeted("127.0.0.3")
	greeted("127.0.0.3")
	evicted := func(c conn, which string) {
		t.Helper()
		if g, want := readLine(ctx, t, c.r, c.c), "421 4.3.2 "+bounceDomain+" Too many connections, closing an idle one, try again later"; g != want {
			t.Errorf("%s: %q, want %q", which, g, want)
		}
		if !closedBy(ctx, c.r, c.c) {
			t.Errorf("%s is not closed", which)
		}
	}
	// A sixth is served: 127.0.0.2 and .3 hold two silent connections
	// each, so the oldest of them, 127.0.0.2's first, makes way.
	greeted("127.0.0.4")
	evicted(first, "127.0.0.2's first connection")
	// A seventh: now 127.0.0.3 holds the most, so its oldest makes way,
	// not 127.0.0.2's second, older still.
	greeted("127.0.0.5")
	evicted(third, "127.0.0.3's first connection")

	// The first refusal is logged at once, the rest a minute later.
	got := lines.with(t, cutLine)
	if len(got) != 1 || got[0]["over_per_ip"] != 1.0 || got[0]["over_total"] != 0.0 || got[0]["last_remote"] != "127.0.0.2" {
		t.Fatalf("log lines %v: want one, over_per_ip 1", got)
	}
	now.Add(30)
	s.reportCuts()
	if got := lines.with(t, cutLine); len(got) != 1 {
		t.Fatalf("log lines %v: want still one within the minute", got)
	}
	now.Add(31)
	s.reportCuts()
	got = lines.with(t, cutLine)
	if len(got) != 2 || got[1]["over_per_ip"] != 0.0 || got[1]["evicted_silent"] != 2.0 || got[1]["over_total"] != 0.0 ||
		got[1]["last_remote"] != "127.0.0.3" || got[1]["max_conns"] != 5.0 || got[1]["max_conns_per_ip"] != 2.0 {
		t.Errorf("log lines %v: want a second, evicted_silent 2", got)
	}
	if err := client.Noop(); err != nil {
		t.Errorf("the client between transactions was cut while silent ones were open: %v", err)
	}
	second.c.Close()
	client.Quit()
}

// When MaxConns are open a newcomer takes the slot of a connection that
// said nothing, else of one idle between transactions (the one silent
// longest), never of one inside a transaction: when all are, it is
// answered 421, and the transactions go on.
func TestEvictionOrder(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net")
	var lines logLines
	var now atomic.Int64
	s, addr := listen(t, d, f, Config{MaxConns: 3, MaxConnsPerIP: 3}, observed(&lines, &now), noGrace)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	// client connects from from and says EHLO, and MAIL FROM if mail.
	client := func(from string, mail bool) (*smtp.Client, net.Conn) {
		t.Helper()
		cl, c := helloFrom(t, from, addr, dl)
		if mail {
			if err := cl.Mail(""); err != nil {
				t.Fatalf("%s: %v", from, err)
			}
		}
		return cl, c
	}
	// evicted checks c got the eviction's 421 and was closed.
	evicted := func(c net.Conn, which string) {
		t.Helper()
		r := bufio.NewReader(c)
		// A client that said EHLO reads its reply lines first.
		for {
			line := readLine(ctx, t, r, c)
			if strings.HasPrefix(line, "421 ") {
				if want := "421 4.3.2 " + bounceDomain + " Too many connections, closing an idle one, try again later"; line != want {
					t.Errorf("%s: %q, want %q", which, line, want)
				}
				break
			}
		}
		if !closedBy(ctx, r, c) {
			t.Errorf("%s is not closed", which)
		}
	}

	inTx, _ := client("127.0.0.2", true)
	_, idleOld := client("127.0.0.3", false)
	idleNew, idleNewConn := client("127.0.0.4", false)
	if err := idleNew.Noop(); err != nil {
		t.Fatal(err)
	}

	// A fourth, silent: the one idle longest between transactions makes
	// way.
	silent := dialFrom(t, "127.0.0.5", addr)
	sr := bufio.NewReader(silent)
	if g := readLine(ctx, t, sr, silent); !strings.HasPrefix(g, "220 ") {
		t.Fatalf("a fourth connection: %q", g)
	}
	evicted(idleOld, "the connection idle longest")

	// A fifth: the silent one makes way, though one is idle longer.
	_, _ = client("127.0.0.6", true)
	evicted(silent, "the silent connection")
	// A sixth: the other idle one.
	_, _ = client("127.0.0.7", true)
	evicted(idleNewConn, "the other idle connection")

	// All three are in a transaction: a seventh is refused.
	refused := dialFrom(t, "127.0.0.8", addr)
	rr := bufio.NewReader(refused)
	if g, want := readLine(ctx, t, rr, refused), "421 4.3.2 "+bounceDomain+" Too many connections, try again later"; g != want {
		t.Errorf("past MaxConns with every connection in a transaction: %q, want %q", g, want)
	}
	if !closedBy(ctx, rr, refused) {
		t.Error("the refused connection is not closed")
	}

	// The transaction goes on: the bounce is answered 250 and recorded.
	v := f.values("ann@example.net")
	bounceAnn(t, d, f, inTx, v)

	now.Add(60)
	s.reportCuts()
	n := lines.cuts(t)
	if n[cutEvictedIdle] != 2 || n[cutEvictedSilent] != 1 || n[cutTotal] != 1 {
		t.Errorf("counted %v (%v): want evicted_idle 2, evicted_silent 1, over_total 1", n, cutNames)
	}
}

// A connection that says no whole command within GreetingTimeout is cut
// (421, closed), while one that said EHLO is held to Timeout; the cuts are
// counted in a line logged at most once a minute.
func TestGreetingTimeout(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net")
	var lines logLines
	var now atomic.Int64
	s, addr := listen(t, d, f, Config{GreetingTimeout: 200 * time.Millisecond}, observed(&lines, &now))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A client that says EHLO at once, before the silent ones connect.
	talker := dialFrom(t, "127.0.0.3", addr)
	dl, _ := ctx.Deadline()
	talker.SetDeadline(dl)
	client, err := smtp.NewClient(talker, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Hello("client.example"); err != nil {
		t.Fatal(err)
	}

	silent := func(say string) {
		t.Helper()
		c := dialFrom(t, "127.0.0.2", addr)
		r := bufio.NewReader(c)
		if g := readLine(ctx, t, r, c); !strings.HasPrefix(g, "220 ") {
			t.Fatalf("greeting %q", g)
		}
		if say != "" {
			io.WriteString(c, say)
		}
		line := readLine(ctx, t, r, c)
		for say != "" && !strings.HasPrefix(line, "421 ") {
			// go-smtp (bufio.Reader.ReadLine) takes the half line read
			// by the deadline as a command, answers it, then finds the
			// deadline past.
			line = readLine(ctx, t, r, c)
		}
		if line != "421 4.4.2 Idle timeout, bye bye" {
			t.Fatalf("a connection saying %q: %q, want the idle timeout's 421", say, line)
		}
		if !closedBy(ctx, r, c) {
			t.Fatal("the idle connection is not closed")
		}
	}
	silent("")
	got := lines.with(t, cutLine)
	if len(got) != 1 || got[0]["no_command"] != 1.0 || got[0]["idle"] != 0.0 || got[0]["greeting_timeout"] != "200ms" {
		t.Fatalf("log lines %v: want one, no_command 1", got)
	}
	silent("")
	silent("EHLO half a line") // no end of line: not yet a command

	// The talker's first 200 ms are long past (it connected before the
	// first silent one, which was cut after its own 200 ms): still served.
	if err := client.Noop(); err != nil {
		t.Errorf("the client that said EHLO was cut: %v", err)
	}
	if err := client.Quit(); err != nil {
		t.Error(err)
	}

	if got := lines.with(t, cutLine); len(got) != 1 {
		t.Fatalf("log lines %v: want still one within the minute", got)
	}
	now.Add(60)
	s.reportCuts()
	got = lines.with(t, cutLine)
	if len(got) != 2 || got[1]["no_command"] != 2.0 || got[1]["idle"] != 0.0 {
		t.Errorf("log lines %v: want a second, no_command 2", got)
	}
}

// holdIdle is an attacker's connection from the loopback address from:
// it connects, reads the greeting (a 220 is signalled on greeted) and
// never says a word; the moment the server cuts or refuses it, it
// connects again, until ctx ends.
func holdIdle(ctx context.Context, from, addr string, greeted chan<- struct{}) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			continue
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		r := bufio.NewReader(c)
		line, _ := r.ReadString('\n')
		ok := strings.HasPrefix(line, "220 ")
		if ok {
			select {
			case greeted <- struct{}{}:
			default:
			}
		}
		io.Copy(io.Discard, r) // until the server closes it
		stop()
		c.Close()
		if !ok {
			// Refused: the next try at once, bar a breath for the
			// two cores the tests share.
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// deliverRetrying is smtptest.Deliver from 127.0.0.1, tried again 10 ms
// after every failure until it is answered 250 or ctx ends; it answers
// the attempts made and the last error.
func deliverRetrying(ctx context.Context, addr, rcpt string, data []byte) (attempts int, err error) {
	for ctx.Err() == nil {
		attempts++
		done := make(chan error, 1)
		go func() { done <- smtptest.Deliver(addr, "", []string{rcpt}, data) }()
		select {
		case err = <-done:
			if err == nil {
				return attempts, nil
			}
		case <-ctx.Done():
			return attempts, ctx.Err()
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return attempts, err
}

// More connections that never say a word than MaxConns, from more
// addresses than MaxConns/MaxConnsPerIP, each reconnecting the moment it
// is cut or refused (12 addresses × MaxConnsPerIP, as an attacker would
// hold the port), do not keep a bounce from another address out: its
// sender is answered 250 and the bounce recorded well before the silent
// ones' GreetingTimeout (the deadline only tells "served" from "waits for
// the silent ones to time out").
func TestIdleHoldersDoNotFillThePort(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net")
	var lines logLines
	var now atomic.Int64
	s, addr := listen(t, d, f, Config{MaxConns: 20, MaxConnsPerIP: 5, GreetingTimeout: 5 * time.Second}, observed(&lines, &now))

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	greeted := make(chan struct{}, 1000)
	for i := range 12 {
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				holdIdle(ctx, fmt.Sprintf("127.0.0.%d", 2+i), addr, greeted)
			}()
		}
	}
	// The port is full of silent connections before the bounce comes.
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	for range 20 {
		select {
		case <-greeted:
		case <-wait.Done():
			t.Fatal("the silent connections were not greeted")
		}
	}

	dl, stopDL := context.WithTimeout(ctx, 3*time.Second)
	defer stopDL()
	v := f.values("ann@example.net")
	attempts, err := deliverRetrying(dl, addr, v["{{VERP}}"], sample(t, "dsn-postfix-5.1.1.eml", v))
	if err != nil {
		t.Fatalf("the bounce: no 250 within 3 s beside 60 silent connections (%d attempts, the last: %v)", attempts, err)
	}
	t.Logf("the bounce answered 250 at attempt %d", attempts)
	if status := scalar[int16](t, d, `SELECT status FROM deliveries WHERE send_id = $1 AND id = $2`,
		f.send, f.ids["ann@example.net"]); status != int16(mail.DeliveryBounced) {
		t.Errorf("delivery status %d, want bounced (%d)", status, mail.DeliveryBounced)
	}
	now.Add(60)
	s.reportCuts()
	if lines.cuts(t)[cutEvictedSilent] == 0 {
		t.Error("no silent connection was counted as evicted")
	}
}

// Connections that say EHLO and then reset (SO_LINGER 0) are counted in
// the once-a-minute line of connections cut, not logged one by one; any
// other error go-smtp reports is counted there too and the first of each
// minute logged in full.
func TestResetsCounted(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net")
	var lines logLines
	var now atomic.Int64
	const n = 50
	resets := make(chan struct{}, n)
	s, addr := listen(t, d, f, Config{MaxConns: 2 * n, MaxConnsPerIP: 2 * n}, observed(&lines, &now), func(s *Server) {
		s.cutSeen = func(why cutReason) {
			if why == cutReset {
				resets <- struct{}{}
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for range n {
		c := dialFrom(t, "127.0.0.2", addr)
		r := bufio.NewReader(c)
		readLine(ctx, t, r, c)
		io.WriteString(c, "EHLO client.example\r\n")
		for !strings.HasPrefix(readLine(ctx, t, r, c), "250 ") {
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	for i := range n {
		select {
		case <-resets:
		case <-ctx.Done():
			t.Fatalf("%d of %d resets counted", i, n)
		}
	}
	if got := lines.with(t, "inbound SMTP"); len(got) != 0 {
		t.Errorf("%d lines for connections reset, want none: %v", len(got), got[0])
	}
	got := lines.with(t, cutLine)
	if len(got) != 1 || got[0]["reset_by_peer"] != 1.0 || got[0]["last_remote"] != "127.0.0.2" {
		t.Fatalf("log lines %v: want one, reset_by_peer 1 (the first, logged at once)", got)
	}

	// Anything else: the first line in full, the second only counted.
	s.srv.ErrorLog.Printf("panic serving %v: %v\n%s", &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 25}, "boom", "stack")
	s.srv.ErrorLog.Printf("accept error: %s; retrying in %s", errors.New("too many open files"), time.Second)
	if got := lines.with(t, "inbound SMTP"); len(got) != 1 || !strings.HasPrefix(got[0]["detail"].(string), "panic serving 192.0.2.7:25: boom") {
		t.Errorf("lines %v: want the panic's, alone", got)
	}

	now.Add(60)
	s.reportCuts()
	got = lines.with(t, cutLine)
	if len(got) != 2 || got[1]["reset_by_peer"] != float64(n-1) || got[1]["error"] != 2.0 || got[1]["last_remote"] != "192.0.2.7" {
		t.Errorf("log lines %v: want a second, reset_by_peer %d, error 2", got, n-1)
	}
}

// BenchmarkIdleConnections measures what 1,000 open connections cost the
// process (Go heap and stacks after a GC, the clients' side included,
// about 1 KB of it), silent and after EHLO: what INBOUND_MAX_CONNS costs
// when attackers fill it.
func BenchmarkIdleConnections(b *testing.B) {
	d := testdb.New(b)
	f := newFixture(b, d, "ann@example.net")
	_, addr := listen(b, d, f, Config{MaxConns: 2000, MaxConnsPerIP: 2000})
	inUse := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse + m.StackInuse
	}
	for _, ehlo := range []bool{false, true} {
		b.Run(fmt.Sprintf("ehlo=%v", ehlo), func(b *testing.B) {
			const n = 1000
			var per float64
			idle := runtime.NumGoroutine()
			for b.Loop() {
				for runtime.NumGoroutine() > idle { // the last round's connections are still ending
					time.Sleep(time.Millisecond)
				}
				before := inUse()
				cs := make([]net.Conn, n)
				for i := range cs {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						b.Fatal(err)
					}
					r := bufio.NewReader(c)
					if _, err := r.ReadString('\n'); err != nil {
						b.Fatal(err)
					}
					if ehlo {
						io.WriteString(c, "EHLO client.example\r\n")
						for line := ""; !strings.HasPrefix(line, "250 "); {
							if line, err = r.ReadString('\n'); err != nil {
								b.Fatal(err)
							}
						}
					}
					cs[i] = c
				}
				per = float64(inUse()-before) / n
				for _, c := range cs {
					c.Close()
				}
			}
			b.ReportMetric(per, "B/conn")
		})
	}
}

// bounceAnn finishes a transaction begun on c (MAIL FROM said) with ann's
// bounce to her return path: answered 250, her delivery bounced.
func bounceAnn(t *testing.T, d *postgres.DB, f *fixture, c *smtp.Client, v map[string]string) {
	t.Helper()
	if err := c.Rcpt(v["{{VERP}}"]); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	w.Write(sample(t, "dsn-postfix-5.1.1.eml", v))
	if err := w.Close(); err != nil {
		t.Fatalf("the bounce: %v, want 250", err)
	}
	if status := scalar[int16](t, d, `SELECT status FROM deliveries WHERE send_id = $1 AND id = $2`,
		f.send, f.ids["ann@example.net"]); status != int16(mail.DeliveryBounced) {
		t.Errorf("delivery status %d, want bounced (%d)", status, mail.DeliveryBounced)
	}
}

// noGrace spares no new silent connection (limitListener.grace 0), so
// the order tests see silent ones go first however new.
func noGrace(s *Server) { s.evictGrace = 0 }

// A connection a newcomer's slot was taken from begins no transaction:
// the listener marks it evicted under the lock a MAIL FROM takes, so no
// report it sends after that is acted on (the outside attack saw a 421
// come back after the data of a report already recorded, when the 421
// was written after the victim had gone on). And one in a transaction is
// never chosen.
func TestEvictedBeginsNoTransaction(t *testing.T) {
	t.Parallel()
	l := &limitListener{max: 1, perIP: 5, from: map[netip.Addr]int{}, conns: map[*limitConn]struct{}{}}
	conn := func(ip string) *limitConn {
		c := &limitConn{l: l, key: netip.MustParseAddr(ip), accepted: time.Now().Add(-time.Minute)}
		c.started.Store(true) // said EHLO: idle between transactions
		return c
	}
	a, b, c := conn("192.0.2.1"), conn("192.0.2.2"), conn("192.0.2.3")
	if _, _, ok := l.admit(a); !ok {
		t.Fatal("the first connection was refused")
	}
	why, victim, ok := l.admit(b)
	if !ok || victim != a || why != cutEvictedIdle {
		t.Fatalf("admit = %v, %p, %v; want a evicted idle", why, victim, ok)
	}
	if a.begin() {
		t.Error("an evicted connection began a transaction")
	}
	// b begins one: it is not chosen, so c is refused.
	if !b.begin() {
		t.Fatal("b could not begin a transaction")
	}
	if why, victim, ok := l.admit(c); ok || victim != nil || why != cutTotal {
		t.Errorf("with the one connection in a transaction, admit = %v, %v, %v; want refused over_total", why, victim, ok)
	}
	b.end()
	if _, victim, ok := l.admit(c); !ok || victim != b {
		t.Errorf("after its transaction, b is not the one to make way: %v, %v", victim, ok)
	}
}

// A new connection that has not yet said EHLO is spared while idle ones
// can make way: attackers that say EHLO at once and idle, reconnecting
// as they are cut, do not push out a sender before its first command.
func TestNewcomerSpared(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net")
	_, addr := listen(t, d, f, Config{MaxConns: 4, MaxConnsPerIP: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	for _, from := range []string{"127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"} {
		helloFrom(t, from, addr, dl)
	}
	// The sender connects (an idle attacker makes way) and reads its
	// greeting; before it says EHLO an attacker connects again.
	c := dialFrom(t, "127.0.0.9", addr)
	c.SetDeadline(dl)
	cl, err := smtp.NewClient(c, "127.0.0.1") // reads the greeting
	if err != nil {
		t.Fatal(err)
	}
	helloFrom(t, "127.0.0.2", addr, dl)
	// The sender goes on, and its bounce is taken.
	if err := cl.Hello("mx.example.org"); err != nil {
		t.Fatalf("the sender was cut before its EHLO: %v", err)
	}
	if err := cl.Mail(""); err != nil {
		t.Fatal(err)
	}
	bounceAnn(t, d, f, cl, f.values("ann@example.net"))
}
