package jobs_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// amplifiedHTML is the template of the report: 70,000 ((first_name)) in
// about 1 MB. Its mail for a 255-character first name is 37 MB.
var amplifiedHTML = "<html><body>" + strings.Repeat("((first_name))", 70000) + "</body></html>"

// A template saved before the API checked its worst case (written
// straight into the database here): the recipient whose 255-character
// first name makes the mail pass MAX_MAIL_BYTES fails for good with the
// reason, not sent, not retried, not suppressed; the send's other
// recipients, with short names, get their mails and the send completes.
func TestOversizeMailFails(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, amplifiedHTML)
	exec(t, d, "UPDATE contacts SET first_name = repeat('n', 255) WHERE user_id = $1 AND email = 'ann@example.com'", f.user)
	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: time.Minute})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 2, Window: 2, StallAfter: time.Second})

	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.drain(t, mux)

	var to []string
	for _, m := range s.Messages() {
		to = append(to, m.To...)
		if len(m.Data) > 1<<20 {
			t.Errorf("a mail of %d bytes to %v", len(m.Data), m.To)
		}
	}
	slices.Sort(to)
	if want := []string{"Bob@example.com", "gone@example.com", "hank@example.com", "later@example.com"}; !slices.Equal(to, want) {
		t.Fatalf("received for %v, want %v", to, want)
	}
	var status, attempts int
	var reason string
	if err := d.Pool.QueryRow(ctx, `SELECT status, attempts, COALESCE(error, '') FROM deliveries WHERE send_id = $1 AND email = 'ann@example.com'`,
		f.send).Scan(&status, &attempts, &reason); err != nil {
		t.Fatal(err)
	}
	if want := "the mail is at least 35700"; status != 4 || attempts != 0 || !strings.HasPrefix(reason, want) ||
		!strings.HasSuffix(reason, " bytes, more than the limit of 10485760 bytes") {
		t.Errorf("ann's delivery: status %d, %d attempts, error %q; want 4 (failed), none, %q… bytes, more than the limit of 10485760 bytes",
			status, attempts, reason, want)
	}
	if got, want := sendCounters(t, d, f.send), (counters{Status: 3, Triggered: 5, Delivered: 4, SentAt: true}); got != want {
		t.Errorf("send %+v, want %+v", got, want)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM bounces WHERE user_id = $1 AND email_lc = 'ann@example.com'", f.user); n != 0 {
		t.Errorf("ann suppressed (%d bounces)", n)
	}

	// Nothing comes back: the sweeper and every batch again send nothing.
	exec(t, d, "UPDATE single_sends SET progress_at = now() - interval '1 minute' WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewSweepSendsTask())
	for k := int64(0); k < 4; k++ {
		q.enqueue(ctx, jobs.NewBatchTask(f.send, k))
	}
	q.drain(t, mux)
	if n := s.Count(); n != 4 {
		t.Errorf("%d mails after running everything again, want 4", n)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1 AND status IN (0, 1)", f.send); n != 0 {
		t.Errorf("%d deliveries still open", n)
	}
}

// The worker's memory stays flat: the same template sent to 100 more
// contacts with 255-character first names allocates next to nothing more
// than the send without them (both compile the 1 MB template once, some
// 70 MB), since none of their mails is built. Before the cap each was
// built (37 MB) and sent: gigabytes more.
func TestOversizeMailMemoryFlat(t *testing.T) {
	// Not parallel: TotalAlloc counts the whole process.
	base, _ := sendMemory(t, 0)
	alloc, peak := sendMemory(t, 100)
	t.Logf("the send without long names: %.1f MB allocated; with 100: %.1f MB allocated, peak heap in use %.1f MB",
		float64(base)/(1<<20), float64(alloc)/(1<<20), float64(peak)/(1<<20))
	if more := int64(alloc) - int64(base); more > 64<<20 {
		t.Errorf("100 recipients over the limit allocated %d bytes more than none, more than 64 MB", more)
	}
}

// sendMemory sends the amplified template to the fixture's recipients and
// long more with 255-character first names, 8 mails at once, and returns
// the bytes allocated meanwhile and the peak of the heap in use (sampled
// every 5 ms, for the log).
func sendMemory(t *testing.T, long int) (alloc, peak uint64) {
	t.Helper()
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, amplifiedHTML)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'long' || i || '@example.com', repeat(chr(97 + i % 26), 255) FROM generate_series(1, $3::int) i`, f.user, f.typeA, long)
	s := smtptest.New(t, smtptest.Options{Discard: true})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 8, Timeout: time.Minute})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 50, Window: 4, Concurrency: 8, StallAfter: time.Second})
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))

	stop, top := make(chan struct{}), make(chan uint64)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		var m runtime.MemStats
		most := uint64(0)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			most = max(most, m.HeapInuse)
			select {
			case <-stop:
				top <- most
				return
			case <-tick.C:
			}
		}
	}()
	q.drain(t, mux)
	close(stop)
	peak = <-top
	runtime.ReadMemStats(&after)
	if failed := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1 AND status = 4", f.send); failed != int64(long) {
		t.Errorf("%d deliveries failed, want the %d with long names", failed, long)
	}
	if c := sendCounters(t, d, f.send); c.Status != 3 || c.Delivered != 5 {
		t.Errorf("send %+v: want completed, 5 delivered", c)
	}
	return after.TotalAlloc - before.TotalAlloc, peak
}
