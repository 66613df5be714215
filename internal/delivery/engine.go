// Package delivery is the delivery engine (docs/deliveries.md): a send's
// dispatch, the range loop (claim → links → render → sign → send →
// classify → record), the recipient domains' plan and holds, the compiled
// sends, recovery (what the sweeper restarts), how each SMTP answer is
// classified and what it records, and automations' stepping.
//
// It knows no queue, database driver or web framework: it reaches them
// through four small interfaces it declares. Store is the SQL
// (internal/postgres), Transport the SMTP pool (internal/smtp), Limiter
// and DomainLimiter the shared rates (internal/ratelimit), Scheduler the
// queue that runs a range or a dispatch later (jobs, with asynq). jobs
// keeps the task types and payloads and calls the Engine's methods; the
// engine's unit tests run it on in-memory fakes of the four.
package delivery

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/mailroom/mailroom/internal/dkim"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/smtp"
)

// Store is the SQL the engine runs: each method one statement or one
// transaction, with no rule of its own (internal/postgres implements it).
type Store interface {
	// DispatchSend expands version of send id, when it is still ready and
	// due, into its deliveries of batch ranges of batchSize: a large
	// audience in two steps, the first of about step recipients.
	DispatchSend(ctx context.Context, id int64, version int32, batchSize, step int) (Dispatch, error)
	// ExpandRest expands the rest of a send dispatched in two steps.
	ExpandRest(ctx context.Context, id int64) (Dispatch, error)
	// SendsToExpand are running sends whose rest is still to expand.
	SendsToExpand(ctx context.Context) ([]int64, error)
	// SendForBatch reads a send for its batches; ENOTFOUND when gone.
	SendForBatch(ctx context.Context, id int64) (Send, error)
	// LastDeliveryID is the highest delivery id of a send.
	LastDeliveryID(ctx context.Context, sendID int64) (int64, error)
	// NumberLinks numbers a send's tracked links, the numbers they have
	// kept, new ones after them: the table in number order.
	NumberLinks(ctx context.Context, sendID int64, urls []string) ([]string, error)
	// ClaimDeliveries leases range k ([from, to)) of a send for lease and
	// reads its due rows with their recipients; a nil Lease when another
	// holds it or nothing is due, ErrPaused when the send is paused.
	ClaimDeliveries(ctx context.Context, sendID, groupID, k, from, to int64, lease time.Duration) (*Lease, []mail.Claimed, error)
	// RenewLease extends a lease; false when it was taken over.
	RenewLease(ctx context.Context, l *Lease, lease time.Duration) (bool, error)
	// RecordBatch writes what a range's outcomes make (NewRecord) and ends
	// its lease; it answers whether that completed the send and whether
	// the send is paused (a guard that this record's counts breach pauses
	// it: Guards.Breach). Only rows still pending change, so writing it
	// twice counts nothing twice.
	RecordBatch(ctx context.Context, l *Lease, userID int64, rec *Record) (Recorded, error)
	// RecordStep writes what sent mails of a send's ranges still running
	// make.
	RecordStep(ctx context.Context, sendID, userID int64, rec *Record) (Recorded, error)
	// DueSends are ready sends whose time has come.
	DueSends(ctx context.Context) ([]DueSend, error)
	// StalledSends are running sends that recorded nothing for idle.
	StalledSends(ctx context.Context, idle time.Duration) ([]StalledSend, error)
	// OpenRanges are up to n ranges of a send holding rows a batch could
	// take now, lowest first.
	OpenRanges(ctx context.Context, s StalledSend, n int) ([]int64, error)
	// CompleteSend completes a running send with nothing left open.
	CompleteSend(ctx context.Context, id int64) (bool, error)
	// TouchSend marks a send as having made progress now.
	TouchSend(ctx context.Context, id int64) error
	// MembersToEnroll are live custom automations whose members'
	// enrollment did not finish.
	MembersToEnroll(ctx context.Context) ([]int64, error)
	// EnrollMembers enrolls an automation's current members.
	EnrollMembers(ctx context.Context, automationID int64, now time.Time) (int64, error)
	// StepAutomations moves due enrollments on, making runs.
	StepAutomations(ctx context.Context, st Step) (Pass, error)
	// DropExpiredDeliveries drops the deliveries partitions whose sends
	// all completed longer than retention ago.
	DropExpiredDeliveries(ctx context.Context, retention time.Duration) ([]string, error)
}

// Transport hands one mail to SMTP (internal/smtp's pool).
type Transport interface {
	Send(ctx context.Context, m *smtp.Message) smtp.Result
}

// Limiter is the accounts' sending rates shared by every worker
// (internal/ratelimit.Sender): of n mails of account, how many may go now
// at perSecond, and how long until more may.
type Limiter interface {
	Take(ctx context.Context, account int64, perSecond, n int) (int, time.Duration, error)
}

// LimiterFunc is a function as a Limiter.
type LimiterFunc func(ctx context.Context, account int64, perSecond, n int) (int, time.Duration, error)

// Take calls f.
func (f LimiterFunc) Take(ctx context.Context, account int64, perSecond, n int) (int, time.Duration, error) {
	return f(ctx, account, perSecond, n)
}

// WarmupLimiter counts a warming sending domain's mails of a day across
// every worker (internal/ratelimit): of n asked, how many the day's limit
// still allows under key, the count kept until until.
type WarmupLimiter interface {
	TakeDay(ctx context.Context, key string, limit, n int, until time.Time) (int, error)
}

// DomainLimiter is the recipient domains' limits and holds shared by every
// worker (internal/ratelimit.Domains, docs/throttling.md).
type DomainLimiter interface {
	Group(domain string) int // a domain's limited group, -1 for none
	Len() int                // the number of groups
	Name(g int) string       // a group's first domain
	MinHold() time.Duration  // a hold when the shared one cannot be asked
	Take(ctx context.Context, holder string, ttl time.Duration, asks []ratelimit.Ask) ([]ratelimit.Grant, error)
	Hold(ctx context.Context, g int) (time.Duration, error)
	Renew(ctx context.Context, holder string, ttl time.Duration, groups []int) error
	Release(ctx context.Context, holder string, slots, reset []int) error
}

// Scheduler runs the engine's work later, at least once (jobs, with
// asynq). A tag makes the work distinct from the same work scheduled
// before with another tag (or none), which is otherwise scheduled once.
type Scheduler interface {
	// Chain runs range k of a send at at, and the ranges of its chain
	// after it.
	Chain(ctx context.Context, sendID, k int64, at time.Time, tag string) error
	// Revisit runs range k of a send alone at at.
	Revisit(ctx context.Context, sendID, k int64, at time.Time) error
	// Dispatch dispatches version of a send at at.
	Dispatch(ctx context.Context, sendID int64, version int32, at time.Time, tag string) error
	// Expand expands the rest of a send's audience.
	Expand(ctx context.Context, sendID int64, tag string) error
	// Enroll enrolls an automation's members.
	Enroll(ctx context.Context, automationID int64, tag string) error
	// Step steps the automations soon.
	Step(ctx context.Context) error
}

// Config is the engine's tuning (docs/deliveries.md).
type Config struct {
	BatchSize   int           // deliveries per batch task (id range); 1000
	Window      int           // batch tasks of one send queued at once; 4
	Concurrency int           // mails of one batch in flight at once; 16
	Lease       time.Duration // how long a batch holds its rows, renewed every third of it; 6 s
	StallAfter  time.Duration // a running send idle this long is restarted by the sweeper; 5 s
	Slice       time.Duration // how long one batch task goes on along its chain; 1 s
	Retention   time.Duration // deliveries rows kept after their send completed; 0 keeps them
	// RunEvery is how long an automation schedule that made a small run
	// waits before its next one (docs/automations.md); 30 s.
	RunEvery time.Duration
	// MaxMailBytes is the longest mail sent (MAX_MAIL_BYTES): a recipient
	// whose mail is longer fails, not sent (docs/limits.md); 0 is
	// render.MaxMailBytes, 10 MB.
	MaxMailBytes int
	// MemoryBudget is the bytes the worker's mails in flight may hold
	// together (MAIL_MEMORY_BUDGET, budget.go): each takes its share
	// before it is built; 256 MB when 0.
	MemoryBudget int64
	// ExpandStep is about how many recipients the first step of a large
	// send's expansion inserts (SEND_EXPAND_STEP): a send to contact types
	// whose largest holds more than twice this many starts with those and
	// expands the rest meanwhile (docs/deliveries.md); 20,000 when 0,
	// negative: every send in one step.
	ExpandStep int
}

// withDefaults is c with every unset value at its default.
func (c Config) withDefaults() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = 1000
	}
	if c.Window <= 0 {
		c.Window = 4
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.Lease <= 0 {
		c.Lease = 6 * time.Second
	}
	if c.StallAfter <= 0 {
		c.StallAfter = 5 * time.Second
	}
	if c.Slice <= 0 {
		c.Slice = time.Second
	}
	if c.RunEvery <= 0 {
		c.RunEvery = 30 * time.Second
	}
	if c.MemoryBudget <= 0 {
		c.MemoryBudget = 256 << 20
	}
	if c.ExpandStep == 0 {
		c.ExpandStep = 20000
	}
	return c
}

// Deps are what the engine works with.
type Deps struct {
	Store     Store
	Transport Transport
	Scheduler Scheduler
	// Rates enforces accounts' sending rates; nil: not enforced.
	Rates Limiter
	// Domains are the per-recipient-domain limits; nil: none throttled.
	Domains DomainLimiter
	// Warmups count warming sending domains' mails of a day; nil: no
	// warm-up is enforced.
	Warmups WarmupLimiter
	Log     *slog.Logger
	// DKIM signs each mail whose From domain has a key; nil signs none.
	DKIM *dkim.Keys
	// VERP makes each mail's return path name its delivery
	// (docs/bounces.md); off when its Domain is empty.
	VERP mail.VERP
	// Links make the per-mail links; UnsubscribeMailto is the
	// List-Unsubscribe mailto.
	Links             mail.Links
	UnsubscribeMailto string
	// ClickTracking rewrites sends' links to tracked ones
	// (docs/tracking.md).
	ClickTracking bool
	// AllowUnverifiedSenders lets automation runs go from unverified
	// senders (ALLOW_UNVERIFIED_SENDERS).
	AllowUnverifiedSenders bool
	// Now is the automation stepper's clock; time.Now when nil.
	Now     func() time.Time
	Config  Config
	Metrics *Metrics // NewMetrics(nil) when nil
}

// Engine runs sends and automations. Its methods are safe to call from
// many goroutines and safe to run twice for the same work.
type Engine struct {
	Deps
	sends  *sendCache
	budget *mailBudget // the memory of the mails in flight, one for the process
}

// New is an engine over d, its Config completed with defaults.
func New(d Deps) *Engine {
	d.Config = d.Config.withDefaults()
	if d.Metrics == nil {
		d.Metrics = NewMetrics(nil)
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Engine{Deps: d, sends: newSendCache(), budget: newMailBudget(d.Config.MemoryBudget)}
}

// now is the engine's clock.
func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// permanentError is a failure no retry can fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as one that doing the work again cannot fix.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsMarkedPermanent reports whether err was marked by Permanent.
func IsMarkedPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
