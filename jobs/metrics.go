package jobs

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/smtp"
)

// Metrics are the delivery engine's series (delivery.Metrics).
type Metrics = delivery.Metrics

// NewMetrics makes the engine's series and registers them with reg
// (delivery.NewMetrics).
func NewMetrics(reg prometheus.Registerer) *Metrics { return delivery.NewMetrics(reg) }

// RegisterPool registers an SMTP pool's series with reg, read from
// Pool.Stats at each scrape: nothing is counted on the send path.
func RegisterPool(reg prometheus.Registerer, p *smtp.Pool) {
	registerPoolSeries(reg, p.Stats)
}

// RegisterRelays registers the relays' series with reg: the pool series
// of every relay's pool together, and each relay's own (its state, the
// mails it took and those it handed on), read at each scrape.
func RegisterRelays(reg prometheus.Registerer, rs *smtp.Relays) {
	registerPoolSeries(reg, func() (sum smtp.Stats) {
		for _, r := range rs.Stats() {
			sum.Size += r.Pool.Size
			sum.InUse += r.Pool.InUse
			sum.Open += r.Pool.Open
			sum.Dials += r.Pool.Dials
			sum.DialErrors += r.Pool.DialErrors
			sum.Chained += r.Pool.Chained
		}
		return sum
	})
	reg.MustRegister(&relayCollector{rs: rs,
		up: prometheus.NewDesc("mailroom_smtp_relay_up", "1 while the relay takes mail, 0 while it backs off after failing before the recipient.",
			[]string{"relay"}, nil),
		sent: prometheus.NewDesc("mailroom_smtp_relay_sent_total", "Mails the relay accepted.", []string{"relay"}, nil),
		failovers: prometheus.NewDesc("mailroom_smtp_relay_failovers_total",
			"Mails the relay failed before the recipient, handed to another relay.", []string{"relay"}, nil),
	})
}

// registerPoolSeries registers the pool series of stats.
func registerPoolSeries(reg prometheus.Registerer, stats func() smtp.Stats) {
	stat := func(f func(smtp.Stats) float64) func() float64 {
		return func() float64 { return f(stats()) }
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mailroom_smtp_pool_size", Help: "SMTP connections the pool keeps at most."},
			stat(func(s smtp.Stats) float64 { return float64(s.Size) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mailroom_smtp_connections_in_use", Help: "SMTP pool slots carrying a mail now (or dialling for one)."},
			stat(func(s smtp.Stats) float64 { return float64(s.InUse) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mailroom_smtp_connections_open", Help: "SMTP connections dialled and kept, idle or in use."},
			stat(func(s smtp.Stats) float64 { return float64(s.Open) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mailroom_smtp_dials_total", Help: "SMTP connections dialled (TCP, greeting, EHLO, STARTTLS, AUTH)."},
			stat(func(s smtp.Stats) float64 { return float64(s.Dials) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mailroom_smtp_dial_errors_total", Help: "SMTP dials that failed."},
			stat(func(s smtp.Stats) float64 { return float64(s.DialErrors) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mailroom_smtp_chained_total",
			Help: "Mails sent chained: their envelope went in the same write as the message before them on their connection (PIPELINING)."},
			stat(func(s smtp.Stats) float64 { return float64(s.Chained) })),
	)
}

// relayCollector reports each relay's series at a scrape.
type relayCollector struct {
	rs                  *smtp.Relays
	up, sent, failovers *prometheus.Desc
}

func (c *relayCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.sent
	ch <- c.failovers
}

func (c *relayCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.rs.Stats() {
		up := 1.0
		if r.Out {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, r.Name)
		ch <- prometheus.MustNewConstMetric(c.sent, prometheus.CounterValue, float64(r.Sent), r.Name)
		ch <- prometheus.MustNewConstMetric(c.failovers, prometheus.CounterValue, float64(r.Failovers), r.Name)
	}
}

// QueueCollector reports asynq's queues at each scrape, asked of Redis
// through an Inspector (GetQueueInfo, one round trip per queue) within a
// timeout: a scrape never waits on a slow Redis longer than that, and
// mailroom_queue_up says whether the figures came. Every worker reports
// the same, cluster-wide figures.
type QueueCollector struct {
	in      *asynq.Inspector
	queues  []string
	timeout time.Duration
	busy    atomic.Bool // a collection still waiting on Redis: the next scrape does not pile up behind it

	up, size, tasks, latency, processed, failed, paused *prometheus.Desc
}

// NewQueueCollector reports queues (a queue not in Redis yet reads 0)
// through in, waiting at most timeout for Redis at each scrape.
func NewQueueCollector(in *asynq.Inspector, queues []string, timeout time.Duration) *QueueCollector {
	q := []string{"queue"}
	return &QueueCollector{in: in, queues: slices.Sorted(slices.Values(queues)), timeout: timeout,
		up:        prometheus.NewDesc("mailroom_queue_up", "1 when Redis answered the queue figures within the scrape's timeout.", nil, nil),
		size:      prometheus.NewDesc("mailroom_queue_size", "Tasks in the asynq queue: pending, active, scheduled, retry, aggregating and archived.", q, nil),
		tasks:     prometheus.NewDesc("mailroom_queue_tasks", "Tasks in the asynq queue by state.", []string{"queue", "state"}, nil),
		latency:   prometheus.NewDesc("mailroom_queue_latency_seconds", "How long the queue's oldest pending task has waited.", q, nil),
		processed: prometheus.NewDesc("mailroom_queue_processed_total", "Tasks of the queue processed, succeeded or failed (asynq's cumulative count).", q, nil),
		failed:    prometheus.NewDesc("mailroom_queue_failed_total", "Tasks of the queue whose handler failed (asynq's cumulative count).", q, nil),
		paused:    prometheus.NewDesc("mailroom_queue_paused", "1 when the queue is paused.", q, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.size, c.tasks, c.latency, c.processed, c.failed, c.paused} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	infos, ok := c.read()
	if !ok {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, qi := range infos {
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{qi.Queue}, labels...)...)
		}
		gauge(c.size, float64(qi.Size))
		for _, s := range []struct {
			state string
			n     int
		}{{"pending", qi.Pending}, {"active", qi.Active}, {"scheduled", qi.Scheduled}, {"retry", qi.Retry},
			{"archived", qi.Archived}, {"completed", qi.Completed}, {"aggregating", qi.Aggregating}} {
			gauge(c.tasks, float64(s.n), s.state)
		}
		gauge(c.latency, qi.Latency.Seconds())
		gauge(c.paused, b2f(qi.Paused))
		ch <- prometheus.MustNewConstMetric(c.processed, prometheus.CounterValue, float64(qi.ProcessedTotal), qi.Queue)
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(qi.FailedTotal), qi.Queue)
	}
}

// read asks Redis for every queue's figures, giving up after the timeout
// (the Inspector takes no context: the question goes on in its goroutine,
// and scrapes meanwhile answer at once without figures).
func (c *QueueCollector) read() ([]*asynq.QueueInfo, bool) {
	if !c.busy.CompareAndSwap(false, true) {
		return nil, false
	}
	done := make(chan []*asynq.QueueInfo, 1)
	go func() {
		defer c.busy.Store(false)
		done <- c.inspect()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	select {
	case infos := <-done:
		return infos, infos != nil
	case <-ctx.Done():
		return nil, false
	}
}

// inspect is every queue's figures, nil when Redis failed.
func (c *QueueCollector) inspect() []*asynq.QueueInfo {
	known, err := c.in.Queues()
	if err != nil {
		return nil
	}
	infos := make([]*asynq.QueueInfo, 0, len(c.queues))
	for _, q := range c.queues {
		if !slices.Contains(known, q) { // nothing was ever queued there
			infos = append(infos, &asynq.QueueInfo{Queue: q})
			continue
		}
		qi, err := c.in.GetQueueInfo(q)
		if err != nil {
			return nil
		}
		infos = append(infos, qi)
	}
	return infos
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
