package mail

import (
	netmail "net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	// The two exceptions to this package's standard-library-only rule:
	// an internationalized domain name is checked and turned into its
	// A-label by IDNA2008 with the UTS #46 lookup mapping, and an address
	// is stored in Unicode normalization form C. The standard library has
	// both only inside net/http (its vendored copy of these very
	// packages), and writing IDNA by hand means carrying Unicode tables;
	// golang.org/x/net and x/text are the Go project's own modules, already
	// in the build through go-mail and gin.
	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/norm"
)

// Email is a valid address (the rule: docs/limits.md), trimmed and in
// Unicode NFC, as the user spelled it otherwise; compare it lower-cased.
// Its local part may be UTF-8 and its domain internationalized; Wire is
// how it goes out.
type Email string

// EmailProblem says why an address was refused.
type EmailProblem int

// The answers of CheckEmail.
const (
	EmailOK        EmailProblem = iota
	EmailInvalid                // not an addr-spec (RFC 5322, RFC 6532 for UTF-8)
	EmailBadDomain              // an addr-spec whose domain has no valid A-label (IDNA2008)
	EmailInvisible              // it holds a character that shows nothing (invisible)
)

// Message is the field message for an address that was refused, in the
// sentence "The {label} must be a valid email address." that every address
// field has used; an address whose domain is not a valid domain name says
// so after it.
func (p EmailProblem) Message(label string) string {
	return "The " + label + " must be a valid email address" + p.Why() + "."
}

// Why is what follows "… is not a valid email address" for p: nothing for
// a malformed address, else a colon and the reason.
func (p EmailProblem) Why() string {
	switch p {
	case EmailBadDomain:
		return ": its domain is not a valid domain name"
	case EmailInvisible:
		return ": it holds an invisible character (a format character, a space or one that shows nothing)"
	}
	return ""
}

// ParseEmail is CheckEmail's address when it is valid.
func ParseEmail(s string) (Email, bool) {
	e, p := CheckEmail(s)
	return e, p == EmailOK
}

// CheckEmail is the one address rule of every input (API, CSV import,
// suppressions, senders, notification recipients): an RFC 5322 addr-spec
// (no display name, no angle brackets, no domain literal) of at most 254
// bytes, whose local part may hold UTF-8 (RFC 6532) and whose domain has a
// dot and is a valid domain name under IDNA2008's lookup rules (UTS #46:
// golang.org/x/net/idna's Lookup profile), its A-label at most 253 bytes
// of labels of at most 63, and no invisible character (format,
// default-ignorable, variation selector, space). The address is trimmed
// and put in NFC; an internationalized domain (one with a non-ASCII or an
// xn-- label) is stored as its U-labels, lower case; anything else is kept
// as written (an ASCII domain is not lower-cased).
func CheckEmail(s string) (Email, EmailProblem) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 254 || !utf8.ValidString(s) || hasControl(s, false) {
		return "", EmailInvalid
	}
	if !isASCII(s) {
		s = norm.NFC.String(s)
		if invisible(s) {
			return "", EmailInvisible
		}
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || len(s) > 254 {
		return "", EmailInvalid
	}
	domain := s[at+1:]
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") ||
		strings.Contains(domain, "..") || strings.ContainsAny(domain, "[]") {
		return "", EmailInvalid
	}
	a, err := netmail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "", EmailInvalid
	}
	ascii, ok := aLabel(domain)
	if !ok {
		return "", EmailBadDomain
	}
	if at+1+len(ascii) > 254 {
		return "", EmailInvalid
	}
	if !isASCII(domain) || strings.Contains(strings.ToLower(domain), "xn--") {
		// One spelling per internationalized domain: its U-labels, lower
		// case (what the A-label decodes to), so that h@BÜCHER.example,
		// h@bücher.example and h@xn--bcher-kva.example are one contact and
		// one suppression, as they are one mailbox on the wire.
		u, err := idna.Lookup.ToUnicode(ascii)
		if err != nil {
			return "", EmailBadDomain
		}
		s = s[:at+1] + u
	}
	return Email(s), EmailOK
}

// invisible reports whether s holds a character that shows nothing, or
// nothing certain, where an address is read: a format character (Cf: the
// zero-width space, joiners and non-joiner, bidirectional controls, the
// soft hyphen, the word joiner, the byte order mark), another
// default-ignorable one (the combining grapheme joiner, Hangul fillers), a
// variation selector, a space of any kind (no-break, ideographic), or the
// blank braille pattern (a symbol that prints as nothing). An
// address holding one looks like another (victim@ex\u200bample.com), and
// IDNA's mapping drops some of them from the domain on the wire, so two
// stored spellings would be one mailbox: one could dodge the other's
// suppression.
func invisible(s string) bool {
	for _, r := range s {
		if r >= utf8.RuneSelf && (unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point,
			unicode.Variation_Selector, unicode.Zs, unicode.Zl, unicode.Zp) || unicode.IsSpace(r) || r == brailleBlank) {
			return true
		}
	}
	return false
}

// brailleBlank is U+2800 BRAILLE PATTERN BLANK: a symbol (So), neither
// space nor ignorable, that shows nothing.
const brailleBlank = '\u2800'

// DomainALabel is a domain name as it goes out (bücher.example is
// xn--bcher-kva.example; an ASCII name lower-cased) and whether it is a
// valid one: the domain half of CheckEmail's rule, for names configured
// alone (DKIM_KEYS).
func DomainALabel(domain string) (string, bool) { return aLabel(domain) }

// aLabel is domain as it goes out (IDNA2008 lookup: mapped, lower-cased,
// each label its A-label) and whether it is a valid host name.
func aLabel(domain string) (string, bool) {
	if isASCII(domain) && !strings.Contains(domain, "--") {
		// What the lookup does to an ASCII name that has no A-label and
		// no other label with "--" (the common case, at a tenth of the
		// cost): lower-case it and check it is a host name.
		a := strings.ToLower(domain)
		return a, ValidDomain(a)
	}
	a, err := idna.Lookup.ToASCII(domain)
	if err != nil || !ValidDomain(a) {
		return "", false
	}
	return a, true
}

// WithULabels is addrs (lower-cased addresses a bounce or complaint
// names) with, after each whose domain has an A-label, its spelling with
// the domain's U-labels: a report names an address as it went out
// (h@xn--bcher-kva.example), a delivery holds it as written
// (h@bücher.example).
func WithULabels(addrs []string) []string {
	var extra []string
	for _, a := range addrs {
		at := strings.LastIndexByte(a, '@')
		if at < 0 || !strings.Contains(a[at:], "xn--") {
			continue
		}
		if u, err := idna.Lookup.ToUnicode(a[at+1:]); err == nil && u != a[at+1:] {
			extra = append(extra, a[:at+1]+u)
		}
	}
	if extra == nil {
		return addrs
	}
	return append(append(make([]string, 0, len(addrs)+len(extra)), addrs...), extra...)
}

// EmailStrings are es as strings (a query's text[], a message's list).
func EmailStrings(es []Email) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e)
	}
	return out
}

// Lower is the address as compared.
func (e Email) Lower() string { return strings.ToLower(string(e)) }

// NeedsUTF8 reports whether e's local part holds more than ASCII: a mail
// to or from it can go only to a server that offers SMTPUTF8 (RFC 6531),
// with the address as UTF-8 in its header (RFC 6532).
func (e Email) NeedsUTF8() bool {
	at := strings.LastIndexByte(string(e), '@')
	return at > 0 && !isASCII(string(e[:at]))
}

// Wire is the address as it goes out, in the envelope and in headers:
// the local part as written, the domain as its A-label (punycode:
// h@bücher.example is h@xn--bcher-kva.example). An address with an ASCII
// local part is then all ASCII and needs nothing of the server; one with
// a UTF-8 local part needs SMTPUTF8 (NeedsUTF8). An ASCII domain is left
// as written; a domain without a valid A-label (an address stored before
// the rule) is left as written too.
func (e Email) Wire() string {
	s := string(e)
	at := strings.LastIndexByte(s, '@')
	if at < 0 || isASCII(s[at+1:]) {
		return s
	}
	a, ok := aLabel(s[at+1:])
	if !ok {
		return s
	}
	return s[:at+1] + a
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
