package inbound

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/smtp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
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
// once and closed while other addresses are served; past MaxConns any
// address is. Both are counted in the once-a-minute log line.
func TestConnectionCaps(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net")
	var lines logLines
	var now atomic.Int64
	s, addr := listen(t, d, f, Config{MaxConns: 5, MaxConnsPerIP: 2}, observed(&lines, &now))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	greet := func(from string) (string, *bufio.Reader, net.Conn) {
		c := dialFrom(t, from, addr)
		r := bufio.NewReader(c)
		return readLine(ctx, t, r, c), r, c
	}

	for range 2 {
		if g, _, _ := greet("127.0.0.2"); g != "220 "+bounceDomain+" ESMTP Service Ready" {
			t.Fatalf("greeting %q", g)
		}
	}
	g, r, c := greet("127.0.0.2")
	if want := "421 4.7.0 " + bounceDomain + " Too many connections from your address, try again later"; g != want {
		t.Errorf("third connection from one address: %q, want %q", g, want)
	}
	if !closedBy(ctx, r, c) {
		t.Error("the refused connection is not closed")
	}

	// Another address is served, and a bounce delivered; its client stays
	// connected (3 of 5 slots).
	c = dialFrom(t, "127.0.0.1", addr)
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	client, err := smtp.NewClient(c, "127.0.0.1")
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
	if err := client.Rcpt(v["{{VERP}}"]); err != nil {
		t.Fatal(err)
	}
	w, err := client.Data()
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

	for range 2 {
		if g, _, _ := greet("127.0.0.3"); !strings.HasPrefix(g, "220 ") {
			t.Fatalf("127.0.0.3: %q", g)
		}
	}
	g, r, c = greet("127.0.0.4") // a sixth
	if want := "421 4.3.2 " + bounceDomain + " Too many connections, try again later"; g != want {
		t.Errorf("past MaxConns: %q, want %q", g, want)
	}
	if !closedBy(ctx, r, c) {
		t.Error("the refused connection is not closed")
	}

	// The first refusal is logged at once, the second a minute later.
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
	if len(got) != 2 || got[1]["over_per_ip"] != 0.0 || got[1]["over_total"] != 1.0 || got[1]["last_remote"] != "127.0.0.4" ||
		got[1]["max_conns"] != 5.0 || got[1]["max_conns_per_ip"] != 2.0 {
		t.Errorf("log lines %v: want a second, over_total 1", got)
	}
	client.Quit()
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
