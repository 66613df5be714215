package mail

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event kinds an account hears about. Each event is a row of the events
// table written in the transaction of the change that caused it; a worker
// mails it to the account's notification recipients. Kinds of the features
// still to come (hard bounces, senders, single sends, automations) join
// this list with them: see docs/events.md.
const (
	EventContactsImported    = "contacts.imported"    // subject: contact_type; payload: rows, added, updated, skipped
	EventAddressUnsubscribed = "address.unsubscribed" // subject: unsubscribe; payload: email_address, unsubscribe_groups_id
)

// Event is something that happened to an account, to be mailed to its
// notification recipients.
type Event struct {
	ID          int64
	UserID      int64
	Kind        string
	SubjectType string
	SubjectID   *int64
	Payload     string // JSON
	CreatedAt   time.Time
}

// Notice is the event as a notification mail's subject and plain text:
// fixed wording per kind, so nothing of the payload reaches the subject
// line (a header).
func (e Event) Notice() (subject, text string) {
	var p map[string]any
	json.Unmarshal([]byte(e.Payload), &p)
	when := e.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	id := func() string {
		if e.SubjectID == nil {
			return ""
		}
		return fmt.Sprintf(" #%d", *e.SubjectID)
	}
	switch e.Kind {
	case EventContactsImported:
		return "Contacts imported", fmt.Sprintf("A CSV import into contact type%s finished at %s: %v rows read, %v contacts added, %v updated, %v rows skipped for an invalid address.\n",
			id(), when, p["rows"], p["added"], p["updated"], p["skipped"])
	case EventAddressUnsubscribed:
		where := "from every mail of the account"
		if g, ok := p["unsubscribe_groups_id"]; ok && g != nil {
			where = fmt.Sprintf("from unsubscribe group #%v", g)
		}
		return "An address unsubscribed", fmt.Sprintf("%v unsubscribed %s at %s.\n", p["email_address"], where, when)
	case EventSingleSendStarted:
		return "A single send started", fmt.Sprintf("The single send%s started at %s: %v recipients.\n", id(), when, p["triggered"])
	case EventSingleSendCompleted:
		return "A single send completed", fmt.Sprintf("The single send%s completed at %s: %v recipients, %v delivered, %v bounced.\n",
			id(), when, p["triggered"], p["delivered"], p["bounces"])
	case EventSingleSendPaused:
		return "A single send was paused", fmt.Sprintf("The single send%s was paused at %s: %v. It sends nothing more until it is resumed (GET /api/single/send/resume) after review: %v mails attempted, %v hard bounces, %v delivered, %v complaints.\n",
			id(), when, p["reason"], p["attempted"], p["bounces"], p["delivered"], p["complaints"])
	case EventSingleSendCancelled:
		return "A paused single send was cancelled", fmt.Sprintf("The single send%s, paused by a reputation guard, was cancelled at %s: its %v mails not sent yet are skipped. %v delivered, %v bounced before.\n",
			id(), when, p["cancelled"], p["delivered"], p["bounces"])
	case EventAddressBounced:
		return "An address bounced", fmt.Sprintf("A mail of single send%s to %v was refused for good at %s (%v); the address is suppressed for later sends.\n",
			id(), p["email_address"], when, p["reason"])
	case EventAddressComplained:
		return "An address complained", fmt.Sprintf("The recipient %v of a mail of single send%s reported it as spam (%v) at %s; the address is on the global unsubscribe list.\n",
			p["email_address"], id(), p["feedback_type"], when)
	case EventSenderAdded:
		return "A sender was added", fmt.Sprintf("The sender%s <%v> was added at %s; it sends once its address is verified.\n", id(), p["from_email"], when)
	case EventAutomationSetLive:
		return "An automation was set live", fmt.Sprintf("The automation%s %q was set live at %s: it enrolls contacts and sends its mails.\n",
			id(), p["automation_name"], when)
	case EventAutomationPaused:
		return "An automation was paused", fmt.Sprintf("The automation%s %q was paused at %s: its contacts wait where they are until it is set live again.\n",
			id(), p["automation_name"], when)
	case EventSenderVerified:
		return "A sender was verified", fmt.Sprintf("The sender%s <%v> was verified at %s: mail may go out from it.\n", id(), p["from_email"], when)
	}
	return "Event: " + e.Kind, fmt.Sprintf("%s on %s%s at %s.\n%s\n", e.Kind, e.SubjectType, id(), when, e.Payload)
}
