package delivery

import (
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/internal/mail"
)

// Dispatch is what a dispatch did.
type Dispatch struct {
	Started   bool       // the send is now running (or completed, with no recipient)
	Completed bool       // it had no recipient: completed at once
	DueAt     *time.Time // set when the send is ready but not due yet
	SendID    int64
	First     int64 // first delivery id: batch k holds [First+k*BatchSize, First+(k+1)*BatchSize)
	From      int64 // ExpandRest: the first id it inserted (its first range's)
	Last      int64 // last delivery id
	BatchSize int
	Triggered int64 // the recipients this step inserted
	// Expanding: the first step of a large send's expansion; the rest is
	// to come (Engine.ExpandRest).
	Expanding bool
}

// Send is what a batch needs of a running send.
type Send struct {
	ID, UserID      int64
	Version         int32
	Status          int16
	TemplateID      int64
	TemplateHTML    string // "" for a design template: the catalogue's html_code
	Subject         string
	Preheader       string
	GroupID         int64
	First           int64
	BatchSize       int
	ListTokens      map[string]string // unique_open_token
	Sender          mail.Sender
	SenderAvailable bool
	SendRate        int  // the account's mails a second across workers; 0: no limit
	Expanding       bool // the rest of its audience is still to be expanded
	// Warmup is its sender's domain's warm-up; nil: none.
	Warmup *Warmup
	// Relay is the relay its mails go to first (smtp.Route); "": the
	// relays' rules and weights choose.
	Relay string
}

// Lease is a batch run's hold on one range of a send: renewed while it
// sends, given back when it records. Owner names the run.
type Lease struct {
	SendID, K int64
	Owner     uuid.UUID
}

// DueSend is a ready send whose time has come.
type DueSend struct {
	ID      int64
	Version int32
}

// StalledSend is a running send without progress for a while.
type StalledSend struct {
	ID, First int64
	BatchSize int
}

// Run is a run a stepping pass made: a row of single_sends the batches
// send (docs/automations.md).
type Run struct {
	ID, First, Last int64
	Triggered       int64
}

// Step is one stepping pass's settings.
type Step struct {
	Now         time.Time // the stepper's clock
	Enrollments int       // at most this many enrollments per transaction
	BatchSize   int       // a run's batch ranges
	// RunEvery is the longest a schedule that made a small run (fewer
	// than Enrollments/5 enrollments) waits before its next: the hold
	// starts at 2 s and doubles with each small run that follows closely
	// on the last, so a steady trickle of joins makes a run per RunEvery,
	// not one per pass, while a lone join goes at once.
	RunEvery time.Duration
	NewToken func() string // a run's open token
	// AllowUnverified lets a run go from an unverified sender
	// (ALLOW_UNVERIFIED_SENDERS, as the API's validation).
	AllowUnverified bool
}

// Pass is what one stepping pass did.
type Pass struct {
	Runs    []Run // the runs made, with deliveries
	Stepped int   // enrollments moved on (to their next schedule, done, or left)
	More    bool  // the pass took a full batch: another would find work at once
}
