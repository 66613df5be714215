package mail

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// HookKinds is a set of webhook event kinds, one bit each: what a webhook
// wants, what a write emitted (docs/webhooks.md).
type HookKinds uint16

// The event kinds a webhook can want, in the order the API lists them.
const (
	HookDelivered   HookKinds = 1 << iota // the SMTP server accepted the mail
	HookDeferred                          // tried (or held) and put off: tried again later
	HookBounce                            // refused for good: hard (the address is suppressed) or blocked
	HookDropped                           // not sent: the address was suppressed
	HookOpen                              // the open pixel was fetched
	HookClick                             // a tracked link was followed
	HookUnsubscribe                       // the recipient unsubscribed from a mail
	HookComplaint                         // the recipient reported the mail as spam
	HookSendPaused                        // a reputation guard paused a running send (no address: the send's)

	HookAll = HookDelivered | HookDeferred | HookBounce | HookDropped | HookOpen | HookClick | HookUnsubscribe | HookComplaint |
		HookSendPaused
)

// hookNames are the kinds' names, by bit.
var hookNames = [...]string{"delivered", "deferred", "bounce", "dropped", "open", "click", "unsubscribe", "complaint", "send.paused"}

// Name is the API's name of k, a single kind ("" for a set).
func (k HookKinds) Name() string {
	for i, n := range hookNames {
		if k == 1<<i {
			return n
		}
	}
	return ""
}

// Names are the names of the kinds in k, in the API's order.
func (k HookKinds) Names() []string {
	out := []string{}
	for i, n := range hookNames {
		if k&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// HookKindNamed is the kind of that name; false when none is.
func HookKindNamed(name string) (HookKinds, bool) {
	for i, n := range hookNames {
		if n == name {
			return 1 << i, true
		}
	}
	return 0, false
}

// Webhook is an account's event webhook as the API shows it (never its
// secret).
type Webhook struct {
	ID        int64
	UserID    int64
	URL       string
	Events    HookKinds
	CreatedAt time.Time
	UpdatedAt time.Time
}

// WebhookInput is a validated webhook save or update.
type WebhookInput struct {
	URL    string
	Events HookKinds
}

// WebhookURLMax bounds a webhook's URL, in bytes.
const WebhookURLMax = 2048

// MaxWebhooks is how many webhooks an account may have at once.
const MaxWebhooks = 10

// ParseWebhook validates a webhook save or update: url required, an
// absolute http or https URL of at most WebhookURLMax bytes; events any of
// the kinds' names, every kind when none is given. allowPrivate lets the
// URL name a loopback, private or link-local address (tests, a receiver on
// the same network): docs/webhooks.md.
func ParseWebhook(rawURL string, events []string, allowPrivate bool) (WebhookInput, error) {
	var p Problems
	var in WebhookInput
	rawURL = strings.TrimSpace(rawURL)
	switch {
	case rawURL == "":
		p.Required("url")
	case len(rawURL) > WebhookURLMax:
		p.Add("url", "The url may not be greater than 2048 characters.")
	default:
		if msg := webhookURLProblem(rawURL, allowPrivate); msg != "" {
			p.Add("url", msg)
		} else {
			in.URL = rawURL
		}
	}
	for _, e := range events {
		k, ok := HookKindNamed(strings.ToLower(strings.TrimSpace(e)))
		if !ok {
			p.Add("events", "The selected events is invalid.")
			break
		}
		in.Events |= k
	}
	if len(events) == 0 {
		in.Events = HookAll
	}
	return in, p.Err()
}

// webhookURLProblem says what is wrong with an absolute URL for a webhook,
// "" when nothing is.
func webhookURLProblem(raw string, allowPrivate bool) string {
	const invalid = "The url must be a valid http or https URL."
	if !utf8.ValidString(raw) || strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return invalid
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "" || u.Fragment != "" {
		return invalid
	}
	if port := u.Port(); port != "" && (len(port) > 5 || strings.TrimLeft(port, "0123456789") != "") {
		return invalid
	}
	name, ip := WebhookHost(u.Hostname())
	if !ip.IsValid() && (name == "" || strings.HasPrefix(name, ".") || strings.Contains(name, "..")) {
		return invalid // an empty label: no resolver takes it
	}
	if !ip.IsValid() && !validIDN(name) {
		return invalid
	}
	if !allowPrivate && privateHost(name, ip) {
		return PrivateWebhookMessage
	}
	return ""
}

// PrivateWebhookMessage is the url field's message for a target a webhook
// may not reach: the save check's, and the API's when the host name
// resolves to such an address.
const PrivateWebhookMessage = "The url may not point to a private or loopback address."

// WebhookURLName is the host name a webhook's POST to a valid webhook URL
// (one ParseWebhook took) resolves, as WebhookHost reads it: the A-label,
// lower case, without trailing dots; "" when the host is an IP address.
// The API resolves it when the URL is saved (docs/webhooks.md).
func WebhookURLName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	name, _ := WebhookHost(u.Hostname())
	return name
}

// NewWebhookSecret is a fresh signing secret: whsec_ and 32 random bytes
// in URL-safe base64.
func NewWebhookSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// HookEvent is an event emitted for the webhooks of an account, as the
// outbox keeps it until its batch is posted: the send (SendID: its
// single send or automation utr is looked up when posted) and the
// delivery it concerns, when there is one; Email may be left empty when
// DeliveryID names the mail (it is read then).
type HookEvent struct {
	Kind       HookKinds `json:"k"`
	At         int64     `json:"t"` // unix seconds
	Email      string    `json:"e,omitempty"`
	SendID     int64     `json:"s,omitempty"`
	DeliveryID int64     `json:"d,omitempty"`
	Type       string    `json:"y,omitempty"` // bounce: "bounce" (hard) or "blocked"
	Reason     string    `json:"r,omitempty"`
	URL        string    `json:"u,omitempty"`
	GroupID    int64     `json:"g,omitempty"` // unsubscribe from a group
}

// WebhookAttempt is one POST to a webhook, as GET /webhooks/deliveries
// shows it.
type WebhookAttempt struct {
	ID         int64
	At         time.Time
	StatusCode *int // nil: no answer (refused, timed out)
	LatencyMS  int
	Error      string
	Events     int
	Result     WebhookResult
}

// SkippedReason is the reason of a delivery skipped when its batch ran
// because its address was suppressed since the expansion (its error, and
// its dropped event's reason).
const SkippedReason = "suppressed after the send started"

// WarmupReason is the error and deferred event reason of a mail put off
// to the next day by its sending domain's warm-up (docs/deliverability.md).
const WarmupReason = "warm-up: the sending domain's allowance for today is spent"

// HeldReason is the reason of a deferred event for a mail put off untried
// by its recipient domain's limits (docs/throttling.md).
const HeldReason = "held for the recipient domain's limits"

// WebhookResult is what became of the events of an attempt.
type WebhookResult int16

// The results of a webhook attempt.
const (
	WebhookDelivered WebhookResult = 1 // a 2xx: the events are done
	WebhookRetrying  WebhookResult = 2 // failed: the events are posted again later
	WebhookGivenUp   WebhookResult = 3 // failed, and some events had been failing for WEBHOOK_RETRY_FOR: those are given up
)

func (r WebhookResult) String() string {
	switch r {
	case WebhookDelivered:
		return "delivered"
	case WebhookRetrying:
		return "retrying"
	case WebhookGivenUp:
		return "given_up"
	}
	return ""
}

// WebhookEvent is one event as a webhook receives it, SendGrid-style.
// Empty fields are left out.
type WebhookEvent struct {
	Email         string
	Timestamp     int64 // unix seconds
	Event         string
	SingleSendUTR string // the single send the mail was of
	AutomationUTR string // or the automation, for an automation's mail
	DeliveryID    int64  // the mail (one recipient of one send)
	Type          string // bounce: "bounce" (hard: the address is suppressed) or "blocked"
	Reason        string // bounce, deferred, dropped: why
	URL           string // click: the link followed
	GroupID       int64  // unsubscribe: from this group (0: from every mail)
}

// AppendWebhookEvents appends events as the JSON array a webhook is
// posted.
func AppendWebhookEvents(b []byte, events []WebhookEvent) []byte {
	b = append(b, '[')
	for i := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendWebhookEvent(b, &events[i])
	}
	return append(b, ']')
}

// AppendWebhookEvent appends e as a JSON object, empty fields left out.
// Written by hand: a send's events go out by the hundred thousand, and
// reflection would cost more than building them.
func AppendWebhookEvent(b []byte, e *WebhookEvent) []byte {
	b = append(b, `{"email":`...)
	b = appendJSONString(b, e.Email)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, e.Timestamp, 10)
	b = append(b, `,"event":`...)
	b = appendJSONString(b, e.Event)
	if e.SingleSendUTR != "" {
		b = append(b, `,"single_send_utr":`...)
		b = appendJSONString(b, e.SingleSendUTR)
	}
	if e.AutomationUTR != "" {
		b = append(b, `,"automation_utr":`...)
		b = appendJSONString(b, e.AutomationUTR)
	}
	if e.DeliveryID != 0 {
		b = append(b, `,"delivery_id":`...)
		b = strconv.AppendInt(b, e.DeliveryID, 10)
	}
	if e.Type != "" {
		b = append(b, `,"type":`...)
		b = appendJSONString(b, e.Type)
	}
	if e.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, e.Reason)
	}
	if e.URL != "" {
		b = append(b, `,"url":`...)
		b = appendJSONString(b, e.URL)
	}
	if e.GroupID != 0 {
		b = append(b, `,"unsubscribe_group_id":`...)
		b = strconv.AppendInt(b, e.GroupID, 10)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and
// U+2029 escaped (as encoding/json does).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// WebhookSignature is the X-Mailroom-Signature of a POST of body at t:
// t=<unix seconds>,v1=<hex HMAC-SHA256 of "<unix seconds>.<body>" keyed
// with the webhook's secret as shown (whsec_…)>.
func WebhookSignature(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// VerifyWebhookSignature is what a receiver does with the header
// (docs/webhooks.md): it reads t and v1, recomputes the HMAC over
// "<t>.<body>" with the secret and compares it in constant time, and
// accepts a t at most tolerance from now.
func VerifyWebhookSignature(secret, header string, body []byte, now time.Time, tolerance time.Duration) bool {
	var ts, sig string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	at, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(at, 0)).Abs() > tolerance {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return hmac.Equal([]byte(sig), []byte(hex.EncodeToString(m.Sum(nil))))
}
