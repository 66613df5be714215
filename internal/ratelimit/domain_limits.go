package ratelimit

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// DomainLimit is how fast mail for a group of recipient domains is handed
// to the relay, counted across every worker (docs/throttling.md). The
// domains of a group share one bucket, one cap and one hold: they are one
// provider's names for the same mail servers.
type DomainLimit struct {
	Domains []string // lower case; the first names the group's keys in Redis
	// Rate mails a Per at most (GCRA), Burst of them at once on a rested
	// bucket; Rate 0: no rate limit.
	Rate  int
	Per   time.Duration // time.Second, time.Minute or time.Hour
	Burst int
	// Concurrency is how many of the group's mails may be in flight at
	// once across every worker; 0: no cap.
	Concurrency int
}

// Emission is the time one mail takes of the group's rate (0: none).
func (l DomainLimit) Emission() time.Duration {
	if l.Rate <= 0 {
		return 0
	}
	return l.Per / time.Duration(l.Rate)
}

func (l DomainLimit) String() string {
	var s []string
	if l.Rate > 0 {
		s = append(s, "rate:"+strconv.Itoa(l.Rate)+map[time.Duration]string{time.Second: "/s", time.Minute: "/m", time.Hour: "/h"}[l.Per],
			"burst:"+strconv.Itoa(l.Burst))
	}
	if l.Concurrency > 0 {
		s = append(s, "conc:"+strconv.Itoa(l.Concurrency))
	}
	if len(s) == 0 {
		s = append(s, "hold")
	}
	return strings.Join(l.Domains, ",") + "=" + strings.Join(s, ",")
}

// DefaultDomainLimits are the built-in limits of the big mailbox
// providers, for one warmed sending IP behind the relay: starting points
// that DOMAIN_LIMITS changes (docs/throttling.md). Each provider's
// domains share its limit.
func DefaultDomainLimits() []DomainLimit {
	domains := func(p mail.Provider) []string { return slices.Clone(mail.ProviderDomains[p]) }
	return []DomainLimit{
		{Domains: domains(mail.ProviderGmail), Rate: 1000, Per: time.Second, Burst: 1000, Concurrency: 50},
		{Domains: domains(mail.ProviderMicrosoft), Rate: 500, Per: time.Second, Burst: 500, Concurrency: 25},
		{Domains: domains(mail.ProviderYahoo), Rate: 250, Per: time.Second, Burst: 250, Concurrency: 20},
		{Domains: domains(mail.ProviderApple), Rate: 100, Per: time.Second, Burst: 100, Concurrency: 10},
	}
}

// ParseDomainLimits reads DOMAIN_LIMITS into the limits in force: the
// built-in ones changed by its entries. Empty: the built-in ones; "off":
// none (nil). Otherwise entries separated by ";", each
//
//	domain[,domain…]=setting[,setting…]
//
// with the settings rate:N (a second; N/s, N/m, N/h), burst:N, conc:N,
// hold (neither rate nor cap: only the shared holds) or off (the domains
// are not limited, built-in or not). An entry replaces the built-in
// limit of each domain it names (the rest of that built-in group keeps
// it); defaults=off drops every built-in limit.
func ParseDomainLimits(s string) ([]DomainLimit, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return nil, nil
	}
	limits := DefaultDomainLimits()
	var problems []string
	named := map[string]bool{}
	var added []DomainLimit
	for entry := range strings.SplitSeq(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		l, off, err := parseEntry(entry)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%q: %v", entry, err))
			continue
		}
		if l.Domains[0] == "defaults" { // defaults=off
			limits = nil
			continue
		}
		for _, d := range l.Domains {
			if named[d] {
				problems = append(problems, fmt.Sprintf("%q: %s is named twice", entry, d))
			}
			named[d] = true
		}
		if !off {
			added = append(added, l)
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	// The entries take their domains out of the built-in groups.
	out := limits[:0]
	for _, l := range limits {
		l.Domains = slices.DeleteFunc(l.Domains, func(d string) bool { return named[d] })
		if len(l.Domains) > 0 {
			out = append(out, l)
		}
	}
	out = append(out, added...)
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// parseEntry reads one domain[,domain…]=settings entry; off says the
// domains are named to be left unlimited.
func parseEntry(entry string) (l DomainLimit, off bool, err error) {
	names, settings, ok := strings.Cut(entry, "=")
	if !ok {
		return l, false, errors.New("want domain=settings (e.g. gmail.com=rate:50,conc:10)")
	}
	for name := range strings.SplitSeq(names, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "defaults" && !mail.ValidDomain(name) {
			return l, false, fmt.Errorf("%q is not a domain name", name)
		}
		l.Domains = append(l.Domains, name)
	}
	if slices.Contains(l.Domains, "defaults") && len(l.Domains) > 1 {
		return l, false, errors.New("defaults stands alone")
	}
	seen := map[string]bool{}
	for setting := range strings.SplitSeq(settings, ",") {
		setting = strings.ToLower(strings.TrimSpace(setting))
		key, value, _ := strings.Cut(setting, ":")
		if seen[key] {
			return l, false, fmt.Errorf("%s is given twice", key)
		}
		seen[key] = true
		switch key {
		case "off", "hold":
			if value != "" {
				return l, false, fmt.Errorf("%s takes no value", key)
			}
			off = key == "off"
		case "rate":
			n, per, ok := strings.Cut(value, "/")
			if !ok {
				per = "s"
			}
			l.Per = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[per]
			if l.Rate, err = positive(n); err != nil || l.Per == 0 {
				return l, false, fmt.Errorf("rate:%s is not a number of mails a second (rate:N, rate:N/s, rate:N/m, rate:N/h)", value)
			}
		case "burst":
			if l.Burst, err = positive(value); err != nil {
				return l, false, fmt.Errorf("burst:%s is not a positive number of mails", value)
			}
		case "conc":
			if l.Concurrency, err = positive(value); err != nil {
				return l, false, fmt.Errorf("conc:%s is not a positive number of mails in flight", value)
			}
		default:
			return l, false, fmt.Errorf("%q is not rate:N, burst:N, conc:N, hold or off", setting)
		}
	}
	switch {
	case off && len(seen) > 1:
		return l, false, errors.New("off stands alone")
	case seen["hold"] && len(seen) > 1:
		return l, false, errors.New("hold stands alone (rate and conc hold the domain anyway)")
	case l.Burst > 0 && l.Rate == 0:
		return l, false, errors.New("burst needs a rate")
	case l.Domains[0] == "defaults" && !off:
		return l, false, errors.New("defaults takes only off")
	}
	if l.Rate > 0 && l.Burst == 0 {
		// A second's worth at once, at least one mail.
		l.Burst = max(1, int(int64(l.Rate)*int64(time.Second)/int64(l.Per)))
	}
	return l, off, nil
}

func positive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1_000_000 {
		return 0, errors.New("not a positive number")
	}
	return n, nil
}
