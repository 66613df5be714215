package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// A send the bounce guard paused is cancelled through the API: its
// pending mails are skipped, never sent, and it completes, with its
// events; not while a batch holds a range of it, not twice (many at
// once: one wins), not another account's, not a send that is not paused.
func TestCancelPausedSend(t *testing.T) {
	// Not parallel: its sweeper works on every send of the package's
	// database.
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, `<html><body><p>Hi ((first_name))</p></body></html>`)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'k' || lpad(i::text, 4, '0') || '@cancel.example', 'K' FROM generate_series(1, 3000) i`, f.user, f.typeA)
	s := smtptest.New(t, smtptest.Options{Discard: true, Reply: func(rcpt string) error {
		if strings.HasSuffix(rcpt, "0@cancel.example") {
			return smtptest.Permanent("no such user")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 100, Window: 4, StallAfter: time.Second})
	call := apiGet(t, d)
	utr := scalar[string](t, d, "SELECT utr::text FROM single_sends WHERE id = $1", f.send)
	want := func(path string, code int, body string) {
		t.Helper()
		if c, b := call(f.keys, path); c != code || b != body {
			t.Fatalf("%s: %d %s\nwant %d %s", path, c, b, code, body)
		}
	}
	notPaused := `{"status":"failed","errors":"Only paused single sends can be cancelled."}`
	want("/api/single/send/cancel?utr="+utr, 409, notPaused) // a draft

	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send), time.Now()))
	q.drainConcurrently(t, mux, 4)
	paused := scalar[bool](t, d, "SELECT paused_at IS NOT NULL AND status = 2 FROM single_sends WHERE id = $1", f.send)
	pending := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1 AND status = 0", f.send)
	if !paused || pending == 0 {
		t.Fatalf("not paused with mails pending: paused %v, %d pending", paused, pending)
	}
	received := s.Count()

	// A batch still holding a range: not yet.
	exec(t, d, "INSERT INTO delivery_ranges (send_id, k, lease_until, owner) VALUES ($1, 999, now() + interval '1 minute', gen_random_uuid())", f.send)
	want("/api/single/send/cancel?utr="+utr, 409, `{"status":"failed","errors":"The single send still has mails in flight: try again in a few seconds."}`)
	exec(t, d, "DELETE FROM delivery_ranges WHERE send_id = $1 AND k = 999", f.send)

	_, theirs, err := d.CreateAccount(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	if c, b := call(theirs, "/api/single/send/cancel?utr="+utr); c != 404 || b != `{"status":"failed","errors":"Record not found"}` {
		t.Fatalf("another account's cancel: %d %s", c, b)
	}
	want("/api/single/send/cancel", 422, `{"status":"failed","errors":{"utr":["The utr field is required."]}}`)

	// Many at once: one cancels, the others find it completed.
	answers := make([]string, 10)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			c, b := call(f.keys, "/api/single/send/cancel?utr="+utr)
			answers[i] = fmt.Sprint(c, " ", b)
		})
	}
	wg.Wait()
	won := 0
	for _, a := range answers {
		switch a {
		case `200 {"status":"success","message":"Single Send Cancelled Successfully"}`:
			won++
		case "409 " + notPaused:
		default:
			t.Fatalf("cancel: %s", a)
		}
	}
	if won != 1 {
		t.Fatalf("%d cancels succeeded: %v", won, answers)
	}
	var status, remaining, skipped, left int64
	if err := d.Pool.QueryRow(ctx, `SELECT s.status, s.remaining,
		(SELECT count(*) FROM deliveries WHERE send_id = s.id AND status = 5 AND error = 'cancelled after a pause'),
		(SELECT count(*) FROM deliveries WHERE send_id = s.id AND status = 0)
		FROM single_sends s WHERE s.id = $1 AND s.cancelled_at IS NOT NULL AND s.sent_at IS NOT NULL AND s.paused_at IS NULL`,
		f.send).Scan(&status, &remaining, &skipped, &left); err != nil {
		t.Fatal(err)
	}
	if status != 3 || remaining != 0 || skipped != pending || left != 0 {
		t.Fatalf("cancelled: status %d, remaining %d, %d skipped of %d pending, %d left", status, remaining, skipped, pending, left)
	}
	events := scalar[[]string](t, d, `SELECT array_agg(kind ORDER BY id) FROM events WHERE user_id = $1 AND kind LIKE 'single_send.%'`, f.user)
	if got := strings.Join(events, " "); got != "single_send.started single_send.paused single_send.cancelled single_send.completed" {
		t.Fatalf("events: %s", got)
	}
	payload := scalar[string](t, d, "SELECT payload::text FROM events WHERE user_id = $1 AND kind = 'single_send.cancelled'", f.user)
	if !strings.Contains(payload, fmt.Sprintf(`"cancelled": %d`, pending)) {
		t.Fatalf("cancelled payload %s", payload)
	}
	if c, b := call(f.keys, "/api/single-send/details?utr="+utr); c != 200 || !strings.Contains(b, `"cancelled_at":"`) ||
		strings.Contains(b, `"paused_at"`) || !strings.Contains(b, `"status":3`) {
		t.Fatalf("details: %d %s", c, b)
	}
	// Nothing more goes out, whatever the sweeper finds.
	exec(t, d, "UPDATE single_sends SET progress_at = now() - interval '1 minute' WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewSweepSendsTask())
	q.drainConcurrently(t, mux, 4)
	if s.Count() != received {
		t.Fatalf("the server received %d mails after the cancel", s.Count()-received)
	}
	want("/api/single/send/cancel?utr="+utr, 409, notPaused)
}

// A send cancelled while the rest of its audience is still to expand
// gets no more deliveries: the expansion finds it gone and rolls back.
func TestCancelStopsTheExpansion(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, `<p>Hi</p>`)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'x' || i || '@expand.example', 'X' FROM generate_series(1, 500) i`, f.user, f.typeA)
	// Contact types alone expand in two steps (by their kept lengths).
	if err := d.Recount(ctx, f.user); err != nil {
		t.Fatal(err)
	}
	exec(t, d, `UPDATE single_sends SET status = 1, recipient_id = jsonb_build_array(jsonb_build_object('id', $2::bigint::text, 'table', 'contacts_'))
		WHERE id = $1`, f.send, f.typeA)
	version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
	head, err := d.DispatchSend(ctx, f.send, version, 50, 100)
	if err != nil || !head.Expanding {
		t.Fatalf("first step: %+v %v", head, err)
	}
	rows := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1", f.send)
	exec(t, d, "UPDATE single_sends SET paused_at = now(), paused_reason = 'test' WHERE id = $1", f.send)
	utr := scalar[string](t, d, "SELECT utr::text FROM single_sends WHERE id = $1", f.send)
	if c, b := apiGet(t, d)(f.keys, "/api/single/send/cancel?utr="+utr); c != 200 {
		t.Fatalf("cancel: %d %s", c, b)
	}
	if _, err := d.ExpandRest(ctx, f.send); err != nil {
		t.Fatal(err)
	}
	after := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1", f.send)
	status := scalar[int16](t, d, "SELECT status FROM single_sends WHERE id = $1", f.send)
	if after != rows || status != 3 {
		t.Fatalf("after the cancel the expansion left %d deliveries (had %d), status %d", after, rows, status)
	}
}
