package mail

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// ReputationGuards are an account's reputation guards as the API shows
// and takes them (docs/deliverability.md): rates in percent, 0 turning a
// guard off; the counts from which each is judged.
type ReputationGuards struct {
	BounceRate     float64 `json:"bounce_rate"`     // hard bounces, % of attempted mails
	BounceAfter    int64   `json:"bounce_after"`    // attempted mails before it is judged
	ComplaintRate  float64 `json:"complaint_rate"`  // complaints, % of delivered mails
	ComplaintAfter int64   `json:"complaint_after"` // delivered mails before it is judged
}

// plainDecimal is a decimal written out: sign, digits, decimals.
var plainDecimal = regexp.MustCompile(`^([+-]?)([0-9]+)(?:\.([0-9]*))?$`)

// MaxGuardAfter bounds the counts a guard waits for.
const MaxGuardAfter = 1_000_000_000

// ParseReputationGuards validates a save of an account's guards: every
// field required, the rates numbers from 0 to 100 (at most two decimals),
// the counts integers from 1 to MaxGuardAfter.
func ParseReputationGuards(bounceRate, bounceAfter, complaintRate, complaintAfter string) (ReputationGuards, error) {
	var g ReputationGuards
	var p Problems
	rate := func(field, v string, dst *float64) {
		v = strings.TrimSpace(v)
		if v == "" {
			p.Required(field)
			return
		}
		// A plain decimal: no exponent, hex or digit separators, so the
		// value kept is the one written (1e-12 would be kept and shown 0).
		m := plainDecimal.FindStringSubmatch(v)
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case m == nil || err != nil:
			p.Add(field, "The "+Label(field)+" must be a number.")
		case m[1] == "-" && f != 0 || f > 100:
			p.Add(field, "The "+Label(field)+" must be between 0 and 100.")
		case len(m[3]) > 2:
			p.Add(field, "The "+Label(field)+" may have at most 2 decimal places.")
		default:
			*dst = math.Abs(f) // -0 is 0
		}
	}
	count := func(field, v string, dst *int64) {
		v = strings.TrimSpace(v)
		if v == "" {
			p.Required(field)
			return
		}
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil && !isDigits(v):
			p.Add(field, "The "+Label(field)+" must be an integer.")
		case err != nil || n < 1 || n > MaxGuardAfter:
			p.Add(field, "The "+Label(field)+" must be between 1 and "+strconv.Itoa(MaxGuardAfter)+".")
		default:
			*dst = n
		}
	}
	rate("bounce_rate", bounceRate, &g.BounceRate)
	count("bounce_after", bounceAfter, &g.BounceAfter)
	rate("complaint_rate", complaintRate, &g.ComplaintRate)
	count("complaint_after", complaintAfter, &g.ComplaintAfter)
	return g, p.Err()
}

// isDigits reports whether s is an optional sign and decimal digits (an
// integer too large for int64 is still an integer).
func isDigits(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
