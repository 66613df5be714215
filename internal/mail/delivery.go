package mail

import "time"

// DeliveryStatus is where one recipient's mail of a send stands.
type DeliveryStatus int16

// The states of a delivery row.
const (
	DeliveryPending DeliveryStatus = 0 // waiting (again, after a temporary failure: from NextAt); a batch leases its whole range
	DeliverySent    DeliveryStatus = 2 // accepted by the SMTP server (1 is not used: ranges are leased, not rows)
	DeliveryBounced DeliveryStatus = 3 // refused for good (5xx): a hard bounce
	DeliveryFailed  DeliveryStatus = 4 // temporary failures until the attempts ran out, or refused for this mail alone
	DeliverySkipped DeliveryStatus = 5 // the address was suppressed after the send started: not sent
)

// Outcome is what became of one claimed delivery.
type Outcome struct {
	ID     int64
	Email  Email
	Status DeliveryStatus
	NextAt *time.Time // for DeliveryPending: when to try again
	Error  string     // the server's reply or the failure, for bounced and failed
	// NotTried: the mail did not reach the recipient's step (the
	// connection, the login or the sender was refused, or the worker
	// stopped): the attempt does not count.
	NotTried bool
	// Deferred: put off because the recipient's domain is throttled or
	// answered "try later" (pending, NextAt set); counted as deferred in
	// the statistics, as is any tried mail left pending.
	Deferred bool
}

// Claimed is a delivery a batch leased, with its recipient.
type Claimed struct {
	ID        int64
	ListKey   string // the recipient list it came from: contacts_3, segments_7
	Attempts  int    // this one included
	Recipient Recipient
}

// Events of sends and bounces.
const (
	EventSingleSendStarted   = "single_send.started"   // subject: single_send; payload: triggered
	EventSingleSendCompleted = "single_send.completed" // subject: single_send; payload: triggered, delivered, bounces
	EventSingleSendPaused    = "single_send.paused"    // subject: single_send; payload: reason, attempted, bounces, delivered, complaints
	EventSingleSendCancelled = "single_send.cancelled" // subject: single_send; payload: cancelled, delivered, bounces
	EventAddressBounced      = "address.bounced"       // subject: single_send; payload: email_address, reason
)

// NotTriedDelay is how long a delivery waits when its mail did not reach
// the recipient's step (the relay down, a refused login or sender).
const NotTriedDelay = 30 * time.Second

// MaxAttempts is how many times a delivery is tried before it is failed.
const MaxAttempts = 5

// RetryDelay is how long a delivery waits after its attempt-th temporary
// failure: 30 s, 2 min, 10 min, 30 min.
func RetryDelay(attempt int) time.Duration {
	switch {
	case attempt <= 1:
		return 30 * time.Second
	case attempt == 2:
		return 2 * time.Minute
	case attempt == 3:
		return 10 * time.Minute
	}
	return 30 * time.Minute
}
