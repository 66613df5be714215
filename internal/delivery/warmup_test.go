package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/mail"
)

func TestWarmupAllowance(t *testing.T) {
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	w := &delivery.Warmup{Domain: "shop.example", From: from}
	for day, want := range map[int]int{0: 50, 1: 100, 2: 500, 3: 1000, 4: 5000, 5: 10000, 6: 20000, 7: 40000, 10: 320000, 11: 640000, 12: 0, 40: 0} {
		if got := w.Allowance(from.Add(time.Duration(day)*24*time.Hour + 13*time.Hour)); got != want {
			t.Errorf("day %d: %d, want %d", day+1, got, want)
		}
	}
	if got := w.Allowance(from.Add(-time.Minute)); got != 0 {
		t.Errorf("before its first day: %d", got)
	}
	custom := &delivery.Warmup{From: from, Schedule: []int{10, 20}}
	if a, b, c := custom.Allowance(from), custom.Allowance(from.Add(24*time.Hour)), custom.Allowance(from.Add(72*time.Hour)); a != 10 || b != 20 || c != 80 {
		t.Errorf("a schedule of its own: %d %d %d", a, b, c)
	}
	if (*delivery.Warmup)(nil).Allowance(from) != 0 {
		t.Error("no warm-up limits")
	}
}

// A warming domain's send goes out to the day's allowance; the rest of
// the range waits untried for the next UTC day, deferred with the reason
// warm-up, and its chain comes back then.
func TestWarmupDefersPastTheAllowance(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	daily := &memDaily{}
	f := newFixture(t, delivery.Config{BatchSize: 50, Window: 1}, func(d *delivery.Deps) {
		d.Warmups, d.Now = daily, func() time.Time { return now }
	})
	f.store.add(5, addresses(100)...)
	f.store.mu.Lock()
	f.store.sends[5].send.Warmup = &delivery.Warmup{Domain: "shop.example", From: now.Truncate(24 * time.Hour), Schedule: []int{30}}
	f.store.mu.Unlock()
	if err := f.e.Dispatch(context.Background(), 5, 1); err != nil {
		t.Fatal(err)
	}
	// The first window (one chain); what it schedules is looked at, not
	// run.
	for _, w := range f.sched.take() {
		if err := f.e.RunChain(context.Background(), w.sendID, w.k, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.tr.accepted()); n != 30 {
		t.Fatalf("%d mails went on the first day, want 30", n)
	}
	tomorrow := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	waiting, untouched := 0, 0
	for _, r := range f.store.rows(5) {
		switch {
		case r.status == mail.DeliverySent:
		case r.status == mail.DeliveryPending && r.errText == mail.WarmupReason && r.nextAt.Equal(tomorrow) && r.attempts == 0:
			waiting++
		case r.status == mail.DeliveryPending && r.errText == "" && r.attempts == 0:
			untouched++
		default:
			t.Fatalf("row %+v", r)
		}
	}
	if waiting != 20 || untouched != 50 {
		t.Fatalf("%d put off to tomorrow, %d not reached, want 20 and 50", waiting, untouched)
	}
	var events int
	for _, e := range f.store.events {
		if e.Kind == mail.HookDeferred && e.Reason == mail.WarmupReason {
			events++
		}
	}
	if events != 20 {
		t.Fatalf("%d deferred events with the warm-up reason, want 20", events)
	}
	next := f.sched.take()
	if len(next) != 1 || next[0].kind != "chain" || next[0].k != 0 || next[0].at.Before(tomorrow.Add(-time.Minute)) {
		t.Fatalf("scheduled %+v, want the chain back at %s", next, tomorrow)
	}
}
