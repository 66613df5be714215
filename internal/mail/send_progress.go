package mail

import "time"

// SendSummary is a single send as a list of sends shows it: its name,
// state and counters, without its templates.
type SendSummary struct {
	ID           int64
	UTR          string
	Name         string
	Subject      string
	Status       int16
	ScheduleType int16
	DueAt        *time.Time // when a ready send goes (nil for a draft)
	StartedAt    *time.Time
	SentAt       *time.Time // when it completed
	CreatedAt    time.Time
	Triggered    int64
	Delivered    int64
	Bounces      int64
	Remaining    int64 // deliveries not final yet
	UniqueOpens  int64
	Paused       bool       // a running send a reputation guard paused
	CancelledAt  *time.Time // when it was cancelled after a pause
	Cancelled    int64      // the deliveries the cancel skipped
}

// Done is how many of a running or completed send's deliveries are final.
func (s SendSummary) Done() int64 { return s.Triggered - s.Remaining }

// Went is how many of its deliveries are final and were not cancelled.
func (s SendSummary) Went() int64 { return s.Done() - s.Cancelled }

// SendProgress is a send's counters while it runs: those its details show
// (Delivered, Bounces), the deliveries not final yet, and the deferred
// tries its statistics count.
type SendProgress struct {
	ID        int64
	Status    int16
	Triggered int64
	Delivered int64
	Bounces   int64
	Remaining int64
	Deferred  int64
	DueAt     *time.Time
	StartedAt *time.Time
	SentAt    *time.Time
	ReadAt    time.Time // the database's clock when they were read
	// PausedReason says why a reputation guard paused the running send
	// ("" when it is not paused; docs/deliverability.md).
	PausedReason string
	CancelledAt  *time.Time // when it was cancelled after a pause
	Cancelled    int64      // the deliveries the cancel skipped
}

// Went is how many of its deliveries are final and were not cancelled.
func (p SendProgress) Went() int64 { return p.Done() - p.Cancelled }

// Done is how many of the send's deliveries are final (delivered,
// bounced, failed or skipped).
func (p SendProgress) Done() int64 { return p.Triggered - p.Remaining }
