package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
)

// addRecipients adds n contacts u001@dom… for each domain to the ready
// send's account and contact type (made by readySend with none).
func addRecipients(t *testing.T, d *postgres.DB, send int64, n int, domains ...string) {
	t.Helper()
	if _, err := d.Pool.Exec(context.Background(), `INSERT INTO contacts (user_id, contact_type_id, email)
		SELECT s.user_id, ct.id, 'u' || lpad(i::text, 3, '0') || '@' || dom
		FROM single_sends s JOIN contact_types ct ON ct.user_id = s.user_id, generate_series(1, $2::int) i, unnest($3::text[]) dom
		WHERE s.id = $1`, send, n, domains); err != nil {
		t.Fatal(err)
	}
}

// spread is the time between the first and the last mail the server took
// for a domain, and when that last one came.
func spread(s *smtptest.Server, domain string) (time.Duration, time.Time) {
	var first, last time.Time
	for _, m := range s.Messages() {
		if !strings.HasSuffix(m.To[0], "@"+domain) {
			continue
		}
		if first.IsZero() || m.At.Before(first) {
			first = m.At
		}
		if m.At.After(last) {
			last = m.At
		}
	}
	return last.Sub(first), last
}

// A domain's rate (DOMAIN_LIMITS) holds across two worker processes:
// 150 mails to slow.example at 50 a second (50 at once) take at least two
// seconds, while the 150 of fast.example in the same send go at once;
// every address gets its mail once.
func TestDomainRateAcrossWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	d := testdb.New(t)
	flushRedis(t)
	const n = 150
	s := smtptest.New(t, smtptest.Options{})
	send := readySend(t, d, 0)
	addRecipients(t, d, send, n, "fast.example", "slow.example")
	for i := range 2 {
		worker(t, s.Addr, fmt.Sprintf("worker%d", i), "SEND_BATCH_SIZE=25", "SEND_WINDOW=4",
			"DOMAIN_LIMITS=defaults=off;slow.example=rate:50")
	}
	if delivered := waitCompleted(t, d, send, 60*time.Second); delivered != 2*n {
		t.Errorf("delivered %d, want %d", delivered, 2*n)
	}
	got := received(s)
	for i := 1; i <= n; i++ {
		for _, dom := range []string{"fast.example", "slow.example"} {
			if c := got[fmt.Sprintf("u%03d@%s", i, dom)]; c != 1 {
				t.Errorf("u%03d@%s got %d mails", i, dom, c)
			}
		}
	}
	slow, slowLast := spread(s, "slow.example")
	fast, fastLast := spread(s, "fast.example")
	// 50 at once, then 50 a second: the 150th no sooner than 2 s after
	// the first; the other domain is not held back behind it.
	if slow < 1900*time.Millisecond {
		t.Errorf("150 mails at 50 a second went out within %v", slow)
	}
	if !fastLast.Before(slowLast.Add(-time.Second)) {
		t.Errorf("fast.example's last mail came %v before slow.example's: held back with it", slowLast.Sub(fastLast))
	}
	t.Logf("slow.example over %v, fast.example over %v", slow, fast)
}

// A worker process whose SMTP server answers 421 to one domain: the other
// domain's mail all goes through, the refused one is held (holds of 1 s,
// then 2 s) and tried only by a few mails per hold, not each of its own;
// once the server takes it again every address gets its mail once, the
// send completes, and the deliveries' attempts count only the real tries.
func TestDomainTryLaterWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker process")
	}
	d := testdb.New(t)
	flushRedis(t)
	const n = 100
	var refusing atomic.Bool
	refusing.Store(true)
	var refused atomic.Int32
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		if strings.HasSuffix(rcpt, "@slow.example") && refusing.Load() {
			refused.Add(1)
			return smtptest.TryLater("Try again later")
		}
		return nil
	}})
	send := readySend(t, d, 0)
	addRecipients(t, d, send, n, "fast.example", "slow.example")
	worker(t, s.Addr, "worker", "SEND_BATCH_SIZE=25", "DOMAIN_LIMITS=defaults=off;slow.example=hold",
		"DOMAIN_HOLD_MIN=1s", "DOMAIN_HOLD_MAX=2s")
	if !s.Wait(n, 60*time.Second) {
		t.Fatalf("%d mails, want fast.example's %d", s.Count(), n)
	}
	atFast := refused.Load()
	for addr := range received(s) {
		if !strings.HasSuffix(addr, "@fast.example") {
			t.Errorf("%s got mail while its domain refused it", addr)
		}
	}
	if atFast >= n/2 {
		t.Errorf("slow.example was tried %d times for its %d mails by the time fast.example's were sent", atFast, n)
	}
	refusing.Store(false)
	if delivered := waitCompleted(t, d, send, 60*time.Second); delivered != 2*n {
		t.Errorf("delivered %d, want %d", delivered, 2*n)
	}
	got := received(s)
	for i := 1; i <= n; i++ {
		for _, dom := range []string{"fast.example", "slow.example"} {
			if c := got[fmt.Sprintf("u%03d@%s", i, dom)]; c != 1 {
				t.Errorf("u%03d@%s got %d mails", i, dom, c)
			}
		}
	}
	// Each delivery of slow.example counts its accepted try and the 421s
	// it got; the mails put off count nothing.
	var attempts int64
	if err := d.Pool.QueryRow(context.Background(), "SELECT sum(attempts) FROM deliveries WHERE send_id = $1 AND email LIKE '%@slow.example'",
		send).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if want := int64(n) + int64(refused.Load()); attempts != want {
		t.Errorf("slow.example's deliveries count %d attempts, want %d (%d accepted, %d refused)", attempts, want, n, refused.Load())
	}
	t.Logf("slow.example refused %d times (%d before fast.example's mail was all sent)", refused.Load(), atFast)
}
