// Package render turns a send's subject, preheader and HTML into mails.
// Compile parses the ((name)) placeholders once per send into
// literal/placeholder segments, finds the links a send tracks and derives
// the plain-text part from the HTML; Render then only appends literals
// and values into reused buffers, once per recipient. See docs/render.md
// and docs/tracking.md.
package render

import (
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/mail"
)

// MaxSize bounds the subject, preheader and HTML together, in bytes.
const MaxSize = 16 << 20

// field is a dynamic content name; 0 is none.
type field uint8

const (
	fNone field = iota
	fFirstName
	fLastName
	fEmail
	fAltEmail
	fCountry
	fState
	fCity
	fAddressLine1
	fAddressLine2
	fStateProvinceRegion
	fPostalCode
	fFullName
	fFatherName
	fDesignation
	fAge
	fCompanyName
	fBirthDate
	fJoinDate
	fSenderName
	fSenderAddress
	fUnsubscribePreferences
	fUnknown // a well-formed placeholder with no such name: renders nothing
	fLink    // a tracked link's address (seg.link, seg.raw)
)

// names are the dynamic content names by field, as mail.DynamicContent
// lists them (a test holds the two equal).
var names = [...]string{
	fFirstName: "first_name", fLastName: "last_name", fEmail: "email", fAltEmail: "alt_email",
	fCountry: "country", fState: "state", fCity: "city", fAddressLine1: "address_line1",
	fAddressLine2: "address_line2", fStateProvinceRegion: "state_province_region",
	fPostalCode: "postal_code", fFullName: "full_name", fFatherName: "father_name",
	fDesignation: "designation", fAge: "age", fCompanyName: "company_name",
	fBirthDate: "birth_date", fJoinDate: "join_date", fSenderName: "sender_name",
	fSenderAddress: "sender_address", fUnsubscribePreferences: "unsubscribe_preferences",
}

func lookup(name string) field {
	for f := fFirstName; f < fUnknown; f++ {
		if strings.EqualFold(names[f], name) {
			return f
		}
	}
	return fUnknown
}

// mode says how a value is written.
type mode uint8

const (
	modePlain mode = iota // control characters and line separators removed
	modeHTML              // as modePlain, then HTML-escaped
)

// seg is a literal followed by the value of f (none when f is fNone).
// For fLink it is a tracked link: link is its address's index in
// Template.links (in a Form's program, its number in the send's link
// table), raw the address as the part writes it (Render writes raw).
type seg struct {
	lit  string
	f    field
	link int
	raw  string
}

type program struct {
	segs []seg
	mode mode
}

// Template is a compiled send: safe for concurrent use by many renderers.
type Template struct {
	subject, preheader, html, text program
	size                           [4]int   // literal bytes, to presize buffers
	links                          []string // the tracked links' addresses (Links)
}

// Buffer receives one rendered mail. Reuse it across recipients: Render
// truncates and appends, so after the first few mails it allocates
// nothing.
type Buffer struct {
	Subject   []byte // one header line's text, no control characters
	Preheader []byte // plain, as Subject
	HTML      []byte // the HTML part, with the hidden preheader
	Text      []byte // the plain-text part derived from the HTML

	scratch []byte // a value being encoded (Form.Build)
	link    []byte // a tracked link's address (Form.Build)
	stop    int    // the length of dst past which Form.Build stops writing
}

// Compile parses subject, preheader and html once. The preheader becomes
// hidden preview text right after <body…>; the plain-text part is derived
// from html. It fails only for a template that is not UTF-8 or is larger
// than MaxSize.
func Compile(subject, preheader, htmlSrc string) (*Template, error) {
	if len(subject)+len(preheader)+len(htmlSrc) > MaxSize {
		return nil, errors.New("render: template larger than 16 MB")
	}
	if !utf8.ValidString(subject) || !utf8.ValidString(preheader) || !utf8.ValidString(htmlSrc) {
		return nil, errors.New("render: template is not UTF-8")
	}
	t := &Template{}
	// Subject and preheader literals are cleaned like values: a header
	// line never holds a control character, whoever typed it.
	t.subject = compile(subject, modePlain, cleanLiteral)
	t.preheader = compile(preheader, modePlain, cleanLiteral)

	text, hrefs, shown := scan(htmlSrc)
	index := map[string]int{} // address -> its index in t.links
	for _, h := range hrefs {
		if _, ok := index[h.url]; !ok {
			index[h.url] = len(t.links)
			t.links = append(t.links, h.url)
		}
	}
	body := compileLinks(htmlSrc, modeHTML, hrefs, index)
	if strings.TrimSpace(preheader) != "" {
		at := bodyStart(htmlSrc)
		// No tracked href holds the '>' that at follows, so none is cut.
		var before, after []span
		for _, h := range hrefs {
			switch {
			case h.end <= at:
				before = append(before, h)
			case h.start >= at:
				after = append(after, span{h.start - at, h.end - at, h.url})
			}
		}
		head := compileLinks(htmlSrc[:at], modeHTML, before, index)
		tail := compileLinks(htmlSrc[at:], modeHTML, after, index)
		pre := compile(preheader, modeHTML, escape)
		var segs []seg
		segs = append(segs, head.segs...)
		segs = appendLit(segs, preheaderOpen)
		segs = appendProgram(segs, pre.segs)
		segs = appendLit(segs, preheaderClose)
		segs = appendProgram(segs, tail.segs)
		body = program{segs: segs, mode: modeHTML}
	}
	t.html = body
	t.text = compileLinks(text, modePlain, shown, index)
	for i, p := range []program{t.subject, t.preheader, t.html, t.text} {
		for _, s := range p.segs {
			t.size[i] += len(s.lit) + len(s.raw)
		}
	}
	return t, nil
}

// Links are the addresses of the template's tracked links
// (docs/tracking.md), each once, in the order they first appear in the
// HTML: the links a Form rewrites when FormOptions.LinkNumbers numbers
// them.
func (t *Template) Links() []string { return slices.Clone(t.links) }

// compileLinks is compile with the tracked links at spans (in order, not
// overlapping) made fLink segments. Between them src is compiled piece by
// piece, and that finds the placeholders compiling it whole would: a
// link holds no "((" and does not end in '(', so none starts inside one,
// and a link starts with "http" and a ':' that no placeholder name holds,
// so none that starts before it reaches into it.
func compileLinks(src string, m mode, spans []span, index map[string]int) program {
	var segs []seg
	at := 0
	for _, sp := range spans {
		segs = appendProgram(segs, compile(src[at:sp.start], m, nil).segs)
		segs = appendProgram(segs, []seg{{f: fLink, link: index[sp.url], raw: src[sp.start:sp.end]}})
		at = sp.end
	}
	segs = appendProgram(segs, compile(src[at:], m, nil).segs)
	return program{segs: segs, mode: m}
}

// preheaderOpen hides the preview text without a text colour: a colour
// matching the background (transparent is read as the background) is what
// spam filters score as hidden text (SpamAssassin's HTML_FONT_LOW_CONTRAST),
// and display:none, a zero box and mso-hide hide it in every client.
const (
	preheaderOpen = `<div style="display:none;font-size:1px;line-height:1px;` +
		`max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all;">`
	preheaderClose = `</div>`
)

// appendLit adds literal text after segs, joining it to a trailing
// literal-only segment.
func appendLit(segs []seg, lit string) []seg {
	if n := len(segs); n > 0 && segs[n-1].f == fNone {
		segs[n-1].lit += lit
		return segs
	}
	return append(segs, seg{lit: lit})
}

// appendProgram adds more after segs, its first literal joined to a
// trailing literal-only segment.
func appendProgram(segs, more []seg) []seg {
	if len(more) == 0 {
		return segs
	}
	segs = appendLit(segs, more[0].lit)
	last := &segs[len(segs)-1]
	last.f, last.link, last.raw = more[0].f, more[0].link, more[0].raw
	return append(segs, more[1:]...)
}

// compile cuts src into segments. clean, when set, rewrites each literal.
// A placeholder is "((", optional white space, a name of letters, digits
// and underscores (at most 64), optional white space, "))"; anything else
// (a "((" without "))", "((a+b))") is literal text.
func compile(src string, m mode, clean func(string) string) program {
	var segs []seg
	lit := func(s string) string {
		if clean != nil {
			return clean(s)
		}
		return s
	}
	start := 0 // start of the pending literal
	for i := 0; i < len(src); {
		j := strings.Index(src[i:], "((")
		if j < 0 {
			break
		}
		j += i
		name, end, ok := placeholder(src, j)
		if !ok {
			i = j + 1
			continue
		}
		segs = append(segs, seg{lit: lit(src[start:j]), f: lookup(name)})
		start, i = end, end
	}
	if start < len(src) {
		segs = append(segs, seg{lit: lit(src[start:])})
	}
	return program{segs: segs, mode: m}
}

// placeholder reads a placeholder at src[i:], which starts with "((": its
// trimmed name and the index past "))".
func placeholder(src string, i int) (name string, end int, ok bool) {
	k := i + 2
	for k < len(src) && isSpace(src[k]) {
		k++
	}
	n0 := k
	for k < len(src) && k-n0 <= 64 && isNameByte(src[k]) {
		k++
	}
	n1 := k
	if n1 == n0 || n1-n0 > 64 {
		return "", 0, false
	}
	for k < len(src) && isSpace(src[k]) {
		k++
	}
	if !strings.HasPrefix(src[k:], "))") {
		return "", 0, false
	}
	return src[n0:n1], k + 2, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isNameByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// bodyStart is the index just past the <body…> start tag, or 0 when html
// has none.
func bodyStart(src string) int {
	for i := 0; i < len(src); {
		j := strings.IndexByte(src[i:], '<')
		if j < 0 {
			return 0
		}
		j += i
		if strings.HasPrefix(src[j:], "<!--") {
			k := strings.Index(src[j+4:], "-->")
			if k < 0 {
				return 0
			}
			i = j + 4 + k + 3
			continue
		}
		if len(src) >= j+5 && strings.EqualFold(src[j+1:j+5], "body") &&
			(len(src) == j+5 || isSpace(src[j+5]) || src[j+5] == '>' || src[j+5] == '/') {
			return tagEnd(src, j+5)
		}
		i = j + 1
	}
	return 0
}

// tagEnd is the index past the '>' closing the tag whose attributes start
// at src[i:], quotes respected; len(src) when it is not closed.
func tagEnd(src string, i int) int {
	var q byte
	for ; i < len(src); i++ {
		c := src[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '>':
			return i + 1
		}
	}
	return len(src)
}

// Render writes the mail for r from s into b, replacing b's contents.
// It never re-parses the template; values are cleaned (and escaped in
// HTML) as they are appended. r and s may be nil.
func (t *Template) Render(b *Buffer, r *mail.Recipient, s *mail.Sender) {
	if r == nil {
		r = &mail.Recipient{}
	}
	if s == nil {
		s = &mail.Sender{}
	}
	b.Subject = t.subject.run(grow(b.Subject[:0], t.size[0]), r, s)
	b.Preheader = t.preheader.run(grow(b.Preheader[:0], t.size[1]), r, s)
	b.HTML = t.html.run(grow(b.HTML[:0], t.size[2]), r, s)
	b.Text = t.text.run(grow(b.Text[:0], t.size[3]), r, s)
}

// grow leaves room for the literals plus some values, so one recipient's
// buffer is usually allocated once.
func grow(b []byte, n int) []byte {
	if n += n/8 + 256; cap(b) < n {
		return make([]byte, 0, n)
	}
	return b
}

func (p *program) run(dst []byte, r *mail.Recipient, s *mail.Sender) []byte {
	for i := range p.segs {
		sg := &p.segs[i]
		dst = append(dst, sg.lit...)
		switch sg.f {
		case fNone:
		case fLink:
			dst = append(dst, sg.raw...) // as written: Render does not track
		default:
			dst = value(dst, sg.f, p.mode, r, s)
		}
	}
	return dst
}

// value appends the value of f.
func value(dst []byte, f field, m mode, r *mail.Recipient, s *mail.Sender) []byte {
	switch f {
	case fFirstName:
		return put(dst, m, r.FirstName)
	case fLastName:
		return put(dst, m, r.LastName)
	case fEmail:
		return put(dst, m, string(r.Email))
	case fAltEmail:
		return put(dst, m, r.AltEmail)
	case fCountry:
		return put(dst, m, r.Country)
	case fState:
		return put(dst, m, r.State)
	case fCity:
		return put(dst, m, r.City)
	case fAddressLine1:
		return put(dst, m, r.AddressLine1)
	case fAddressLine2:
		return put(dst, m, r.AddressLine2)
	case fStateProvinceRegion:
		return put(dst, m, r.StateProvinceRegion)
	case fPostalCode:
		return put(dst, m, r.PostalCode)
	case fFullName:
		return join(dst, m, " ", r.FirstName, r.LastName)
	case fFatherName, fDesignation, fAge, fCompanyName, fBirthDate, fJoinDate:
		return put(dst, m, r.CustomValue(names[f]))
	case fSenderName:
		return put(dst, m, s.FromName)
	case fSenderAddress:
		return join(dst, m, ", ", s.Address, s.City, s.State, s.Country)
	case fUnsubscribePreferences:
		return put(dst, m, r.Tokens.PreferencesURL)
	}
	return dst // fUnknown
}

// join appends the parts that are not blank, sep between them.
func join(dst []byte, m mode, sep string, parts ...string) []byte {
	first := true
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !first {
			dst = append(dst, sep...)
		}
		first = false
		dst = put(dst, m, p)
	}
	return dst
}

// put appends v cleaned: C0 and C1 control characters (CR, LF, TAB, NUL,
// DEL, U+0085 …), U+2028, U+2029 and bytes that are not UTF-8 are
// dropped; in html mode & < > " ' are escaped too.
func put(dst []byte, m mode, v string) []byte {
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c < 0x20 || c == 0x7f:
			case m == modeHTML && c == '&':
				dst = append(dst, "&amp;"...)
			case m == modeHTML && c == '<':
				dst = append(dst, "&lt;"...)
			case m == modeHTML && c == '>':
				dst = append(dst, "&gt;"...)
			case m == modeHTML && c == '"':
				dst = append(dst, "&#34;"...)
			case m == modeHTML && c == '\'':
				dst = append(dst, "&#39;"...)
			default:
				dst = append(dst, c)
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(v[i:])
		if !dropped(r, n) {
			dst = append(dst, v[i:i+n]...)
		}
		i += n
	}
	return dst
}

func dropped(r rune, size int) bool {
	return r == utf8.RuneError && size == 1 || r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029
}

// cleanLiteral drops from template text what put drops from values.
func cleanLiteral(s string) string {
	return string(put(make([]byte, 0, len(s)), modePlain, s))
}

// escape HTML-escapes s as put does in html mode.
func escape(s string) string {
	return string(put(make([]byte, 0, len(s)), modeHTML, s))
}
