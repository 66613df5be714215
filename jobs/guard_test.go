package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// A send to an audience of which every tenth address is refused at RCPT
// TO (a real SMTP server in the test) is paused by the default bounce
// guard (5 % of attempted, judged from 1,000): it stays running (2) with
// the reason in its details, has attempted no more than 1,000 mails past
// the threshold, and the account hears of it (single_send.paused, a
// send.paused webhook event). Resumed through the API, the guard judges
// the mails after the resume (here none bounce) and the send completes,
// every address mailed once.
func TestBounceGuardPausesASend(t *testing.T) {
	// Not parallel: its sweeper works on every send of the package's
	// database.
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, `<html><body><p>Hi ((first_name))</p></body></html>`)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'g' || lpad(i::text, 4, '0') || '@guard.example', 'G' FROM generate_series(1, 4000) i`, f.user, f.typeA)
	exec(t, d, `INSERT INTO webhooks (user_id, url, events, secret) VALUES ($1, 'https://hooks.example.test/paused', $2, 'whsec_x')`,
		f.user, int(mail.HookSendPaused))
	refuse := true
	s := smtptest.New(t, smtptest.Options{Discard: true, Reply: func(rcpt string) error {
		if refuse && strings.HasSuffix(rcpt, "0@guard.example") {
			return smtptest.Permanent("no such user")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 100, Window: 4, StallAfter: time.Second})

	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
	q.drainConcurrently(t, mux, 4)

	var status int
	var triggered, attempted, bounces int64
	var reason *string
	read := func() {
		t.Helper()
		if err := d.Pool.QueryRow(ctx, `SELECT status, triggered, attempted, bounces, paused_reason FROM single_sends WHERE id = $1`,
			f.send).Scan(&status, &triggered, &attempted, &bounces, &reason); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if status != 2 || reason == nil || !strings.HasPrefix(*reason, "hard bounces reached ") ||
		!strings.HasSuffix(*reason, "; the limit is 5 % once 1000 are attempted") {
		t.Fatalf("status %d, reason %v: not paused by the bounce guard", status, reason)
	}
	// The threshold is judged at every step of 192 mails and every range's
	// end; four ranges of 100 were in flight.
	if attempted < 1000 || attempted > 2000 || bounces*10 < attempted-10 {
		t.Fatalf("paused having attempted %d (%d bounced) of %d", attempted, bounces, triggered)
	}
	if n := int64(s.Count()); n != attempted-bounces {
		t.Fatalf("the server accepted %d mails, the send attempted %d and bounced %d", n, attempted, bounces)
	}
	t.Logf("paused after %d attempted, %d bounced: %s", attempted, bounces, *reason)
	// Nothing more goes while it is paused, whatever the sweeper finds.
	exec(t, d, "UPDATE single_sends SET progress_at = now() - interval '1 minute' WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewSweepSendsTask())
	q.drainConcurrently(t, mux, 4)
	if before := attempted; func() bool { read(); return attempted != before }() {
		t.Fatalf("a paused send went on: %d attempted, was %d", attempted, before)
	}
	events := scalar[[]string](t, d, "SELECT array_agg(kind ORDER BY id) FROM events WHERE user_id = $1 AND kind = 'single_send.paused'", f.user)
	if len(events) != 1 {
		t.Fatalf("single_send.paused events: %v", events)
	}
	var hook string
	if err := d.Pool.QueryRow(ctx, `SELECT b.events::text FROM webhook_batches b JOIN webhooks w ON w.id = b.webhook_id
		WHERE w.user_id = $1`, f.user).Scan(&hook); err != nil {
		t.Fatal(err)
	}
	var carried []mail.HookEvent
	if err := json.Unmarshal([]byte(hook), &carried); err != nil || len(carried) != 1 || carried[0].Kind != mail.HookSendPaused ||
		carried[0].SendID != f.send || carried[0].Reason != *reason {
		t.Fatalf("webhook outbox %s (%v)", hook, err)
	}

	// The API: the details say why; resume answers once, then 409; another
	// account's send is not found.
	call := apiGet(t, d)
	_, theirs, err := d.CreateAccount(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	utr := scalar[string](t, d, "SELECT utr::text FROM single_sends WHERE id = $1", f.send)
	code, body := call(f.keys, "/api/single-send/details?utr="+utr)
	reasonJSON, _ := json.Marshal(*reason)
	if code != 200 || !strings.Contains(body, `"paused_reason":`+string(reasonJSON)) || !strings.Contains(body, `"paused_at":"`) {
		t.Fatalf("details %d: %s", code, body)
	}
	if code, body = call(theirs, "/api/single/send/resume?utr="+utr); code != 404 || body != `{"status":"failed","errors":"Record not found"}` {
		t.Fatalf("another account's resume: %d %s", code, body)
	}
	refuse = false // the sender cleaned the list
	// Resumed by many at once: one of them resumes it, the others are
	// told it is not paused.
	var wg sync.WaitGroup
	answers := make([]string, 20)
	for i := range answers {
		wg.Go(func() {
			code, body := call(f.keys, "/api/single/send/resume?utr="+utr)
			answers[i] = fmt.Sprint(code, " ", body)
		})
	}
	wg.Wait()
	resumed := 0
	for _, a := range answers {
		switch a {
		case `200 {"status":"success","message":"Single Send Resumed Successfully"}`:
			resumed++
		case `409 {"status":"failed","errors":"Only paused single sends can be resumed."}`:
		default:
			t.Fatalf("resume: %s", a)
		}
	}
	if resumed != 1 {
		t.Fatalf("%d of 20 resumes at once resumed it", resumed)
	}
	if code, body = call(f.keys, "/api/single/send/resume?utr="+utr); code != 409 || body != `{"status":"failed","errors":"Only paused single sends can be resumed."}` {
		t.Fatalf("resume again: %d %s", code, body)
	}
	if code, body = call(f.keys, "/api/single-send/details?utr="+utr); code != 200 || strings.Contains(body, "paused") {
		t.Fatalf("details after the resume %d: %s", code, body)
	}
	// The sweeper starts the resumed send's chains (a pass starts a
	// chain per open range of a window; a send idle again after it gets
	// the next pass).
	for pass := 0; pass < 10 && status != 3; pass++ {
		if pass > 0 {
			exec(t, d, "UPDATE single_sends SET progress_at = now() - interval '1 minute' WHERE id = $1", f.send)
		}
		q.enqueue(ctx, jobs.NewSweepSendsTask())
		q.drainConcurrently(t, mux, 4)
		read()
	}
	if status != 3 || reason != nil || attempted != triggered {
		t.Fatalf("after the resume: status %d, %d of %d attempted, reason %v", status, attempted, triggered, reason)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1 AND attempts <> 1", f.send); n != 0 {
		t.Fatalf("%d deliveries attempted other than once", n)
	}
	// A send paused while its last mails were in flight, completed by
	// them: done, not paused.
	last := scalar[int64](t, d, `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name,
			subject, preheader, status, triggered, remaining, paused_at, paused_reason)
		SELECT user_id, gen_random_uuid(), 1, sender_id, unsubscribe_group_id, 'Last', 'S', 'P', 2, 10, 0, now(), 'x'
		FROM single_sends WHERE id = $1 RETURNING id`, f.send)
	if done, err := d.CompleteSend(ctx, last); err != nil || !done {
		t.Fatalf("complete: %v %v", done, err)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM single_sends WHERE id = $1 AND status = 3 AND paused_at IS NULL AND paused_reason IS NULL", last); n != 1 {
		t.Fatal("a completed send is still marked paused")
	}
}

// apiGet answers a GET of path through the real router with an
// account's keys: the status and the body.
func apiGet(t *testing.T, d *postgres.DB) func(keys mail.Keys, path string) (int, string) {
	api := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: d, Geo: testdb.Geo(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return func(keys mail.Keys, path string) (int, string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("PublicKey", keys.Public)
		r.Header.Set("SecretKey", keys.Secret)
		api.ServeHTTP(w, r)
		body, _ := io.ReadAll(w.Result().Body)
		return w.Code, string(body)
	}
}
