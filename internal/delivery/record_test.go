package delivery_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/mail"
)

// What each outcome writes: its row's state, whether its attempt counts
// and it counts as deferred, a suppression for a hard bounce alone, and its
// webhook event (none for a mail that never reached the recipient's step
// through no fault of its domain: the relay down, the worker stopping).
func TestNewRecord(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	later := now.Add(time.Minute)
	outcomes := []mail.Outcome{
		{ID: 1, Email: "a@x.example", Status: mail.DeliverySent},
		{ID: 2, Email: "b@x.example", Status: mail.DeliveryBounced, Error: "550 5.1.1 no such user \xff"},
		{ID: 3, Email: "c@x.example", Status: mail.DeliveryFailed, Error: "552 too big"},
		{ID: 4, Email: "d@x.example", Status: mail.DeliveryPending, NextAt: &later, Error: "452 4.2.2 full"},
		{ID: 5, Email: "e@x.example", Status: mail.DeliveryPending, NextAt: &later, NotTried: true, Deferred: true},
		{ID: 6, Email: "f@x.example", Status: mail.DeliveryPending, NextAt: &later, NotTried: true, Error: "connection refused"},
	}
	r := delivery.NewRecord(9, outcomes, now)
	if !slices.Equal(r.IDs, []int64{1, 2, 3, 4, 5, 6}) ||
		!slices.Equal(r.Statuses, []int16{int16(mail.DeliverySent), int16(mail.DeliveryBounced), int16(mail.DeliveryFailed),
			int16(mail.DeliveryPending), int16(mail.DeliveryPending), int16(mail.DeliveryPending)}) ||
		!slices.Equal(r.Tried, []int16{1, 1, 1, 1, 0, 0}) || !slices.Equal(r.Deferred, []int16{0, 0, 0, 1, 1, 0}) ||
		!r.NextAts[0].Equal(now) || !r.NextAts[3].Equal(later) || r.Errors[2] != "552 too big" {
		t.Fatalf("rows: %+v", r)
	}
	if len(r.Bounced) != 1 || r.Bounced[0].Email != "b@x.example" || r.Bounced[0].Reason != "550 5.1.1 no such user " {
		t.Errorf("suppressions: %+v", r.Bounced)
	}
	want := []mail.HookEvent{
		{Kind: mail.HookDelivered, At: now.Unix(), SendID: 9, DeliveryID: 1},
		{Kind: mail.HookBounce, At: now.Unix(), Email: "b@x.example", SendID: 9, DeliveryID: 2, Type: "bounce", Reason: outcomes[1].Error},
		{Kind: mail.HookBounce, At: now.Unix(), Email: "c@x.example", SendID: 9, DeliveryID: 3, Type: "blocked", Reason: "552 too big"},
		{Kind: mail.HookDeferred, At: now.Unix(), Email: "d@x.example", SendID: 9, DeliveryID: 4, Reason: "452 4.2.2 full"},
		{Kind: mail.HookDeferred, At: now.Unix(), Email: "e@x.example", SendID: 9, DeliveryID: 5, Reason: mail.HeldReason},
	}
	if !slices.Equal(r.Events, want) {
		t.Errorf("events\n%+v, want\n%+v", r.Events, want)
	}
}

// slowSteps is the in-memory store whose first step record waits for
// gate (PostgreSQL slow to answer), having said so on blocked.
type slowSteps struct {
	*memStore
	gate    chan struct{}
	blocked chan struct{}
	once    sync.Once
}

func (s *slowSteps) RecordStep(ctx context.Context, sendID, userID int64, rec *delivery.Record) (delivery.Recorded, error) {
	s.once.Do(func() {
		close(s.blocked)
		<-s.gate
	})
	return s.memStore.RecordStep(ctx, sendID, userID, rec)
}

// While a step's record is slow, the send's mails are held: at most
// MaxUnrecorded of them wait for a step or are being recorded, beside
// the one each sender has in flight, so a worker that dies then leaves
// no more than that sent and not recorded. Once the record goes on, the
// rest goes out, every mail once.
func TestSlowStepHoldsTheMails(t *testing.T) {
	t.Parallel()
	const concurrency = 16
	var slow *slowSteps
	f := newFixture(t, delivery.Config{BatchSize: 3000, Window: 1, Concurrency: concurrency}, func(d *delivery.Deps) {
		slow = &slowSteps{memStore: d.Store.(*memStore), gate: make(chan struct{}), blocked: make(chan struct{})}
		d.Store = slow
	})
	var open sync.Once
	release := func() { open.Do(func() { close(slow.gate) }) }
	t.Cleanup(release)
	to := addresses(3000)
	f.store.add(1, to...)
	chain := f.dispatch(t, 1)
	if len(chain) != 1 || chain[0].kind != "chain" {
		t.Fatalf("dispatch scheduled %+v", chain)
	}
	done := make(chan error, 1)
	go func() { done <- f.e.RunChain(context.Background(), 1, chain[0].k, false) }()
	select {
	case <-slow.blocked:
	case err := <-done:
		t.Fatalf("the range ended (%v) before any step was recorded", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no step was recorded in 10 s")
	}
	// The senders go on until the bound holds them.
	deadline := time.Now().Add(10 * time.Second)
	for len(f.tr.accepted()) < delivery.MaxUnrecorded && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // time for any more to go, were they not held
	held := len(f.tr.accepted())
	t.Logf("%d mails went while the first step was being recorded", held)
	if held < delivery.MaxUnrecorded || held > delivery.MaxUnrecorded+concurrency {
		t.Fatalf("%d mails went while the first step was being recorded; want from %d (MaxUnrecorded) to %d (and one in flight per sender)",
			held, delivery.MaxUnrecorded, delivery.MaxUnrecorded+concurrency)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.drain(t, 20)
	var rcpts []string
	for _, m := range f.tr.accepted() {
		rcpts = append(rcpts, m.To)
	}
	slices.Sort(rcpts)
	slices.Sort(to)
	if !slices.Equal(rcpts, to) {
		t.Fatalf("%d mails accepted, want one to each of %d", len(rcpts), len(to))
	}
	for _, r := range f.store.rows(1) {
		if r.status != mail.DeliverySent || r.sent != 1 {
			t.Fatalf("row %+v", r)
		}
	}
	if f.store.status(1) != 3 {
		t.Errorf("send status %d, want completed", f.store.status(1))
	}
}

// A send keeps one step queue in a worker when it is compiled again (a
// new version, or two chains compiling it at once), so its hold on mails
// not recorded stays one.
func TestSendKeepsItsStepQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, delivery.Config{BatchSize: 10, Window: 1})
	f.store.add(1, addresses(30)...)
	chain := f.dispatch(t, 1)
	if err := f.e.RunChain(context.Background(), 1, chain[0].k, true); err != nil {
		t.Fatal(err)
	}
	first := delivery.StepsOf(f.e, 1)
	if first == nil {
		t.Fatal("the send is not cached after a range ran")
	}
	f.store.mu.Lock()
	f.store.sends[1].send.Version++
	f.store.mu.Unlock()
	if err := f.e.RunChain(context.Background(), 1, chain[0].k+1, true); err != nil {
		t.Fatal(err)
	}
	if got := delivery.StepsOf(f.e, 1); got != first {
		t.Fatal("the send compiled again for its new version got a step queue of its own")
	}
	if n := len(f.tr.accepted()); n != 20 {
		t.Fatalf("%d mails went, want the two ranges' 20", n)
	}
}
