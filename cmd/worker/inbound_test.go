package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/textproto"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
)

// Bounces and complaints, real SMTP both ways: a worker sends a send
// through an SMTP server (r6's address refused at RCPT TO) with each
// mail's envelope sender its delivery's return path; then DSNs, a feedback
// report, a mail to the unsubscribe mailto and garbage go to the worker's
// own listener, made from the mails the server received. A hard bounce
// counts once however often it comes, and not for the address bounced at
// RCPT TO; a soft bounce counts only; the complaint and the mailto
// suppress; the garbage is kept; another domain is refused; the next send
// to the same list leaves out every address suppressed.
func TestBounceIntake(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	flushRedis(t)
	const domain = "bounces.acme.example"
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		if strings.HasPrefix(rcpt, "r6@") {
			return smtptest.Permanent("5.1.1 no such user")
		}
		return nil
	}})
	send := readySend(t, d, 6)
	env := map[string]string{"DATABASE_URL": testdb.DSN(t), "REDIS_URL": redisDB, "SMTP_URL": "smtp://" + s.Addr + "?pool=2",
		"PUBLIC_URL": "https://m.acme.example", "WORKER_CONCURRENCY": "4", "SEND_SWEEP_EVERY": "1s", "WORKER_SHUTDOWN_TIMEOUT": "5s",
		"WORKER_METRICS_ADDR": "off", "BOUNCE_DOMAIN": domain, "INBOUND_SMTP_ADDR": "127.0.0.1:0", "UNSUBSCRIBE_MAILTO": "unsubscribe@" + domain}
	log := &logWatch{want: "inbound SMTP listening", found: make(chan map[string]any, 1)}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(wctx, func(k string) string { return env[k] }, log) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
		if t.Failed() {
			t.Logf("worker log:\n%s", log.buf.String())
		}
	}()
	var inbound string
	select {
	case line := <-log.found:
		inbound, _ = line["addr"].(string)
	case err := <-done:
		t.Fatalf("the worker stopped: %v", err)
	}
	if delivered := waitCompleted(t, d, send, 60*time.Second); delivered != 5 {
		t.Fatalf("delivered %d, want 5", delivered)
	}

	// Each mail's envelope sender is its delivery's return path.
	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}
	verp := mail.VERP{Domain: domain, Signer: mail.NewTokenSigner(key)}
	ids := deliveryIDs(t, d, send)
	type received struct{ from, messageID, listUnsubscribe string }
	got := map[string]received{}
	for _, m := range s.Messages() {
		h, err := netmail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		rcpt := strings.ToLower(m.To[0])
		if sid, id, ok := verp.Parse(m.From); !ok || sid != send || id != ids[rcpt] {
			t.Errorf("mail to %s: envelope sender %q opens to %d, %d, %v; want delivery %d", rcpt, m.From, sid, id, ok, ids[rcpt])
		}
		got[rcpt] = received{from: m.From, messageID: h.Header.Get("Message-Id"), listUnsubscribe: h.Header.Get("List-Unsubscribe")}
	}
	if len(got) != 5 {
		t.Fatalf("%d mails received", len(got))
	}
	values := func(rcpt string) map[string]string {
		r := got[rcpt]
		return map[string]string{"{{VERP}}": r.from, "{{MESSAGE_ID}}": r.messageID, "{{RCPT}}": rcpt,
			"{{LIST_UNSUBSCRIBE}}": r.listUnsubscribe, "{{BOUNCE_DOMAIN}}": domain, "{{MAILTO}}": "unsubscribe@" + domain}
	}

	// r1's hard bounce, twice (Postfix, then Gmail's of the same mail);
	// r2's delay warning; r3's complaint to bounces@ (Yahoo's feedback
	// loop); r4 writes to the mailto; garbage to bounces@; a DSN for r6,
	// refused at RCPT TO already.
	r6 := map[string]string{"{{VERP}}": verp.Address(send, ids["r6@crash.example"]), "{{MESSAGE_ID}}": fmt.Sprintf("<%d.%d@crash.example>", send, ids["r6@crash.example"]),
		"{{RCPT}}": "r6@crash.example", "{{LIST_UNSUBSCRIBE}}": "<https://m.acme.example/unsubscribe/x>"}
	r4 := values("r4@crash.example")
	r4["{{SUBJECT}}"] = regexp.MustCompile(`subject=(unsubscribe-[A-Za-z0-9_-]+)`).FindStringSubmatch(r4["{{LIST_UNSUBSCRIBE}}"])[1]
	for _, m := range []struct {
		sample string
		rcpt   string
		values map[string]string
	}{
		{"dsn-postfix-5.1.1.eml", got["r1@crash.example"].from, values("r1@crash.example")},
		{"dsn-gmail-5.1.1.eml", got["r1@crash.example"].from, values("r1@crash.example")},
		{"dsn-postfix-delayed-4.4.1.eml", got["r2@crash.example"].from, values("r2@crash.example")},
		{"arf-yahoo.eml", "bounces@" + domain, values("r3@crash.example")},
		{"mailto-unsubscribe.eml", "unsubscribe@" + domain, r4},
		{"garbage-spam.eml", "bounces@" + domain, values("r5@crash.example")},
		{"dsn-exim-5.0.0.eml", r6["{{VERP}}"], r6},
	} {
		if err := smtptest.Deliver(inbound, "", []string{m.rcpt}, inboundSample(t, m.sample, m.values)); err != nil {
			t.Fatalf("%s to %s: %v", m.sample, m.rcpt, err)
		}
	}
	var tp *textproto.Error
	if err := smtptest.Deliver(inbound, "", []string{"postmaster@example.com"}, []byte("Subject: relay?\n\nx\n")); !errors.As(err, &tp) || tp.Code != 550 {
		t.Errorf("RCPT for another domain: %v", err)
	}

	var status int
	var bounces int64
	if err := d.Pool.QueryRow(ctx, "SELECT status, bounces FROM single_sends WHERE id = $1", send).Scan(&status, &bounces); err != nil {
		t.Fatal(err)
	}
	if bounces != 2 {
		t.Errorf("send bounces %d, want 2 (r6 at RCPT TO, r1 by DSN, once)", bounces)
	}
	var user int64
	var utr string
	if err := d.Pool.QueryRow(ctx, "SELECT user_id, utr FROM single_sends WHERE id = $1", send).Scan(&user, &utr); err != nil {
		t.Fatal(err)
	}
	stats, err := d.SingleSendStats(ctx, user, utr)
	if err != nil {
		t.Fatal(err)
	}
	if c := stats.Counts; c.Delivered != 5 || c.Bounces != 2 || c.SoftBounces != 1 || c.Complaints != 1 || c.Unsubscribes != 1 {
		t.Errorf("statistics %+v; want 5 delivered, 2 bounces, 1 soft bounce, 1 complaint, 1 unsubscribe", c)
	}
	var events []string
	if err := d.Pool.QueryRow(ctx, `SELECT array_agg(kind || ' ' || (payload->>'email_address') ORDER BY id) FROM events
		WHERE user_id = $1 AND kind LIKE 'address.%'`, user).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if want := []string{"address.bounced r6@crash.example", "address.bounced r1@crash.example", "address.complained r3@crash.example",
		"address.unsubscribed r4@crash.example"}; !slices.Equal(events, want) {
		t.Errorf("events %v, want %v", events, want)
	}
	var reasons []string
	if err := d.Pool.QueryRow(ctx, `SELECT array_agg(reason ORDER BY id) FROM inbound_messages WHERE rcpt = $1`, "bounces@"+domain).Scan(&reasons); err != nil {
		t.Fatal(err)
	}
	if len(reasons) != 1 || !strings.HasPrefix(reasons[0], "not a report") {
		t.Errorf("kept %q, want the spam", reasons)
	}

	// The next send to the same list: r1 and r6 bounced, r3 complained,
	// r4 left the send's group: r2 and r5 only.
	var next int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, template_html, sender_id, unsubscribe_group_id,
			single_send_name, subject, preheader, recipient_id, status, due_at, unique_open_token)
		SELECT user_id, gen_random_uuid(), template_id, template_html, sender_id, unsubscribe_group_id, 'next', subject, preheader,
			recipient_id, 1, now(), '{}' FROM single_sends WHERE id = $1 RETURNING id`, send).Scan(&next); err != nil {
		t.Fatal(err)
	}
	before := len(s.Messages())
	waitCompleted(t, d, next, 60*time.Second)
	var to []string
	for _, m := range s.Messages()[before:] {
		to = append(to, m.To...)
	}
	slices.Sort(to)
	if want := []string{"r2@crash.example", "r5@crash.example"}; !slices.Equal(to, want) {
		t.Errorf("the next send went to %v, want %v", to, want)
	}
}

// deliveryIDs are a send's delivery ids by lower-cased address.
func deliveryIDs(t *testing.T, d *postgres.DB, send int64) map[string]int64 {
	t.Helper()
	rows, err := d.Pool.Query(context.Background(), "SELECT lower(email), id FROM deliveries WHERE send_id = $1", send)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ids := map[string]int64{}
	for rows.Next() {
		var e string
		var id int64
		if err := rows.Scan(&e, &id); err != nil {
			t.Fatal(err)
		}
		ids[e] = id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// inboundSample is a sample of internal/inbound/testdata with its
// placeholders filled.
func inboundSample(t *testing.T, name string, values map[string]string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "inbound", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range values {
		s = strings.ReplaceAll(s, k, v)
	}
	if strings.Contains(s, "{{") {
		t.Fatalf("%s: a placeholder is left", name)
	}
	return []byte(s)
}
