package delivery

import (
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// Record is what a set of outcomes writes (Store.RecordBatch and
// RecordStep carry it out in one transaction): each delivery row's new
// state, the addresses a hard bounce suppresses, and the webhook events
// (docs/webhooks.md). The rules are NewRecord's; the store only writes.
type Record struct {
	// The rows, by outcome: id, status, when a pending row is due again,
	// the server's reply or the failure.
	IDs      []int64
	Statuses []int16
	NextAts  []time.Time
	Errors   []string
	// Tried is 1 where the mail reached the recipient's step: its attempt
	// counts. Deferred is 1 where a mail stays pending after a try or was
	// put off by its domain: the statistics count it deferred.
	Tried, Deferred []int16
	// Bounced are the addresses a 5xx at RCPT TO suppresses, with the
	// server's reply as the reason.
	Bounced []Suppression
	// Events are the outcomes' webhook events, one per outcome that has
	// one: delivered (naming the delivery), bounce (type "bounce" for a
	// hard bounce, "blocked" for a mail refused for good), deferred.
	Events []mail.HookEvent
	// Providers are the recipients' mailbox providers, by outcome (the
	// providers' statistics, ByProvider).
	Providers []mail.Provider
}

// ProviderCounts are outcomes counted by receiving provider: the
// providers that have any, in order, and for each the mails delivered,
// put off (tried and pending again, or held), hard-bounced and refused
// for good.
type ProviderCounts struct {
	Providers                             []int16
	Delivered, Deferred, Bounced, Blocked []int64
}

// ByProvider counts the outcomes of r at changed (1-based indexes: the
// rows the record changed, as RecordDeliveries answers them) by provider.
func (r *Record) ByProvider(changed []int32) ProviderCounts {
	var n [5][4]int64 // by provider: delivered, deferred, bounced, blocked
	for _, i := range changed {
		j := int(i) - 1
		if j < 0 || j >= len(r.IDs) {
			continue
		}
		p := r.Providers[j]
		switch mail.DeliveryStatus(r.Statuses[j]) {
		case mail.DeliverySent:
			n[p][0]++
		case mail.DeliveryPending:
			if r.Deferred[j] == 1 {
				n[p][1]++
			}
		case mail.DeliveryBounced:
			n[p][2]++
		case mail.DeliveryFailed:
			n[p][3]++
		}
	}
	var c ProviderCounts
	for p := range n {
		if n[p] == [4]int64{} {
			continue
		}
		c.Providers = append(c.Providers, int16(p))
		c.Delivered, c.Deferred = append(c.Delivered, n[p][0]), append(c.Deferred, n[p][1])
		c.Bounced, c.Blocked = append(c.Bounced, n[p][2]), append(c.Blocked, n[p][3])
	}
	return c
}

// Suppression is an address to suppress and why.
type Suppression struct {
	Email  mail.Email
	Reason string
}

// NewRecord is what outcomes of send sendID write, at now.
func NewRecord(sendID int64, outcomes []mail.Outcome, now time.Time) *Record {
	n := len(outcomes)
	r := &Record{IDs: make([]int64, n), Statuses: make([]int16, n), NextAts: make([]time.Time, n), Errors: make([]string, n),
		Tried: make([]int16, n), Deferred: make([]int16, n), Events: make([]mail.HookEvent, 0, n), Providers: make([]mail.Provider, n)}
	at := now.Unix()
	for i := range outcomes {
		o := &outcomes[i]
		r.IDs[i], r.Statuses[i], r.Errors[i], r.NextAts[i] = o.ID, int16(o.Status), o.Error, now
		r.Providers[i] = mail.ProviderOf(o.Email)
		if o.NextAt != nil {
			r.NextAts[i] = *o.NextAt
		}
		if !o.NotTried {
			r.Tried[i] = 1
		}
		deferred := o.Status == mail.DeliveryPending && (o.Deferred || !o.NotTried)
		if deferred {
			r.Deferred[i] = 1
		}
		e := mail.HookEvent{At: at, Email: string(o.Email), SendID: sendID, DeliveryID: o.ID}
		switch {
		case o.Status == mail.DeliverySent:
			// Named by its delivery: the webhook reads the address and the
			// time it went when it posts.
			r.Events = append(r.Events, mail.HookEvent{Kind: mail.HookDelivered, At: at, SendID: sendID, DeliveryID: o.ID})
		case o.Status == mail.DeliveryBounced:
			r.Bounced = append(r.Bounced, Suppression{Email: o.Email, Reason: strings.ToValidUTF8(o.Error, "")})
			e.Kind, e.Type, e.Reason = mail.HookBounce, "bounce", o.Error
			r.Events = append(r.Events, e)
		case o.Status == mail.DeliveryFailed:
			e.Kind, e.Type, e.Reason = mail.HookBounce, "blocked", o.Error
			r.Events = append(r.Events, e)
		case deferred:
			e.Kind, e.Reason = mail.HookDeferred, o.Error
			if e.Reason == "" && o.NotTried {
				e.Reason = mail.HeldReason // put off untried by its domain's limits
			}
			r.Events = append(r.Events, e)
		}
	}
	return r
}
