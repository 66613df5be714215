package delivery_test

import (
	"slices"
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
