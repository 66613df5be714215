package jobs_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	msgauth "github.com/emersion/go-msgauth/dkim"

	"github.com/mailroom/mailroom/internal/dkim"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

var linkRE = regexp.MustCompile(`https://mail\.example\.test(/senders/verify/[A-Za-z0-9_-]+)`)

// apiCaller makes an account named name and answers it with a call of
// the real router: the account's keys on /api/ paths, a form url-encoded,
// the status and body answered.
func apiCaller(t *testing.T, d *postgres.DB, name string) (user int64, call func(method, path string, form url.Values) (int, string)) {
	t.Helper()
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: d, Geo: testdb.Geo(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	user, keys, err := d.CreateAccount(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return user, func(method, path string, form url.Values) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		r := httptest.NewRequest(method, path, body)
		if form != nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if strings.HasPrefix(path, "/api/") {
			r.Header.Set("PublicKey", keys.Public)
			r.Header.Set("SecretKey", keys.Secret)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
}

// A new sender gets one verification mail through a real SMTP server;
// opening its link verifies the sender once; resend-mail sends a fresh
// link and spends the old one.
func TestSenderVerificationRoundTrip(t *testing.T) {
	// Not parallel: a verification run mails every pending sender of the
	// package's database, another test's too.
	ctx := context.Background()
	d := testdb.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	user, call := apiCaller(t, d, "verify")
	if code, body := call("POST", "/api/sender/save", url.Values{"from_name": {"Acme"}, "from_email": {"news@acme.example"},
		"reply_to_email": {"help@acme.example"}, "country_id": {"276"}, "company_address": {"Marienplatz 1"}, "nickname": {"news"}}); code != 200 {
		t.Fatalf("save: %d %s", code, body)
	}
	var id int64
	if err := d.Pool.QueryRow(ctx, "SELECT id FROM senders WHERE from_email = 'news@acme.example' AND user_id = $1", user).Scan(&id); err != nil {
		t.Fatal(err)
	}

	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	defer pool.Close()
	run := jobs.VerifySenders(jobs.Deps{DB: d, Log: log, Transport: pool, NotifyFrom: "mailroom <verify@example.test>",
		PublicURL: "https://mail.example.test"})
	for range 2 { // the second run finds nothing to send
		if err := run(ctx, jobs.NewVerifySendersTask()); err != nil {
			t.Fatal(err)
		}
	}
	link := func(i int) string {
		t.Helper()
		if !s.Wait(i+1, 5*time.Second) {
			t.Fatalf("%d mails", s.Count())
		}
		m := s.Messages()[i]
		if m.To[0] != "news@acme.example" {
			t.Fatalf("mailed %v", m.To)
		}
		match := linkRE.FindStringSubmatch(strings.ReplaceAll(string(m.Data), "=\r\n", ""))
		if match == nil {
			t.Fatalf("no link in\n%s", m.Data)
		}
		return match[1]
	}
	first := link(0)
	if s.Count() != 1 {
		t.Fatalf("%d mails, want 1", s.Count())
	}
	var sendAt *time.Time
	if err := d.Pool.QueryRow(ctx, "SELECT send_at FROM senders WHERE id = $1", id).Scan(&sendAt); err != nil || sendAt == nil {
		t.Fatalf("send_at %v %v", sendAt, err)
	}

	// resend-mail: a fresh link; the first one no longer works.
	if code, body := call("GET", "/api/sender/resend-mail?sender_id="+strconv.FormatInt(id, 10), nil); code != 200 ||
		body != `{"status":"success","message":"Verification Mail Send"}` {
		t.Fatalf("resend: %d %s", code, body)
	}
	if err := run(ctx, jobs.NewVerifySendersTask()); err != nil {
		t.Fatal(err)
	}
	second := link(1)
	if second == first {
		t.Fatal("the resent link is the same")
	}
	if code, body := call("GET", first, nil); code != 404 || !strings.Contains(body, "Link not valid") {
		t.Fatalf("old link: %d %s", code, body)
	}
	if code, body := call("GET", second, nil); code != 200 || !strings.Contains(body, "news@acme.example is verified") {
		t.Fatalf("link: %d %s", code, body)
	}
	if code, _ := call("GET", second, nil); code != 404 {
		t.Fatal("a link worked twice")
	}
	var verified, events int
	if err := d.Pool.QueryRow(ctx, `SELECT s.is_verified, (SELECT count(*) FROM events e WHERE e.kind = 'sender.verified' AND e.subject_id = s.id)
		FROM senders s WHERE s.id = $1`, id).Scan(&verified, &events); err != nil || verified != 1 || events != 1 {
		t.Fatalf("verified %d, events %d, %v", verified, events, err)
	}

	// An expired link does nothing.
	call("GET", "/api/sender/resend-mail?sender_id="+strconv.FormatInt(id, 10), nil)
	if err := run(ctx, jobs.NewVerifySendersTask()); err != nil {
		t.Fatal(err)
	}
	third := link(2)
	if _, err := d.Pool.Exec(ctx, "UPDATE senders SET verify_expires_at = now() - interval '1 second', is_verified = 0 WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	if code, _ := call("GET", third, nil); code != 404 {
		t.Fatal("an expired link worked")
	}
	if code, body := call("GET", "/api/sender/resend-mail?sender_id=999999999", nil); code != 404 || body != `{"status":"failed","errors":"Record Not Found"}` {
		t.Fatalf("resend unknown: %d %s", code, body)
	}
}

// With a DKIM key for NOTIFY_FROM's domain, the worker's mails arrive
// signed, and the signature verifies against the published key.
func TestWorkerMailsDKIMSigned(t *testing.T) {
	// Not parallel: a verification run mails every pending sender of the
	// package's database, another test's too.
	ctx := context.Background()
	d := testdb.New(t)
	pendingSenders(t, d, "dkim@acme.example")
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := &dkim.Keys{}
	keys.Add(dkim.NewKey("example.test", "mr1", priv))
	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	defer pool.Close()
	run := jobs.VerifySenders(jobs.Deps{DB: d, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Transport: pool,
		NotifyFrom: "mailroom <verify@example.test>", PublicURL: "https://mail.example.test", DKIM: keys})
	if err := run(ctx, jobs.NewVerifySendersTask()); err != nil {
		t.Fatal(err)
	}
	if !s.Wait(1, 5*time.Second) {
		t.Fatal("no mail")
	}
	var data []byte
	for _, m := range s.Messages() {
		if m.To[0] == "dkim@acme.example" {
			data = m.Data
		}
	}
	vs, err := msgauth.VerifyWithOptions(bytes.NewReader(data), &msgauth.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
		if name != "mr1._domainkey.example.test" {
			return nil, errors.New("no record " + name)
		}
		return []string{"v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(pub)}, nil
	}})
	if err != nil || len(vs) != 1 || vs[0].Err != nil || vs[0].Domain != "example.test" {
		t.Fatalf("verification %v %+v\n%s", err, vs, data)
	}
}

// A verification mail refused for good (5xx) is not retried forever: the
// request is dropped (resend-mail asks again), the other senders are
// mailed, and the run succeeds.
func TestVerificationRefusedForGood(t *testing.T) {
	// Not parallel: a verification run mails every pending sender of the
	// package's database, another test's too.
	ctx := context.Background()
	d := testdb.New(t)
	ids := pendingSenders(t, d, "gone@refused.example", "fine@refused.example")
	gone := ids[0]
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		if strings.HasPrefix(rcpt, "gone@") {
			return smtptest.Permanent("no such user")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	defer pool.Close()
	run := jobs.VerifySenders(jobs.Deps{DB: d, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Transport: pool,
		NotifyFrom: "mailroom <verify@example.test>", PublicURL: "https://mail.example.test"})
	for range 2 {
		if err := run(ctx, jobs.NewVerifySendersTask()); err != nil {
			t.Fatal(err)
		}
	}
	var wanted bool
	var sendAt *time.Time
	if err := d.Pool.QueryRow(ctx, "SELECT verify_requested_at IS NOT NULL, send_at FROM senders WHERE id = $1", gone).Scan(&wanted, &sendAt); err != nil {
		t.Fatal(err)
	}
	if wanted || sendAt != nil {
		t.Errorf("refused sender: still wanted %v, send_at %v", wanted, sendAt)
	}
	got := 0
	for _, m := range s.Messages() {
		if m.To[0] == "fine@refused.example" {
			got++
		}
	}
	if got != 1 {
		t.Errorf("the other sender got %d mails, want 1", got)
	}
}

// pendingSenders inserts a sender per address into a new account, each
// waiting for its verification mail, and returns their ids.
func pendingSenders(t *testing.T, d *postgres.DB, addresses ...string) []int64 {
	t.Helper()
	ctx := context.Background()
	user, _, err := d.CreateAccount(ctx, "pending")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(addresses))
	for i, addr := range addresses {
		if err := d.Pool.QueryRow(ctx, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, verify_requested_at)
			VALUES ($1, 'Acme', $2, $2, 276, 'Marienplatz 1', 'n', gen_random_uuid()::text, now()) RETURNING id`, user, addr).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}
