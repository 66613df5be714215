package mail

import (
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/idna"
)

// The states of a sending domain's DNS record after a lookup.
const (
	RecordPending = "pending" // not looked up yet
	RecordFound   = "found"   // published as it should be
	RecordMissing = "missing" // nothing of its kind at its name
	RecordWrong   = "wrong"   // something else there (Found says what)
	RecordUnknown = "unknown" // the lookup failed (Found holds the error)
)

// DomainRecord is a DNS record an account publishes for a sending domain,
// and what its last lookup found.
type DomainRecord struct {
	Purpose string   `json:"purpose"` // dkim, dkim-ed25519, spf, dmarc, return-path
	Type    string   `json:"type"`    // TXT, MX
	Host    string   `json:"host"`
	Value   string   `json:"value"`
	Status  string   `json:"status"`
	Found   []string `json:"found"`
}

// SendingDomain is an account's sending domain as the API shows it.
type SendingDomain struct {
	ID         int64
	UserID     int64
	Domain     string
	Selector   string
	Ed25519    bool
	Records    []DomainRecord
	Verified   bool // every record found
	CheckedAt  *time.Time
	VerifiedAt *time.Time
	CreatedAt  time.Time
	// WarmupFrom is the first day (UTC) of its warm-up, nil when it is not
	// warming up; WarmupSchedule its day-by-day allowance (nil: the
	// default ramp).
	WarmupFrom     *time.Time
	WarmupSchedule []int
}

// MaxWarmupDays bounds a warm-up schedule's entries.
const MaxWarmupDays = 60

// ParseWarmupSchedule reads a warm-up schedule: empty (the default ramp),
// or the day-by-day allowances, comma-separated, each an integer from 1
// to 1,000,000,000 and none below the one before, at most MaxWarmupDays.
func ParseWarmupSchedule(v string) ([]int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	msg := "The schedule must be day-by-day mail counts, comma-separated, each from 1 to 1000000000 and none below the one before."
	if len(parts) > MaxWarmupDays {
		return nil, Invalid("schedule", "The schedule may not have more than 60 days.")
	}
	out := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 1_000_000_000 || i > 0 && n < out[i-1] {
			return nil, Invalid("schedule", msg)
		}
		out[i] = n
	}
	return out, nil
}

// ParseSendingDomain validates a domain to send from: a DNS name of at
// least two labels, not an address, at most 253 characters, lower-cased
// and in its A-label (punycode) form.
func ParseSendingDomain(v string) (string, error) {
	var p Problems
	v = strings.TrimSuffix(strings.TrimSpace(v), ".")
	if v == "" {
		p.Required("domain")
		return "", p.Err()
	}
	d, err := idna.Lookup.ToASCII(v)
	if err == nil {
		d = strings.ToLower(d)
	}
	switch {
	case err != nil || net.ParseIP(v) != nil || !strings.Contains(d, ".") || len(d) > 253 || !validLabels(d):
		p.Add("domain", "The domain must be a valid domain name.")
	}
	return d, p.Err()
}

// validLabels reports whether every label of d is 1 to 63 letters,
// digits and inner hyphens, the last not all digits.
func validLabels(d string) bool {
	labels := strings.Split(d, ".")
	for i, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		digits := true
		for _, c := range l {
			switch {
			case c >= 'a' && c <= 'z', c == '-':
				digits = false
			case c >= '0' && c <= '9':
			default:
				return false
			}
		}
		if i == len(labels)-1 && digits {
			return false
		}
	}
	return true
}
