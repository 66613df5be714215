package domains

import (
	"context"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/mailroom/mailroom/internal/mail"
)

// Setup is what the records name besides the domain: the SPF include of
// the relays mailroom sends through, and the host that takes the
// return-path domain's mail (the inbound listener, docs/bounces.md).
type Setup struct {
	SPFInclude string // e.g. _spf.mail.example.com
	BounceMX   string // e.g. mail.example.com
}

// Records are the DNS records a domain's owner publishes, with the
// selector of its keys: the DKIM keys (RSA, and Ed25519 when made), SPF,
// a DMARC record to start with (p=none, reports to the domain's
// dmarc-reports@), and the return-path domain (bounces.) for VERP
// aligned with the From domain.
func Records(domain, selector string, k Keys, s Setup) []mail.DomainRecord {
	recs := []mail.DomainRecord{
		{Purpose: "dkim", Type: "TXT", Host: selector + "._domainkey." + domain, Value: "v=DKIM1; k=rsa; p=" + k.RSAPublic},
	}
	if k.Ed25519Public != "" {
		recs = append(recs, mail.DomainRecord{Purpose: "dkim-ed25519", Type: "TXT", Host: selector + "e._domainkey." + domain,
			Value: "v=DKIM1; k=ed25519; p=" + k.Ed25519Public})
	}
	return append(recs,
		mail.DomainRecord{Purpose: "spf", Type: "TXT", Host: domain, Value: "v=spf1 include:" + s.SPFInclude + " ~all"},
		mail.DomainRecord{Purpose: "dmarc", Type: "TXT", Host: "_dmarc." + domain, Value: "v=DMARC1; p=none; rua=mailto:dmarc-reports@" + domain},
		mail.DomainRecord{Purpose: "return-path", Type: "MX", Host: "bounces." + domain, Value: "10 " + s.BounceMX + "."},
	)
}

// Resolver asks one DNS server (a well-kept client, miekg/dns, rather
// than the system's resolver: the server is configurable, DNS_SERVER, and
// a test runs its own).
type Resolver struct {
	Server  string // host:port
	Timeout time.Duration
}

// SystemServer is the first name server of /etc/resolv.conf, as host:port
// ("127.0.0.1:53" when it cannot be read).
func SystemServer() string {
	if c, err := dns.ClientConfigFromFile("/etc/resolv.conf"); err == nil && len(c.Servers) > 0 {
		return net.JoinHostPort(c.Servers[0], c.Port)
	}
	return "127.0.0.1:53"
}

// lookup answers the records of type t at name: TXT strings joined per
// record, MX as "pref host."; nil for none (NXDOMAIN or no data).
func (r Resolver) lookup(ctx context.Context, name string, t uint16) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), t)
	m.RecursionDesired = true
	c := &dns.Client{Timeout: r.Timeout}
	in, _, err := c.ExchangeContext(ctx, m, r.Server)
	if err != nil {
		return nil, err
	}
	if in.Truncated { // a long TXT set: again over TCP
		c.Net = "tcp"
		if in, _, err = c.ExchangeContext(ctx, m, r.Server); err != nil {
			return nil, err
		}
	}
	if in.Rcode != dns.RcodeSuccess && in.Rcode != dns.RcodeNameError {
		return nil, &net.DNSError{Err: dns.RcodeToString[in.Rcode], Name: name, Server: r.Server}
	}
	var out []string
	for _, rr := range in.Answer {
		switch v := rr.(type) {
		case *dns.TXT:
			out = append(out, strings.Join(v.Txt, ""))
		case *dns.MX:
			out = append(out, dns.Fqdn(strings.ToLower(v.Mx)))
		}
	}
	return out, nil
}

// Check looks each record up and says whether it is found (as it should
// be), missing, or wrong (something else is there: what was found is
// kept). A record a lookup could not answer is "unknown", with the error.
func (r Resolver) Check(ctx context.Context, recs []mail.DomainRecord) []mail.DomainRecord {
	out := slices.Clone(recs)
	for i := range out {
		rec := &out[i]
		t := dns.TypeTXT
		if rec.Type == "MX" {
			t = dns.TypeMX
		}
		found, err := r.lookup(ctx, rec.Host, t)
		rec.Found = found
		switch {
		case err != nil:
			rec.Status, rec.Found = mail.RecordUnknown, []string{err.Error()}
		default:
			rec.Status = judge(rec, found)
		}
	}
	return out
}

// judge says what the values found at a record's name make of it.
func judge(rec *mail.DomainRecord, found []string) string {
	var same []string // the values of the record's kind at its name
	for _, f := range found {
		switch rec.Purpose {
		case "spf":
			if strings.HasPrefix(strings.ToLower(f), "v=spf1") {
				same = append(same, f)
			}
		case "dmarc":
			if strings.HasPrefix(strings.ToUpper(strings.ReplaceAll(f, " ", "")), "V=DMARC1") {
				same = append(same, f)
			}
		default:
			same = append(same, f)
		}
	}
	rec.Found = same
	if len(same) == 0 {
		return mail.RecordMissing
	}
	ok := false
	switch rec.Purpose {
	case "spf": // one SPF record, which includes the relays'
		include := strings.Fields(rec.Value)[1]
		ok = len(same) == 1 && slices.Contains(strings.Fields(strings.ToLower(same[0])), strings.ToLower(include))
	case "dmarc": // one DMARC record, any policy
		ok = len(same) == 1
	case "return-path":
		want := strings.Fields(rec.Value)[1]
		ok = slices.Contains(same, want)
	default: // the key, as made
		ok = slices.ContainsFunc(same, func(f string) bool { return dkimKey(f) == dkimKey(rec.Value) })
	}
	if ok {
		return mail.RecordFound
	}
	return mail.RecordWrong
}

// dkimKey is the p= value of a DKIM key record, "" when it has none.
func dkimKey(txt string) string {
	for tag := range strings.SplitSeq(txt, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(tag), "=")
		if strings.TrimSpace(k) == "p" {
			return strings.Join(strings.Fields(v), "")
		}
	}
	return ""
}
