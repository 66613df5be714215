package delivery

import (
	"errors"
	"fmt"
)

// Guards are an account's reputation guards (docs/deliverability.md): a
// running single send is paused when its hard bounces reach BounceRate of
// its attempted mails once it has attempted BounceAfter, or its
// complaints reach ComplaintRate of its delivered mails once it has
// delivered ComplaintAfter. A rate of 0 turns its guard off.
type Guards struct {
	BounceRate     float64
	BounceAfter    int64
	ComplaintRate  float64
	ComplaintAfter int64
}

// DefaultGuards are the guards of a new account: the mailbox providers'
// published limits (Gmail's and Yahoo's bulk sender rules: complaints
// under 0.3 %; a hard bounce rate past 5 % is what ESPs such as Amazon
// SES review an account for), judged once a send has that many mails.
var DefaultGuards = Guards{BounceRate: 0.05, BounceAfter: 1000, ComplaintRate: 0.003, ComplaintAfter: 1000}

// SendCounts are what the guards judge of a send: its mails with a final
// answer (attempted), hard bounces (at RCPT TO and reported later),
// delivered mails and complaints.
type SendCounts struct {
	Attempted, Bounces, Delivered, Complaints int64
}

// Breach is why a send with counts c is paused under g; "" when it is
// not.
func (g Guards) Breach(c SendCounts) string {
	if g.BounceRate > 0 && c.Attempted >= g.BounceAfter && float64(c.Bounces) >= g.BounceRate*float64(c.Attempted) {
		return fmt.Sprintf("hard bounces reached %s of %d attempted mails (%d); the limit is %s once %d are attempted",
			percent(c.Bounces, c.Attempted), c.Attempted, c.Bounces, percentOf(g.BounceRate), g.BounceAfter)
	}
	if g.ComplaintRate > 0 && c.Delivered >= g.ComplaintAfter && float64(c.Complaints) >= g.ComplaintRate*float64(c.Delivered) {
		return fmt.Sprintf("spam complaints reached %s of %d delivered mails (%d); the limit is %s once %d are delivered",
			percent(c.Complaints, c.Delivered), c.Delivered, c.Complaints, percentOf(g.ComplaintRate), g.ComplaintAfter)
	}
	return ""
}

func percent(n, of int64) string { return percentOf(float64(n) / float64(of)) }

// percentOf writes a rate as a percentage with the digits it needs
// (5 %, 0.3 %, 12.35 %).
func percentOf(r float64) string {
	return fmt.Sprintf("%s %%", trimZeros(fmt.Sprintf("%.2f", 100*r)))
}

func trimZeros(s string) string {
	for len(s) > 1 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// Recorded is what recording outcomes answers: whether it completed the
// send, and whether the send is paused (by this record's counts or
// before): its ranges hand out no further mail.
type Recorded struct {
	Completed, Paused bool
}

// ErrPaused is ClaimDeliveries' answer for a paused send: its chain ends
// (resuming it makes it idle for the sweeper, which starts it again).
var ErrPaused = errors.New("delivery: the send is paused")
