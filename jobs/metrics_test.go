package jobs_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/metrics/metricstest"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// withMetrics counts the engine's work in reg.
func withMetrics(reg prometheus.Registerer) func(*jobs.Deps) {
	return func(d *jobs.Deps) { d.Metrics = jobs.NewMetrics(reg) }
}

// scrape reads reg as Prometheus does: GET /metrics, the text format.
func scrape(t *testing.T, reg *prometheus.Registry) metricstest.Families {
	t.Helper()
	return metricstest.Scrape(t, metrics.Handler(reg, nil, "", ""))
}

// The engine counts each mail's outcome as it goes (sent equals what the
// SMTP server received), times and sizes its ranges and the send's
// expansion; the pool's series follow its connections. The send of
// TestSingleSendEndToEnd: ann, Bob and hank accepted, gone@ refused with
// 5xx (a hard bounce), later@ with 4xx once (a soft bounce), then
// accepted on its retry.
func TestEngineMetrics(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, "<p>Hi ((first_name))</p>")
	var laterTries atomic.Int32
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		switch {
		case strings.HasPrefix(rcpt, "gone@"):
			return smtptest.Permanent("no such user")
		case strings.HasPrefix(rcpt, "later@") && laterTries.Add(1) == 1:
			return smtptest.Temporary("try later")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	reg := prometheus.NewRegistry()
	jobs.RegisterPool(reg, pool)
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 2, Window: 2, StallAfter: time.Second}, withMetrics(reg))

	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.drain(t, mux)
	exec(t, d, "UPDATE deliveries SET next_at = now() WHERE send_id = $1 AND status = 0", f.send)
	exec(t, d, "UPDATE single_sends SET progress_at = now() - interval '1 minute' WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewSweepSendsTask())
	q.drain(t, mux)
	if c := sendCounters(t, d, f.send); c.Status != 3 || c.Delivered != 4 {
		t.Fatalf("send %+v", c)
	}

	m := scrape(t, reg)
	const mails = "mailroom_mails_total"
	if got := m.Value(mails, "outcome", "sent"); got != float64(s.Count()) || got != 4 {
		t.Errorf("%v mails counted sent, the server received %d (want 4)", got, s.Count())
	}
	for outcome, want := range map[string]float64{"bounced_hard": 1, "bounced_soft": 1, "failed": 0, "deferred": 0} {
		if got := m.Value(mails, "outcome", outcome); got != want || m.Metric(mails, "outcome", outcome) == nil {
			t.Errorf("%s: %v, want %v", outcome, got, want)
		}
	}
	// Five recipients in ranges of 2, then later@'s range again: six
	// mails claimed, every range timed whole and by phase.
	size := m.Metric("mailroom_batch_size")
	if size == nil || size.Histogram.GetSampleSum() != 6 {
		t.Fatalf("batch sizes %v, want 6 mails in all", size)
	}
	ranges := float64(size.Histogram.GetSampleCount())
	if got := m.Value("mailroom_batch_duration_seconds"); got != ranges || ranges < 4 {
		t.Errorf("%v ranges timed, %v sized", got, ranges)
	}
	for _, phase := range []string{"claim", "send", "record"} {
		if got := m.Value("mailroom_batch_phase_duration_seconds", "phase", phase); got != ranges {
			t.Errorf("phase %s timed %v times, want %v", phase, got, ranges)
		}
	}
	if got := m.Value("mailroom_expansion_duration_seconds"); got != 1 {
		t.Errorf("%v expansions timed, want 1", got)
	}
	if got := m.Value("mailroom_expansion_deliveries_total"); got != 5 {
		t.Errorf("%v deliveries expanded, want 5", got)
	}
	if m.Value("mailroom_smtp_pool_size") != 4 || m.Value("mailroom_smtp_connections_in_use") != 0 ||
		m.Value("mailroom_smtp_connections_open") < 1 || m.Value("mailroom_smtp_dials_total") < 1 || m.Value("mailroom_smtp_dial_errors_total") != 0 {
		t.Errorf("pool series: size %v, in use %v, open %v, dials %v, dial errors %v", m.Value("mailroom_smtp_pool_size"),
			m.Value("mailroom_smtp_connections_in_use"), m.Value("mailroom_smtp_connections_open"),
			m.Value("mailroom_smtp_dials_total"), m.Value("mailroom_smtp_dial_errors_total"))
	}
}

// With the relay down every mail is deferred (not tried, no attempt
// counted), and each failed dial is counted.
func TestEngineMetricsRelayDown(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: connection refused
	pool := smtp.NewPool(smtp.Config{Addr: addr, Size: 2, Timeout: time.Second})
	defer pool.Close()
	reg := prometheus.NewRegistry()
	jobs.RegisterPool(reg, pool)
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 20, Window: 1}, withMetrics(reg))
	f := newSendFixture(t, d, "<p>hi</p>")
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.drain(t, mux)
	m := scrape(t, reg)
	if got := m.Value("mailroom_mails_total", "outcome", "deferred"); got != 5 {
		t.Errorf("%v mails deferred, want 5", got)
	}
	if got := m.Value("mailroom_mails_total", "outcome", "sent"); got != 0 {
		t.Errorf("%v mails sent", got)
	}
	if dials, errs := m.Value("mailroom_smtp_dials_total"), m.Value("mailroom_smtp_dial_errors_total"); errs != 5 || dials != errs {
		t.Errorf("%v dials, %v failed, want 5 and 5", dials, errs)
	}
}

// The queue series are asked of Redis at each scrape: a queue's tasks by
// state and its size follow what was enqueued; a queue nothing was ever
// queued on reads 0.
func TestQueueCollector(t *testing.T) {
	t.Parallel()
	redisOpt := asynq.RedisClientOpt{Addr: "127.0.0.1:6379", DB: 10} // no other test flushes it
	queue := fmt.Sprintf("metricstest-%d", os.Getpid())
	empty := queue + "-empty"
	client := asynq.NewClient(redisOpt)
	defer client.Close()
	in := asynq.NewInspector(redisOpt)
	defer in.Close()
	t.Cleanup(func() { in.DeleteQueue(queue, true) })
	for i := range 5 {
		opts := []asynq.Option{asynq.Queue(queue)}
		if i >= 3 {
			opts = append(opts, asynq.ProcessIn(time.Hour))
		}
		if _, err := client.Enqueue(asynq.NewTask("metrics:test", []byte(fmt.Sprint(i))), opts...); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(jobs.NewQueueCollector(in, []string{queue, empty}, 2*time.Second))
	m := scrape(t, reg)
	if got := m.Value("mailroom_queue_up"); got != 1 {
		t.Fatalf("mailroom_queue_up %v", got)
	}
	for _, c := range []struct {
		name, queue, state string
		want               float64
	}{
		{"mailroom_queue_size", queue, "", 5},
		{"mailroom_queue_tasks", queue, "pending", 3},
		{"mailroom_queue_tasks", queue, "scheduled", 2},
		{"mailroom_queue_tasks", queue, "active", 0},
		{"mailroom_queue_processed_total", queue, "", 0},
		{"mailroom_queue_paused", queue, "", 0},
		{"mailroom_queue_size", empty, "", 0},
		{"mailroom_queue_tasks", empty, "pending", 0},
	} {
		labels := []string{"queue", c.queue}
		if c.state != "" {
			labels = append(labels, "state", c.state)
		}
		if m.Metric(c.name, labels...) == nil {
			t.Errorf("%s %v: no sample", c.name, labels)
		} else if got := m.Value(c.name, labels...); got != c.want {
			t.Errorf("%s %v: %v, want %v", c.name, labels, got, c.want)
		}
	}
	if got := m.Value("mailroom_queue_latency_seconds", "queue", queue); got < 0 || got > 60 {
		t.Errorf("latency %v s", got)
	}
	if err := in.PauseQueue(queue); err != nil {
		t.Fatal(err)
	}
	if got := scrape(t, reg).Value("mailroom_queue_paused", "queue", queue); got != 1 {
		t.Errorf("paused queue reads %v", got)
	}
}

// A Redis that does not answer costs a scrape the collector's timeout,
// not Redis's own (5 s here): mailroom_queue_up is 0 and the other series
// are served.
func TestQueueCollectorTimeout(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // takes connections, never answers
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	in := asynq.NewInspector(asynq.RedisClientOpt{Addr: l.Addr().String(), ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	defer in.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(jobs.NewQueueCollector(in, []string{jobs.QueueBulk}, 100*time.Millisecond))
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "other_total", Help: "x"})
	reg.MustRegister(other)
	start := time.Now()
	m := scrape(t, reg)
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the scrape waited %v on a silent Redis", took)
	}
	if m.Metric("mailroom_queue_up") == nil || m.Value("mailroom_queue_up") != 0 || m["mailroom_queue_size"] != nil || m["other_total"] == nil {
		t.Errorf("with Redis silent: up %v, size %v, other %v", m.Value("mailroom_queue_up"), m["mailroom_queue_size"], m["other_total"])
	}
	// The next scrape does not pile up behind the question still waiting.
	if got := scrape(t, reg).Value("mailroom_queue_up"); got != 0 {
		t.Errorf("second scrape: up %v", got)
	}
}

// With several relays the pool series are their pools' together and each
// relay has its own: up, the mails it accepted, those it handed on.
func TestRelayMetrics(t *testing.T) {
	a, b := smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{})
	cfgs, err := smtp.ParseURLs("smtp://" + a.Addr + "?name=a&pool=2 smtp://" + b.Addr + "?name=b&pool=3")
	if err != nil {
		t.Fatal(err)
	}
	rs := smtp.NewRelays(cfgs, nil)
	defer rs.Close()
	reg := prometheus.NewRegistry()
	jobs.RegisterRelays(reg, rs)
	send := func(n int) {
		for i := range n {
			m := &smtp.Message{From: "n@shop.example", To: fmt.Sprintf("r%d@example.com", i), Data: []byte("\r\nhi\r\n")}
			if res := rs.Send(context.Background(), m); res.Class != smtp.Accepted {
				t.Fatalf("mail %d: %+v", i, res)
			}
		}
	}
	send(10)
	a.GoAway()
	send(4) // a's turn fails over to b
	m := scrape(t, reg)
	for _, c := range []struct {
		name, relay string
		want        float64
	}{
		{"mailroom_smtp_relay_up", "a", 0}, {"mailroom_smtp_relay_up", "b", 1},
		{"mailroom_smtp_relay_sent_total", "a", 5}, {"mailroom_smtp_relay_sent_total", "b", 9},
		{"mailroom_smtp_relay_failovers_total", "a", 1}, {"mailroom_smtp_relay_failovers_total", "b", 0},
	} {
		if got := m.Value(c.name, "relay", c.relay); got != c.want {
			t.Errorf("%s{relay=%q} = %v, want %v", c.name, c.relay, got, c.want)
		}
	}
	if got := m.Value("mailroom_smtp_pool_size"); got != 5 {
		t.Errorf("pool size %v, want 2 + 3", got)
	}
	if got := m.Value("mailroom_smtp_connections_open"); got < 1 {
		t.Errorf("%v connections open", got)
	}
}
