package mail

import (
	"strings"
	"time"
)

// Provider is a receiving mailbox provider the reports group mails by
// (docs/deliverability.md): one of the big ones, by the domains its users'
// addresses have, or ProviderOthers.
type Provider int16

// The providers, in the order the reports list them.
const (
	ProviderOthers Provider = iota
	ProviderGmail
	ProviderMicrosoft
	ProviderYahoo
	ProviderApple
)

// ProviderDomains are each big provider's consumer domains (the built-in
// domain limits share them, docs/throttling.md).
var ProviderDomains = map[Provider][]string{
	ProviderGmail:     {"gmail.com", "googlemail.com"},
	ProviderMicrosoft: {"outlook.com", "hotmail.com", "live.com", "msn.com", "hotmail.co.uk", "hotmail.fr", "live.co.uk", "outlook.de"},
	ProviderYahoo:     {"yahoo.com", "ymail.com", "rocketmail.com", "yahoo.co.uk", "yahoo.fr", "aol.com"},
	ProviderApple:     {"icloud.com", "me.com", "mac.com"},
}

// Providers are every provider, in report order.
var Providers = []Provider{ProviderGmail, ProviderMicrosoft, ProviderYahoo, ProviderApple, ProviderOthers}

var providerOf = func() map[string]Provider {
	m := map[string]Provider{}
	for p, domains := range ProviderDomains {
		for _, d := range domains {
			m[d] = p
		}
	}
	return m
}()

// ProviderOf is the provider of an address (its domain, any case).
func ProviderOf(email Email) Provider {
	s := string(email)
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return ProviderOthers
	}
	d := s[at+1:]
	if p, ok := providerOf[d]; ok {
		return p
	}
	return providerOf[strings.ToLower(d)]
}

// Name is the provider's name in reports.
func (p Provider) Name() string {
	switch p {
	case ProviderGmail:
		return "gmail"
	case ProviderMicrosoft:
		return "microsoft"
	case ProviderYahoo:
		return "yahoo"
	case ProviderApple:
		return "apple"
	}
	return "others"
}

// ProviderStats are a provider's figures in a report: the mails it
// accepted, put off (tried and pending again, or held for its limits),
// hard-bounced (at RCPT TO or reported later), refused for good
// otherwise, and its users' complaints.
type ProviderStats struct {
	Provider   string `json:"provider"`
	Delivered  int64  `json:"delivered"`
	Deferred   int64  `json:"deferred"`
	Bounced    int64  `json:"bounced"`
	Blocked    int64  `json:"blocked"`
	Complained int64  `json:"complained"`
}

// MaxReportDays bounds the period of an account's provider report.
const MaxReportDays = 366

// ParseReportDays reads a report's period: from and to as UTC dates
// (YYYY-MM-DD), both included; absent, the 30 days up to now's date (to
// alone: the 30 days up to it; from alone: up to now's date).
func ParseReportDays(from, to string, now time.Time) (time.Time, time.Time, error) {
	var p Problems
	day := func(field, v string, dflt time.Time) time.Time {
		v = strings.TrimSpace(v)
		if v == "" {
			return dflt
		}
		d, err := time.Parse(time.DateOnly, v)
		if err != nil {
			p.Add(field, "The "+field+" must be a valid date in the form YYYY-MM-DD.")
		}
		return d
	}
	today := now.UTC().Truncate(24 * time.Hour)
	end := day("to", to, today)
	start := day("from", from, end.AddDate(0, 0, -29))
	if p.Err() == nil {
		switch {
		case start.Year() < 1:
			p.Add("from", "The from must be a valid date in the form YYYY-MM-DD.")
		case end.Before(start):
			p.Add("to", "The to must be a date after or equal to from.")
		case end.Sub(start) >= MaxReportDays*24*time.Hour:
			p.Add("to", "The period may not be longer than 366 days.")
		}
	}
	return start, end, p.Err()
}
