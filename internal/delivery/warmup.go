package delivery

import (
	"strconv"
	"time"
)

// Warmup is a sending domain's warm-up (docs/deliverability.md): from its
// first day (UTC) its mails go out at most the day's allowance, counted
// across every worker (WarmupLimiter), the rest put off to the next day.
type Warmup struct {
	Domain   string
	From     time.Time // its first day, UTC midnight
	Schedule []int     // day 1, day 2, …; nil: DefaultWarmup
}

// DefaultWarmup is the ramp of a new domain: the one the big senders'
// guides start with (SendGrid's and Mailgun's: tens on the first day, a
// few thousand by the end of the first week), then doubling each day.
var DefaultWarmup = []int{50, 100, 500, 1000, 5000, 10000, 20000}

// WarmupDone is the day's allowance past which a warm-up ends: a domain
// that may send this many a day sends like any other.
const WarmupDone = 1_000_000

// Allowance is how many mails the domain may send on the UTC day of now
// (0: no limit, its warm-up is over or not begun).
func (w *Warmup) Allowance(now time.Time) int {
	if w == nil {
		return 0
	}
	if now.Before(w.From) {
		return 0
	}
	day := int(now.Sub(w.From) / (24 * time.Hour)) // 0 on its first day
	s := w.Schedule
	if len(s) == 0 {
		s = DefaultWarmup
	}
	if day < len(s) {
		return s[day]
	}
	n := s[len(s)-1]
	for i := len(s) - 1; i < day && n < WarmupDone; i++ {
		n *= 2
	}
	if n >= WarmupDone {
		return 0
	}
	return n
}

// nextDay is the UTC midnight after now.
func nextDay(now time.Time) time.Time {
	return now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
}

// warmupKey names the day's count of the mails of s's sending domain.
func warmupKey(s *Send, now time.Time) string {
	return strconv.FormatInt(s.UserID, 10) + ":" + s.Warmup.Domain + ":" + now.UTC().Format(time.DateOnly)
}
