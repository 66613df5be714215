package activity

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mailroom/mailroom/internal/mail"
)

// store keeps what the recorder writes and tells each write on writes; it
// refuses writes while fail is set. (The real store, postgres.DB, is
// exercised end to end by jobs' and cmd/api's tests.)
type store struct {
	mu     sync.Mutex
	opens  []mail.Open
	clicks []mail.Click
	calls  int
	fail   bool
	writes chan int // the number of items of each write, when made
}

func (s *store) RecordActivity(_ context.Context, opens []mail.Open, clicks []mail.Click) error {
	s.mu.Lock()
	s.calls++
	fail := s.fail
	if !fail {
		s.opens = append(s.opens, opens...)
		s.clicks = append(s.clicks, clicks...)
	}
	s.mu.Unlock()
	if s.writes != nil {
		s.writes <- len(opens) + len(clicks)
	}
	if fail {
		return errors.New("database away")
	}
	return nil
}

func (s *store) counts() (opens, clicks, calls int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.opens), len(s.clicks), s.calls
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Items wait for the tick and go in one write; Batch items make the write
// at once, without the tick.
func TestRecorderBatches(t *testing.T) {
	t.Parallel()
	s := &store{writes: make(chan int, 10)}
	r := New(s, quiet(), Options{Every: time.Hour, Batch: 5})
	defer r.Close(context.Background())
	for i := range 4 {
		if !r.Click(mail.Click{SendID: 1, DeliveryID: int64(i + 1), Link: i}) {
			t.Fatal("click dropped")
		}
	}
	if _, _, calls := s.counts(); calls != 0 {
		t.Fatalf("%d writes before the batch was full", calls)
	}
	r.Open(mail.Open{SendID: 1, DeliveryID: 9, ListToken: "t"})
	if n := <-s.writes; n != 5 {
		t.Fatalf("a write of %d items, want 5", n)
	}
	if opens, clicks, calls := s.counts(); opens != 1 || clicks != 4 || calls != 1 {
		t.Fatalf("%d opens, %d clicks in %d writes", opens, clicks, calls)
	}
}

// The tick writes what waits.
func TestRecorderTick(t *testing.T) {
	t.Parallel()
	s := &store{writes: make(chan int, 10)}
	r := New(s, quiet(), Options{Every: 10 * time.Millisecond})
	defer r.Close(context.Background())
	r.Open(mail.Open{SendID: 1, DeliveryID: 2, ListToken: "t"})
	r.Click(mail.Click{SendID: 1, DeliveryID: 2})
	if n := <-s.writes; n != 2 {
		t.Fatalf("a write of %d items, want 2", n)
	}
}

// Close writes what waits and then takes nothing more.
func TestRecorderClose(t *testing.T) {
	t.Parallel()
	s := &store{}
	reg := prometheus.NewRegistry()
	r := New(s, quiet(), Options{Every: time.Hour, Metrics: reg})
	for range 3 {
		r.Click(mail.Click{SendID: 1, DeliveryID: 2, Link: 1})
	}
	r.Open(mail.Open{SendID: 1, DeliveryID: 2, ListToken: "t"})
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if opens, clicks, calls := s.counts(); opens != 1 || clicks != 3 || calls != 1 {
		t.Fatalf("%d opens, %d clicks in %d writes after Close", opens, clicks, calls)
	}
	if r.Click(mail.Click{SendID: 1, DeliveryID: 2}) || r.Open(mail.Open{SendID: 1, DeliveryID: 2}) {
		t.Fatal("taken after Close")
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, outcome string
		want          float64
	}{{"open", "recorded", 1}, {"click", "recorded", 3}, {"open", "dropped", 1}, {"click", "dropped", 1}} {
		if got := count(t, reg, c.kind, c.outcome); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.kind, c.outcome, got, c.want)
		}
	}
}

// A full buffer drops at once, never waits for the writer; the drops are
// counted.
func TestRecorderFull(t *testing.T) {
	t.Parallel()
	s := &store{}
	reg := prometheus.NewRegistry()
	r := New(s, quiet(), Options{Every: time.Hour, Batch: 10, Max: 10, Metrics: reg})
	defer r.Close(context.Background())
	r.flushMu.Lock() // the writer is busy: nothing is taken out of the buffer
	kept := 0
	for i := range 25 {
		if r.Click(mail.Click{SendID: 1, DeliveryID: int64(i + 1)}) {
			kept++
		}
	}
	r.flushMu.Unlock()
	if got := count(t, reg, "click", "dropped"); kept != 10 || got != 15 {
		t.Fatalf("%d kept, %v counted dropped; want 10 and 15", kept, got)
	}
}

// A failed write's items wait for the next one, ahead of what came since;
// past RetryFor they are dropped and counted.
func TestRecorderRetry(t *testing.T) {
	t.Parallel()
	s := &store{fail: true}
	r := New(s, quiet(), Options{Every: time.Hour, RetryFor: time.Hour})
	defer r.Close(context.Background())
	r.Click(mail.Click{SendID: 1, DeliveryID: 1})
	if err := r.Flush(context.Background()); err == nil {
		t.Fatal("no error from a refused write")
	}
	r.Click(mail.Click{SendID: 1, DeliveryID: 2})
	s.mu.Lock()
	s.fail = false
	s.mu.Unlock()
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.clicks[0].DeliveryID != 1 || s.clicks[1].DeliveryID != 2 || len(s.clicks) != 2 {
		t.Fatalf("written %+v", s.clicks)
	}

	s2 := &store{fail: true}
	reg := prometheus.NewRegistry()
	r2 := New(s2, quiet(), Options{Every: time.Hour, RetryFor: time.Nanosecond, Metrics: reg})
	defer r2.Close(context.Background())
	r2.Open(mail.Open{SendID: 1, DeliveryID: 1})
	r2.Flush(context.Background()) // the first failure starts the window
	r2.Flush(context.Background()) // past a window of a nanosecond
	if _, _, calls := s2.counts(); calls != 2 {
		t.Fatalf("%d writes, want 2", calls)
	}
	if got := count(t, reg, "open", "dropped"); got != 1 {
		t.Fatalf("%v opens dropped, want 1", got)
	}
	r2.Flush(context.Background())
	if _, _, calls := s2.counts(); calls != 2 {
		t.Fatal("a dropped item written again")
	}

	// A backlog of several pieces: past the window, every failed write
	// drops its piece; the window does not start again for the next.
	s3 := &store{fail: true}
	reg3 := prometheus.NewRegistry()
	r3 := New(s3, quiet(), Options{Every: time.Hour, RetryFor: time.Millisecond, Write: 1, Metrics: reg3})
	defer r3.Close(context.Background())
	r3.Click(mail.Click{SendID: 1, DeliveryID: 1})
	r3.Click(mail.Click{SendID: 1, DeliveryID: 2})
	r3.Click(mail.Click{SendID: 1, DeliveryID: 3})
	r3.Flush(context.Background()) // the window starts; the first piece waits
	time.Sleep(5 * time.Millisecond)
	for range 3 {
		r3.Flush(context.Background())
	}
	if got := count(t, reg3, "click", "dropped"); got != 3 {
		t.Fatalf("%v clicks dropped past the window, want all 3", got)
	}
}

// Many requests at once: every item is written once.
func TestRecorderConcurrent(t *testing.T) {
	t.Parallel()
	s := &store{}
	r := New(s, quiet(), Options{Every: time.Millisecond, Batch: 7})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 500 {
				r.Click(mail.Click{SendID: int64(g), DeliveryID: int64(i + 1)})
				r.Open(mail.Open{SendID: int64(g), DeliveryID: int64(i + 1)})
			}
		})
	}
	wg.Wait()
	r.Close(context.Background())
	if opens, clicks, _ := s.counts(); opens != 8000 || clicks != 8000 {
		t.Fatalf("%d opens, %d clicks written, want 8,000 each", opens, clicks)
	}
}

// count is the value of the recorder's series of kind (open, click) and
// outcome (recorded, dropped) in reg.
func count(t *testing.T, reg *prometheus.Registry, kind, outcome string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "mailroom_activity_items_total" {
			continue
		}
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["outcome"] == outcome {
				return m.Counter.GetValue()
			}
		}
	}
	t.Fatalf("no series %s %s", kind, outcome)
	return 0
}

// A backlog longer than Options.Write goes in several writes of at most
// that many items, opens first, and all of it is written.
func TestRecorderWritesInPieces(t *testing.T) {
	t.Parallel()
	s := &store{writes: make(chan int, 10)}
	r := New(s, quiet(), Options{Every: time.Hour, Batch: 100, Write: 10})
	defer r.Close(context.Background())
	for i := range 22 {
		r.Click(mail.Click{SendID: 1, DeliveryID: int64(i + 1)})
	}
	for i := range 3 {
		r.Open(mail.Open{SendID: 1, DeliveryID: int64(i + 1), ListToken: "t"})
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for range 3 {
		sizes = append(sizes, <-s.writes)
	}
	if sizes[0] != 10 || sizes[1] != 10 || sizes[2] != 5 {
		t.Fatalf("writes of %v items, want 10, 10, 5", sizes)
	}
	if opens, clicks, calls := s.counts(); opens != 3 || clicks != 22 || calls != 3 {
		t.Fatalf("%d opens, %d clicks in %d writes", opens, clicks, calls)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.clicks {
		if c.DeliveryID != int64(i+1) {
			t.Fatalf("click %d is %+v: written out of order", i, c)
		}
	}
}
