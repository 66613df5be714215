package delivery

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// The mails that went out are recorded in steps while their ranges still
// send (postgres.RecordStep), not only when a range ends: a worker that
// dies mid-send leaves at most a step and the mails in flight sent but
// not recorded, which the ranges' next runs send again. A step gathers
// the sent mails of every range of the send running in this worker, so a
// send's ranges together write one step per recordStep mails.
//
// A step takes what is waiting when the one before it ends, so a slow
// record (PostgreSQL busy, a lock on the send's counters) let the mails
// waiting grow without bound: a worker killed during one left 950 mails
// sent and not recorded. A send's mails are therefore held (the ranges'
// senders wait before their next mail) while maxUnrecorded of them wait
// for a step, are being recorded by one, or were taken back by a range
// whose own record is under way: a worker that dies leaves at most that
// many, and the mails in flight (one per sender), sent again. A step
// that fails (the database away) leaves its mails to their range's own
// record and stops counting them; a database that is away also fails
// the ranges' lease renewals, which stops their mails within a third of
// the lease.
const (
	recordStep    = 192                    // sent mails that make a step
	recordEvery   = 100 * time.Millisecond // a smaller step waits no longer
	maxUnrecorded = 2*recordStep + 32      // sent mails waiting or being recorded, at most
)

// stepQueue is the steps of one send in this worker (compiledSend.steps;
// the zero value is ready).
type stepQueue struct {
	mu        sync.Mutex
	ready     []stepItem // sent, not recorded yet
	recording int        // mails of the steps being recorded
	ranges    int        // ranges between open and finish
	flushing  int        // steps being recorded (a recorder stopping and the next one may overlap)
	flushed   *sync.Cond // signalled when a step ends or a range takes its mails back
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	// paused says a record found the send paused (a reputation guard):
	// its ranges here hand out no further mail. A range leased later
	// clears it (the send was resumed).
	paused atomic.Bool
}

type stepItem struct {
	r *stepRange
	i int
}

// stepRange is one range's part in its send's steps.
type stepRange struct {
	q         *stepQueue
	out       []mail.Outcome // the range's outcomes, by claim index
	recorded  []bool         // by claim index, under q.mu
	completed bool           // a step completed the send, under q.mu
	taken     int            // sent mails finish took back from the steps, under q.mu
}

// open starts a range's part in the send's steps; the first range starts
// the recorder.
func (q *stepQueue) open(ctx context.Context, e *Engine, sendID, userID int64, out []mail.Outcome) *stepRange {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.flushed == nil {
		q.flushed = sync.NewCond(&q.mu)
	}
	if q.ranges == 0 {
		q.kick, q.stop, q.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go q.run(context.WithoutCancel(ctx), e, sendID, userID, q.kick, q.stop, q.done)
	}
	q.ranges++
	return &stepRange{q: q, out: out, recorded: make([]bool, len(out))}
}

// sent says r.out[i] is the outcome of a mail handed to the transport.
// It returns once fewer than maxUnrecorded of the send's mails wait for a
// step or are being recorded, so the caller's next mail goes within the
// bound.
func (r *stepRange) sent(i int) {
	q := r.q
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ready = append(q.ready, stepItem{r, i})
	if len(q.ready) >= recordStep {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
	for len(q.ready)+q.recording >= maxUnrecorded {
		q.flushed.Wait() // the recorder is running: this range is open
	}
}

func (q *stepQueue) run(ctx context.Context, e *Engine, sendID, userID int64, kick, stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(recordEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-kick:
		case <-tick.C:
		}
		q.mu.Lock()
		step := q.ready
		q.ready = nil
		if len(step) > 0 {
			q.flushing++
			q.recording += len(step)
		}
		q.mu.Unlock()
		if len(step) == 0 {
			continue
		}
		outs := make([]mail.Outcome, len(step))
		for j, it := range step {
			outs[j] = it.r.out[it.i]
		}
		// A step not recorded (the database away) is recorded with the
		// rest of its ranges, which wait for the database.
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := e.Store.RecordStep(rctx, sendID, userID, NewRecord(sendID, outs, time.Now()))
		cancel()
		if err != nil {
			e.Log.WarnContext(ctx, "a step of a send not recorded: it is recorded with its ranges", "send_id", sendID, "err", err)
		}
		if r.Paused {
			q.paused.Store(true)
		}
		completed := r.Completed
		q.mu.Lock()
		if err == nil {
			for _, it := range step {
				it.r.recorded[it.i] = true
				it.r.completed = it.r.completed || completed
			}
		}
		q.flushing--
		q.recording -= len(step)
		q.flushed.Broadcast()
		q.mu.Unlock()
	}
}

// finish ends r's part: its mails waiting for a step are taken back, a
// step under way is waited for, and the outcomes no step recorded are
// returned in claim order with whether a step completed the send. The
// last range stops the recorder.
func (r *stepRange) finish() ([]mail.Outcome, bool) {
	q := r.q
	q.mu.Lock()
	for q.flushing > 0 {
		q.flushed.Wait()
	}
	kept := q.ready[:0]
	for _, it := range q.ready {
		if it.r != r {
			kept = append(kept, it)
		}
	}
	// The mails taken back are still to record: they count until the
	// range's own record is done (written).
	r.taken = len(q.ready) - len(kept)
	q.recording += r.taken
	q.ready = kept
	var rest []mail.Outcome
	for i, o := range r.out {
		if !r.recorded[i] {
			rest = append(rest, o)
		}
	}
	completed := r.completed
	q.ranges--
	var stop, done chan struct{}
	if q.ranges == 0 {
		stop, done = q.stop, q.done
	}
	q.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	return rest, completed
}

// written says the range's own record of what finish returned is over
// (done, or given up): the sent mails it took back no longer count.
func (r *stepRange) written() {
	q := r.q
	q.mu.Lock()
	q.recording -= r.taken
	r.taken = 0
	q.flushed.Broadcast()
	q.mu.Unlock()
}
