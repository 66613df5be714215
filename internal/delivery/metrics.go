package delivery

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mailroom/mailroom/internal/mail"
)

// Metrics are the delivery engine's series (docs/metrics.md). Every child
// is resolved once here, so counting a mail is one atomic add: no label
// lookup, no allocation on the send path.
type Metrics struct {
	mails [mailOutcomes]prometheus.Counter // by mailOutcome

	batch      prometheus.Observer              // a range: claim, send, record
	batchPhase [batchPhases]prometheus.Observer // by batchPhase
	batchSize  prometheus.Observer              // mails claimed by a range
	expansion  prometheus.Observer              // a send's expansion (dispatch)
	expanded   prometheus.Counter               // deliveries made by expansions
	step       prometheus.Observer              // an automation stepping pass
	stepped    prometheus.Counter               // enrollments moved on by passes

	domainHolds *prometheus.CounterVec // by the domain group's first domain (a bounded set: DOMAIN_LIMITS)
}

// mailOutcome sorts a mail's outcome for mailroom_mails_total.
type mailOutcome int

const (
	mailSent        mailOutcome = iota // accepted by the SMTP server
	mailBouncedHard                    // 5xx to RCPT TO: the address is suppressed
	mailBouncedSoft                    // 4xx, timeout or drop at RCPT or DATA: tried again later, the attempt counted
	mailFailed                         // final for this mail: 5xx to the message, a policy refusal, the attempts spent
	mailDeferred                       // put off: not tried (relay down, sender refused, worker stopping, lease lost), or its domain throttled or answering try-later
	mailOutcomes
)

var mailOutcomeLabels = [mailOutcomes]string{"sent", "bounced_hard", "bounced_soft", "failed", "deferred"}

// outcomeOf sorts an outcome as the engine records it (outcome).
func outcomeOf(o *mail.Outcome) mailOutcome {
	switch {
	case o.Status == mail.DeliverySent:
		return mailSent
	case o.Status == mail.DeliveryBounced:
		return mailBouncedHard
	case o.Status == mail.DeliveryFailed:
		return mailFailed
	case o.NotTried || o.Deferred:
		return mailDeferred
	}
	return mailBouncedSoft
}

type batchPhase int

const (
	phaseClaim  batchPhase = iota // lease the range, read its recipients
	phaseSend                     // make and send its mails
	phaseRecord                   // record the outcomes
	batchPhases
)

var batchPhaseLabels = [batchPhases]string{"claim", "send", "record"}

// NewMetrics makes the engine's series and registers them with reg; a nil
// reg keeps them unregistered (tests, a worker without a listener).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	seconds := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	mails := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailroom_mails_total",
		Help: "Mails of sends and automation runs handed to SMTP (or put off), by outcome: sent, bounced_hard, bounced_soft, failed, deferred.",
	}, []string{"outcome"})
	batch := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mailroom_batch_duration_seconds",
		Help:    "Time one id range of a send took: claim, send and record.",
		Buckets: seconds,
	})
	phase := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mailroom_batch_phase_duration_seconds",
		Help:    "Time of each phase of an id range: claim, send, record.",
		Buckets: seconds,
	}, []string{"phase"})
	size := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mailroom_batch_size",
		Help:    "Mails claimed by one id range of a send.",
		Buckets: []float64{1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000},
	})
	expansion := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mailroom_expansion_duration_seconds",
		Help:    "Time a single send's dispatch took to expand its audience into deliveries (one transaction).",
		Buckets: seconds,
	})
	expanded := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mailroom_expansion_deliveries_total",
		Help: "Deliveries made by single sends' expansions (their triggered counts).",
	})
	step := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mailroom_automation_step_duration_seconds",
		Help:    "Time one automation stepping pass took (up to 5,000 due enrollments, one transaction).",
		Buckets: seconds,
	})
	stepped := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mailroom_automation_enrollments_stepped_total",
		Help: "Automation enrollments moved on by stepping passes (to their next schedule, done, or left).",
	})
	holds := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mailroom_domain_holds_total",
		Help: "Holds put on a limited recipient domain group by this worker after a try-later answer (421 or alike), by the group's first domain.",
	}, []string{"domain"})
	if reg != nil {
		reg.MustRegister(mails, batch, phase, size, expansion, expanded, step, stepped, holds)
	}
	m := &Metrics{batch: batch, batchSize: size, expansion: expansion, expanded: expanded, step: step, stepped: stepped, domainHolds: holds}
	for i, l := range mailOutcomeLabels {
		m.mails[i] = mails.WithLabelValues(l)
	}
	for i, l := range batchPhaseLabels {
		m.batchPhase[i] = phase.WithLabelValues(l)
	}
	return m
}

// mail counts one mail's outcome: an atomic add.
func (m *Metrics) mail(o *mail.Outcome) {
	m.mails[outcomeOf(o)].Inc()
}
