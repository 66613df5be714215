package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// domainLimits is the Redis (database 11, no test flushes it) and a key
// prefix of the test's own, whose keys are deleted when it ends.
func domainRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 11})
	prefix := fmt.Sprintf("jobstest:{%s:%d}:", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		if keys, _ := rdb.Keys(context.Background(), prefix+"*").Result(); len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
		rdb.Close()
	})
	return rdb, prefix
}

// withDomains limits the engine's recipient domains by spec (DOMAIN_LIMITS
// without the built-in limits) in rdb under prefix: engines given the
// same prefix share the limits as workers do.
func withDomains(t *testing.T, rdb *redis.Client, prefix, spec string) func(*jobs.Deps) {
	t.Helper()
	limits, err := ratelimit.ParseDomainLimits("defaults=off;" + spec)
	if err != nil {
		t.Fatal(err)
	}
	return func(d *jobs.Deps) { d.Domains = ratelimit.NewDomains(rdb, prefix, limits) }
}

// parkRevisits keeps the engine's revisits (a range run again alone when
// the mails its domains put off are due) out of the queue, as asynq holds
// them until then: the test brings the time on and queues them itself.
func parkRevisits(parked *[]*asynq.Task) func(*jobs.Deps) {
	var mu sync.Mutex
	return func(d *jobs.Deps) {
		enqueue := d.Enqueue
		d.Enqueue = func(ctx context.Context, t *asynq.Task) error {
			if strings.Contains(string(t.Payload()), `"once":true`) {
				mu.Lock()
				*parked = append(*parked, t)
				mu.Unlock()
				return nil
			}
			return enqueue(ctx, t)
		}
	}
}

// mailsTo counts the mails the server took per (lower-cased) address.
func mailsTo(s *smtptest.Server) map[string]int {
	got := map[string]int{}
	for _, m := range s.Messages() {
		for _, to := range m.To {
			got[strings.ToLower(to)]++
		}
	}
	return got
}

// addContacts adds n contacts u001@dom… to the send's type A for each
// domain: in address order they alternate between the domains.
func addContacts(t *testing.T, d *postgres.DB, f sendFixture, n int, domains ...string) {
	t.Helper()
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email)
		SELECT $1, $2, 'u' || lpad(i::text, 3, '0') || '@' || dom FROM generate_series(1, $3::int) i, unnest($4::text[]) dom`,
		f.user, f.typeA, n, domains)
}

// A send to two domains whose SMTP server answers 421 for one of them:
// the other domain's mail all goes at once; the throttled domain is held
// (in Redis, for every worker) after the mails in flight when the first
// 421 came, and its deliveries wait for the hold's end, pending, their
// attempts not counted, counted as deferred. Once the server takes its
// mail again and the hold ends, the revisits of the ranges deliver them:
// every address gets its mail once, the send completes, the backoff is
// reset.
func TestDomainTryLater(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
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
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	rdb, prefix := domainRedis(t)
	reg := prometheus.NewRegistry()
	var parked []*asynq.Task
	const concurrency = 4
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 40, Window: 2, Concurrency: concurrency}, withMetrics(reg),
		withDomains(t, rdb, prefix, "slow.example=hold"), parkRevisits(&parked))
	f := newSendFixture(t, d, "<p>Hi ((first_name))</p>")
	addContacts(t, d, f, 50, "fast.example", "slow.example") // and the fixture's 5 at example.com: 105

	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.drain(t, mux)

	if c := sendCounters(t, d, f.send); c.Status != 2 || c.Triggered != 105 || c.Delivered != 55 || c.Bounces != 0 {
		t.Fatalf("after the first pass %+v, want running with the 55 other mails delivered", c)
	}
	got := mailsTo(s)
	for i := 1; i <= 50; i++ {
		if n := got[fmt.Sprintf("u%03d@fast.example", i)]; n != 1 {
			t.Errorf("u%03d@fast.example got %d mails", i, n)
		}
		if n := got[fmt.Sprintf("u%03d@slow.example", i)]; n != 0 {
			t.Errorf("u%03d@slow.example got %d mails while refused", i, n)
		}
	}
	// Only the mails in flight when the first 421 came were tried: each
	// sender ends its mail and then finds the domain held.
	tried := int64(refused.Load())
	if tried < 1 || tried > concurrency {
		t.Errorf("slow.example was tried %d times, want 1 to %d", tried, concurrency)
	}
	var pending, charged, early int64
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 0), count(*) FILTER (WHERE attempts > 0),
			count(*) FILTER (WHERE next_at IS NULL OR next_at < now() + interval '25 seconds')
		FROM deliveries WHERE send_id = $1 AND email LIKE '%@slow.example'`, f.send).Scan(&pending, &charged, &early); err != nil {
		t.Fatal(err)
	}
	if pending != 50 || charged != tried || early != 0 {
		t.Errorf("slow.example: %d pending, %d charged an attempt (want %d, the tried), %d due before the 30 s hold ends", pending, charged, tried, early)
	}
	if ttl, err := rdb.PTTL(ctx, prefix+"slow.example:hold").Result(); err != nil || ttl < 25*time.Second {
		t.Errorf("hold in Redis: %v %v", ttl, err)
	}
	m := scrape(t, reg)
	for outcome, want := range map[string]float64{"sent": 55, "deferred": 50, "bounced_soft": 0, "failed": 0} {
		if got := m.Value("mailroom_mails_total", "outcome", outcome); got != want {
			t.Errorf("%s: %v, want %v", outcome, got, want)
		}
	}
	if got := m.Value("mailroom_domain_holds_total", "domain", "slow.example"); got != 1 {
		t.Errorf("%v holds counted, want 1", got)
	}
	if len(parked) == 0 {
		t.Fatal("no revisit queued for the mails put off")
	}

	// The server takes slow.example's mail again; the hold runs out (its
	// key deleted here, and the rows made due, rather than waited for):
	// the revisits queued for that time deliver the rest.
	refusing.Store(false)
	if err := rdb.Del(ctx, prefix+"slow.example:hold").Err(); err != nil {
		t.Fatal(err)
	}
	exec(t, d, "UPDATE deliveries SET next_at = now() WHERE send_id = $1 AND status = 0", f.send)
	for _, task := range parked {
		q.enqueue(ctx, task)
	}
	parked = nil
	q.drain(t, mux)
	if c := sendCounters(t, d, f.send); c.Status != 3 || c.Delivered != 105 || c.Bounces != 0 || !c.SentAt {
		t.Fatalf("after the hold %+v, want completed with 105 delivered", c)
	}
	got = mailsTo(s)
	if len(got) != 105 {
		t.Errorf("%d addresses mailed, want 105", len(got))
	}
	for addr, n := range got {
		if n != 1 {
			t.Errorf("%s got %d mails", addr, n)
		}
	}
	if n, err := rdb.Exists(ctx, prefix+"slow.example:level").Result(); err != nil || n != 0 {
		t.Errorf("the backoff was not reset after the domain took mail: %d %v", n, err)
	}
	if got := scrape(t, reg).Value("mailroom_mails_total", "outcome", "sent"); got != 105 {
		t.Errorf("%v sent, want 105", got)
	}
}

// drain runs a queue's tasks through mux in this goroutine until none is
// left, answering the first error (q.drain fails the test, which only
// the test's goroutine may).
func (q *queue) drainErr(ctx context.Context, mux *asynq.ServeMux) error {
	for {
		q.mu.Lock()
		if len(q.tasks) == 0 {
			q.mu.Unlock()
			return nil
		}
		task := q.tasks[0]
		q.tasks = q.tasks[1:]
		delete(q.ids, taskID(task))
		q.mu.Unlock()
		if err := mux.ProcessTask(ctx, task); err != nil {
			return fmt.Errorf("%s %s: %w", task.Type(), task.Payload(), err)
		}
	}
}

// A domain's cap on mails in flight holds across two engines sharing
// Redis, each sending its own send at the same time: the server never has
// more than two of the capped domain's mails at once (each takes 10 ms),
// while the other domain goes unhindered; the mails that found every slot
// taken wait untried for a second and go on their range's revisit.
func TestDomainCapAcrossEngines(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	var flying, most atomic.Int32
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		if strings.HasSuffix(rcpt, "@cap.example") {
			n := flying.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(10 * time.Millisecond)
			flying.Add(-1)
		}
		return nil
	}})
	rdb, prefix := domainRedis(t)
	type side struct {
		mux    *asynq.ServeMux
		q      *queue
		f      sendFixture
		parked []*asynq.Task
	}
	sides := make([]*side, 2)
	for i := range sides {
		pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 8, Timeout: 5 * time.Second})
		defer pool.Close()
		sd := &side{}
		sd.mux, sd.q, _ = engine(t, d, pool, jobs.Engine{BatchSize: 20, Window: 2, Concurrency: 8},
			withDomains(t, rdb, prefix, "cap.example=conc:2"), parkRevisits(&sd.parked))
		sd.f = newSendFixture(t, d, "<p>hi</p>")
		addContacts(t, d, sd.f, 30, "cap.example", "free.example")
		exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", sd.f.send)
		sd.q.enqueue(ctx, jobs.NewDispatchTask(sd.f.send, 1, time.Now()))
		sides[i] = sd
	}
	for round := 0; ; round++ {
		var wg sync.WaitGroup
		errs := make([]error, len(sides))
		for i, sd := range sides {
			wg.Go(func() { errs[i] = sd.q.drainErr(ctx, sd.mux) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		done := true
		for _, sd := range sides {
			done = done && sendCounters(t, d, sd.f.send).Status == 3
		}
		if done {
			t.Logf("both sends completed after %d revisit rounds", round)
			break
		}
		if round == 20 {
			t.Fatal("the sends did not complete")
		}
		// The mails put off come due (brought on here rather than waited
		// for) and their revisits run.
		for _, sd := range sides {
			exec(t, d, "UPDATE deliveries SET next_at = now() WHERE send_id = $1 AND status = 0", sd.f.send)
			for _, task := range sd.parked {
				sd.q.enqueue(ctx, task)
			}
			sd.parked = nil
		}
	}
	if n := most.Load(); n > 2 || n < 1 {
		t.Errorf("%d mails of cap.example in flight at once, want at most 2", n)
	}
	got := mailsTo(s)
	if len(got) != 65 { // the fixtures' 5 addresses, 30 at each domain
		t.Errorf("%d addresses mailed, want 65", len(got))
	}
	for addr, n := range got {
		if n != 2 { // once by each send
			t.Errorf("%s got %d mails, want 2", addr, n)
		}
	}
	for _, sd := range sides {
		if c := sendCounters(t, d, sd.f.send); c.Delivered != 65 {
			t.Errorf("send %d: %+v", sd.f.send, c)
		}
	}
}

// With Redis away the domain limits fail open: the send goes unthrottled
// (as the account rate does), every mail delivered in one pass.
func TestDomainLimitsRedisAway(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	away := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // nothing listens
	defer away.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 40}, withDomains(t, away, "x:{d}:", "slow.example=rate:1,conc:1"))
	f := newSendFixture(t, d, "<p>hi</p>")
	addContacts(t, d, f, 30, "slow.example")
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.drain(t, mux)
	if c := sendCounters(t, d, f.send); c.Status != 3 || c.Delivered != 35 {
		t.Fatalf("with Redis away: %+v, want all 35 delivered", c)
	}
}
