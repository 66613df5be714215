// Package jobs is the asynq edge of mailroom: task types and payloads, their
// constructors, the enqueueing client and the worker's handler mux. Payloads
// carry ids, never records; handlers decode a payload and call the
// delivery engine (internal/delivery) or a mailer, and are idempotent.
package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/dkim"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/smtp"
)

// Queue names and their weights: of every 10 tasks a worker picks, about 6
// come from critical, 3 from default and 1 from bulk while all are busy.
// Webhook tasks have a queue of their own (QueueWebhooks), served by a
// second server with its own slots (webhook.go).
const (
	QueueCritical = "critical" // notifications, verification mails
	QueueDefault  = "default"  // dispatch, sweeps
	QueueBulk     = "bulk"     // send batches
)

// Queues is the worker's queue configuration.
var Queues = map[string]int{QueueCritical: 6, QueueDefault: 3, QueueBulk: 1}

// Deps are what the handlers need.
type Deps struct {
	DB         *postgres.DB
	Log        *slog.Logger
	Transport  smtp.Transport
	NotifyFrom string // From of notification and verification mails
	PublicURL  string // base of the links put into mails
	// DKIM signs each mail whose From domain has a key; nil signs none.
	DKIM *dkim.Keys
	// AllowUnverifiedSenders lets automation runs go from unverified
	// senders (ALLOW_UNVERIFIED_SENDERS, as the API).
	AllowUnverifiedSenders bool
	// ClickTracking rewrites the links of sends' mails to tracked ones
	// (CLICK_TRACKING, docs/tracking.md).
	ClickTracking bool
	// SendRate takes up to n mails of an account's sending rate (perSecond
	// a second, shared by every worker): how many may go now, and how long
	// until more may. nil: accounts' rates are not enforced.
	SendRate func(ctx context.Context, account int64, perSecond, n int) (int, time.Duration, error)
	// Domains are the per-recipient-domain limits and holds, shared by
	// every worker through Redis (DOMAIN_LIMITS, docs/throttling.md); nil:
	// no domain is throttled.
	Domains *ratelimit.Domains
	// Warmups count warming sending domains' mails of a day across the
	// workers (docs/deliverability.md); nil: no warm-up is enforced.
	Warmups *ratelimit.Daily
	// VERP makes each mail's return path bounces+{token}@BOUNCE_DOMAIN
	// (docs/bounces.md); off (the sender's address) when its Domain is
	// empty.
	VERP mail.VERP

	// The delivery engine's (internal/delivery): the per-mail links, the
	// List-Unsubscribe mailto, how to enqueue follow-up tasks, and its
	// tuning.
	Links             mail.Links
	UnsubscribeMailto string
	Enqueue           func(context.Context, *asynq.Task) error
	Engine            Engine
	// Now is the automation stepper's clock; time.Now when nil (tests
	// move it instead of sleeping).
	Now func() time.Time
	// Webhooks is the tuning of webhook delivery (webhook.go).
	Webhooks Webhooks
	// Metrics counts the engine's work (NewMetrics); NewMux makes an
	// unregistered set when nil.
	Metrics *Metrics
	engine  *delivery.Engine // made by NewMux from the above
}

// NewMux returns the worker's handler mux. Each task type registers its
// handler here, built from d.
func NewMux(d Deps) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	d.engine = newEngine(d) // its tuning's defaults and its metrics when nil
	d.Webhooks = d.Webhooks.withDefaults()
	mux.Handle(TypeNotifyEvents, boundary(d.Log, NotifyEvents(d)))
	mux.Handle(TypeVerifySenders, boundary(d.Log, VerifySenders(d)))
	mux.Handle(TypeConsoleMails, boundary(d.Log, ConsoleMails(d)))
	mux.Handle(TypeDesignTestSend, boundary(d.Log, DesignTestSend(d)))
	mux.Handle(TypeDispatchSend, boundary(d.Log, DispatchSend(d)))
	mux.Handle(TypeSendBatch, boundary(d.Log, SendBatch(d)))
	mux.Handle(TypeExpandSend, boundary(d.Log, ExpandSend(d)))
	mux.Handle(TypeSweepSends, boundary(d.Log, SweepSends(d)))
	mux.Handle(TypeDropDeliveries, boundary(d.Log, DropDeliveries(d)))
	mux.Handle(TypeStepAutomations, boundary(d.Log, StepAutomations(d)))
	mux.Handle(TypeEnrollMembers, boundary(d.Log, EnrollMembers(d)))
	mux.Handle(TypeDeliverWebhook, boundary(d.Log, DeliverWebhook(d)))
	mux.Handle(TypeSweepWebhooks, boundary(d.Log, SweepWebhooks(d)))
	mux.Handle(TypeDropWebhookBatches, boundary(d.Log, DropWebhookBatches(d)))
	return mux
}

// newEngine is the delivery engine over d: the database, the transport,
// the limiters, and this package's queue as its scheduler.
func newEngine(d Deps) *delivery.Engine {
	e := delivery.Deps{Store: d.DB, Transport: d.Transport, Scheduler: scheduler{d}, Log: d.Log, DKIM: d.DKIM, VERP: d.VERP,
		Links: d.Links, UnsubscribeMailto: d.UnsubscribeMailto, ClickTracking: d.ClickTracking,
		AllowUnverifiedSenders: d.AllowUnverifiedSenders, Now: d.Now, Config: d.Engine, Metrics: d.Metrics}
	if d.SendRate != nil {
		e.Rates = delivery.LimiterFunc(d.SendRate)
	}
	if d.Domains != nil { // a nil *Domains is not a nil DomainLimiter
		e.Domains = d.Domains
	}
	if d.Warmups != nil {
		e.Warmups = d.Warmups
	}
	return delivery.New(e)
}

// Schedule registers the periodic tasks on a scheduler; the send sweeper
// runs every sweepEvery (10 s when 0).
func Schedule(s *asynq.Scheduler, sweepEvery time.Duration) error {
	if sweepEvery <= 0 {
		sweepEvery = 10 * time.Second
	}
	if _, err := s.Register("@every 1m", NewNotifyEventsTask()); err != nil {
		return err
	}
	if _, err := s.Register("@every 1m", NewVerifySendersTask()); err != nil {
		return err
	}
	if _, err := s.Register("@every 1m", NewConsoleMailsTask()); err != nil {
		return err
	}
	if _, err := s.Register("@every "+sweepEvery.String(), NewSweepSendsTask()); err != nil {
		return err
	}
	// The stepper asks one indexed question when nothing is due: often, so
	// a welcome mail goes out within seconds of the join.
	if _, err := s.Register("@every 2s", NewStepAutomationsTask()); err != nil {
		return err
	}
	_, err := s.Register("@every 1h", NewDropDeliveriesTask())
	return err
}
