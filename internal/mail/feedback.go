package mail

// FeedbackKind is what an inbound report says about a delivered mail
// (docs/bounces.md).
type FeedbackKind int8

// The kinds of feedback the bounce and complaint intake acts on.
const (
	HardBounce FeedbackKind = iota + 1 // the address is gone: suppressed, counted once per delivery
	SoftBounce                         // a temporary or message-level failure: counted only
	Complaint                          // the recipient reported the mail as spam: suppressed, counted once per delivery
)

func (k FeedbackKind) String() string {
	switch k {
	case HardBounce:
		return "hard_bounce"
	case SoftBounce:
		return "soft_bounce"
	case Complaint:
		return "complaint"
	}
	return "none"
}

// Feedback is one report about delivery DeliveryID of send SendID.
type Feedback struct {
	Kind               FeedbackKind
	SendID, DeliveryID int64
	Status             string // bounces: the enhanced status code (5.1.1)
	Reason             string // bounces: the diagnostic; complaints: the feedback type (abuse)
	Via                string // the report's form: dsn, text, arf
	// NamedBy says how the report named the delivery: "return path" (the
	// VERP address it was sent to), "quoted return path", "original mail
	// from" (an ARF's Original-Mail-From), "message-id" (the quoted
	// Message-ID's MAC); logged, not kept.
	NamedBy string
	// Match, when not empty, are the addresses the report names, lower
	// case: the delivery is acted on only when its address is one of them
	// (a delivery found by its unsigned Message-ID).
	Match []string
}

// FeedbackResult is what recording a Feedback did.
type FeedbackResult struct {
	Found   bool // the delivery exists, went out and matched
	Counted bool // this report counted (a hard bounce or a complaint counts once per delivery)
	UserID  int64
	Email   Email
}

// InboundMessage is an inbound mail kept for inspection: the listener
// took it but could not act on it.
type InboundMessage struct {
	MailFrom, Rcpt     string
	Reason             string
	SendID, DeliveryID int64 // the delivery, when one was found; 0 none
	Size               int   // bytes received
	Raw                []byte
}

// EventAddressComplained is recorded once per delivery whose recipient
// complained (subject: single_send; payload: email_address,
// feedback_type, delivery_id, unsubscribe_id).
const EventAddressComplained = "address.complained"
