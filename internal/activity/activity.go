// Package activity is the open and click recorder (docs/tracking.md): the
// open pixel and the click redirect hand it what they saw and answer at
// once; it writes what collected every second, or as soon as
// Options.Batch items wait, by RecordActivity transactions of set-based
// statements (Options.Write items at most each), rather than a write per
// request. What waits is lost if the
// process dies (at most a second's, or what a failing database held
// back); a full buffer drops new items rather than hold a request, and
// counts them.
package activity

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mailroom/mailroom/internal/mail"
)

// Store records a batch (postgres.DB).
type Store interface {
	RecordActivity(ctx context.Context, opens []mail.Open, clicks []mail.Click) error
}

// Options tune a Recorder; zero values take the defaults.
type Options struct {
	Every time.Duration // how often what waits is written: 1 s
	Batch int           // written at once when this many wait: 1,000
	Max   int           // at most this many wait; more are dropped: 100,000
	// RetryFor is how long items a failed write held back are tried again
	// with the next writes before they are dropped: 30 s.
	RetryFor time.Duration
	// Timeout bounds one write: 10 s.
	Timeout time.Duration
	// Write is the most items one write takes (a longer backlog goes in
	// several): 10,000, so that a write's time stays bounded.
	Write int
	// Metrics, when set, is where the recorder's series are registered
	// (docs/metrics.md).
	Metrics prometheus.Registerer
}

func (o Options) withDefaults() Options {
	if o.Every <= 0 {
		o.Every = time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 1000
	}
	if o.Max <= 0 {
		o.Max = 100_000
	}
	if o.Max < o.Batch {
		o.Max = o.Batch
	}
	if o.RetryFor <= 0 {
		o.RetryFor = 30 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Write <= 0 {
		o.Write = 10_000
	}
	return o
}

// Recorder collects opens and clicks and writes them in batches. Open and
// Click never wait on the database. Safe for concurrent use.
type Recorder struct {
	store Store
	log   *slog.Logger
	opts  Options

	mu      sync.Mutex
	opens   []mail.Open
	clicks  []mail.Click
	failing time.Time // when the write of what waits first failed; zero: none has
	closed  bool

	flushMu sync.Mutex    // one write at a time
	kick    chan struct{} // Batch items wait
	stop    chan struct{}
	done    chan struct{}

	// full counts the opens [0] and clicks [1] dropped because the buffer
	// was full since the loop last logged it.
	full [2]atomic.Int64
	// recorded and dropped are the series of opens [0] and clicks [1].
	recorded, dropped [2]prometheus.Counter
}

// New starts a recorder writing to store. Close stops it.
func New(store Store, log *slog.Logger, opts Options) *Recorder {
	r := &Recorder{store: store, log: log, opts: opts.withDefaults(),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	items := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailroom_activity_items_total",
		Help: "Opens and clicks the API's recorder handled, by kind (open, click) and outcome: recorded (written; one of a delivery, list token or link that does not exist counts nothing there), dropped (the buffer was full, the recorder closed, or the database refused them past the retry window).",
	}, []string{"kind", "outcome"})
	for i, k := range []string{"open", "click"} {
		r.recorded[i], r.dropped[i] = items.WithLabelValues(k, "recorded"), items.WithLabelValues(k, "dropped")
	}
	if r.opts.Metrics != nil {
		r.opts.Metrics.MustRegister(items)
	}
	go r.loop()
	return r
}

const (
	kindOpen = iota
	kindClick
)

// Open adds an open; false when it was dropped.
func (r *Recorder) Open(o mail.Open) bool { return add(r, &r.opens, o, kindOpen) }

// Click adds a click; false when it was dropped.
func (r *Recorder) Click(c mail.Click) bool { return add(r, &r.clicks, c, kindClick) }

// add puts item on the list to (r.opens or r.clicks) when there is room,
// and wakes the writer once Batch items wait; a dropped item is counted.
func add[T any](r *Recorder, to *[]T, item T, kind int) bool {
	r.mu.Lock()
	ok := !r.closed && len(r.opens)+len(r.clicks) < r.opts.Max
	if ok {
		*to = append(*to, item)
	}
	n := len(r.opens) + len(r.clicks)
	r.mu.Unlock()
	if !ok {
		r.dropped[kind].Inc()
		r.full[kind].Add(1)
		return false
	}
	if n >= r.opts.Batch {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	return true
}

func (r *Recorder) loop() {
	defer close(r.done)
	t := time.NewTicker(r.opts.Every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		case <-r.kick:
		}
		r.Flush(context.Background())
		if o, c := r.full[kindOpen].Swap(0), r.full[kindClick].Swap(0); o+c > 0 {
			r.log.Warn("opens and clicks dropped: the recorder's buffer was full", "opens", o, "clicks", c, "max", r.opts.Max)
		}
	}
}

// Flush writes what waits now, Options.Write items at a time. On failure
// the items wait for the next write, until they have failed for
// Options.RetryFor; then they are dropped (counted, logged).
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	for {
		r.mu.Lock()
		n := min(len(r.opens), r.opts.Write)
		opens := r.opens[:n:n]
		r.opens = r.opens[n:]
		m := min(len(r.clicks), r.opts.Write-n)
		clicks := r.clicks[:m:m]
		r.clicks = r.clicks[m:]
		more := n+m == r.opts.Write
		r.mu.Unlock()
		if n+m == 0 {
			return nil
		}
		if err := r.write(ctx, opens, clicks); err != nil || !more {
			return err
		}
	}
}

// write writes one piece taken from what waits, or puts it back.
func (r *Recorder) write(ctx context.Context, opens []mail.Open, clicks []mail.Click) error {
	wctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	err := r.store.RecordActivity(wctx, opens, clicks)
	cancel()
	if err == nil {
		r.mu.Lock()
		r.failing = time.Time{}
		r.mu.Unlock()
		r.recorded[kindOpen].Add(float64(len(opens)))
		r.recorded[kindClick].Add(float64(len(clicks)))
		return nil
	}
	// Held back ahead of what came since, as far as there is room.
	r.mu.Lock()
	now := time.Now()
	if r.failing.IsZero() {
		r.failing = now
	}
	keep := now.Sub(r.failing) < r.opts.RetryFor && !r.closed
	dropOpens, dropClicks := len(opens), len(clicks)
	if keep {
		room := r.opts.Max - len(r.opens) - len(r.clicks)
		opens, clicks = opens[:min(len(opens), room)], clicks[:min(len(clicks), max(0, room-len(opens)))]
		dropOpens, dropClicks = dropOpens-len(opens), dropClicks-len(clicks)
		r.opens, r.clicks = append(opens, r.opens...), append(clicks, r.clicks...)
	}
	// Past the window, each failed write drops what it held until one
	// succeeds (the window is the database's failing, not a piece's).
	r.mu.Unlock()
	if dropOpens+dropClicks > 0 {
		r.dropped[kindOpen].Add(float64(dropOpens))
		r.dropped[kindClick].Add(float64(dropClicks))
		r.log.ErrorContext(ctx, "opens and clicks dropped: the database did not take them", "opens", dropOpens, "clicks", dropClicks, "err", err)
	} else {
		r.log.WarnContext(ctx, "writing opens and clicks failed; they wait for the next write", "opens", len(opens), "clicks", len(clicks), "err", err)
	}
	return err
}

// Close stops taking items and writes what waits with ctx (the process's
// shutdown deadline); what it cannot write is dropped.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	return r.Flush(ctx)
}
