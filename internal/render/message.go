package render

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/mail"
)

// FormOptions configures a send's Form.
type FormOptions struct {
	Domain string // right side of Message-IDs; the sender's domain when empty
	// SendID and Signer make the Message-IDs:
	// Signer.MessageIDKey(SendID, Domain), which a report
	// quoting one names its delivery by; nil Signer: <{random}@Domain>,
	// 128 random bits naming nothing.
	SendID int64
	Signer *mail.TokenSigner
	// UnsubscribeMailto, when set, is added to List-Unsubscribe as
	// <mailto:addr?subject=unsubscribe-{token}> for a recipient with an
	// unsubscribe token (an inbound route must read it: docs/unsubscribe.md).
	UnsubscribeMailto string
	Now               func() time.Time // Date; time.Now when nil

	// Clicks, with LinkNumbers, rewrites the template's tracked links
	// (docs/tracking.md): in each mail, Template.Links()[k] becomes the
	// address Clicks makes of link number LinkNumbers[k] for the delivery,
	// in the HTML's href and where the text part shows it. A link without
	// a number (a negative one, or past LinkNumbers) is left as written.
	Clicks      ClickURLs
	LinkNumbers []int

	// MaxBytes is the longest mail Build finishes; MaxMailBytes when 0.
	MaxBytes int
}

// ClickURLs makes the tracked addresses of a send's links
// (mail.ClickLinks): ClickPrefix, the same for every link, then the token
// AppendClickToken appends for link number link in the mail of delivery
// deliveryID. The prefix goes into the encoded literals once per send;
// per mail only the tokens are written. Both are written as they are
// when they are printable ASCII without space, quotes, backtick, angle
// brackets, '\' or '&' (a token should be base64url); other bytes are
// percent-encoded, '&' as &amp; in HTML.
type ClickURLs interface {
	ClickPrefix() string
	AppendClickToken(dst []byte, deliveryID int64, link int) []byte
}

// Form is the MIME frame of one send, built once by NewForm: everything
// constant across recipients (From, Reply-To, MIME-Version, the
// multipart boundary and part headers) is precomputed, and Build only
// appends a recipient's headers and quoted-printable parts. A Form is
// read-only and safe for concurrent use.
type Form struct {
	head     string // From, Reply-To
	mime     string // MIME-Version ... first part's headers and blank line
	mid      string // end of text part, second boundary, HTML part headers
	end      string // end of HTML part, closing boundary
	boundary string
	msgKey   *mail.MessageIDKey // nil: random Message-IDs
	domain   string             // the Message-IDs' right side
	mailto   string             // "mailto:addr?subject=unsubscribe-"
	now      func() time.Time
	size     int // estimate of a built mail's size
	max      int // FormOptions.MaxBytes
	fixed    int // bytes every mail holds: frame and encoded literals (Bounds.Min)
	uses     []fieldUse
	// What Bounds adds to the values: the rest of a mail at its longest
	// (ceiling), the longest encoded literal, and a tracked link's token
	// at its longest (the open pixel's is pixelMax, the same for all).
	ceiling, longestLit, linkMax int
	clicks                       ClickURLs

	t      *Template
	sender *mail.Sender
	// The text and HTML parts with their literals quoted-printable
	// encoded once for the send; Build encodes only the values.
	text, html qprogram
}

// qseg is one literal of a part, encoded once as if it started a line
// (col is its last line's length), then the value of f (fNone: none; for
// fLink the tracked address of link number link). In the HTML part, a
// qseg with pixel set marks where the open pixel goes.
type qseg struct {
	enc   string
	col   int
	f     field
	link  int
	pixel bool
}

type qprogram struct {
	segs []qseg
	mode mode
}

// tracked is p with its links numbered by numbers (their link-table
// numbers, by index in Template.links) and prefix, each tracked address's
// start, as literal text before each: a link without a number becomes
// literal text, as written.
func (p program) tracked(numbers []int, prefix string) program {
	var segs []seg
	for _, sg := range p.segs {
		if sg.f != fLink {
			segs = appendProgram(segs, []seg{sg})
			continue
		}
		if sg.link >= len(numbers) || numbers[sg.link] < 0 {
			segs = appendLit(segs, sg.lit+sg.raw)
			continue
		}
		segs = appendProgram(segs, []seg{{lit: sg.lit + prefix, f: fLink, link: numbers[sg.link]}})
	}
	return program{segs: segs, mode: p.mode}
}

// links counts the tracked links of q.
func (q *qprogram) links() int {
	n := 0
	for i := range q.segs {
		if q.segs[i].f == fLink {
			n++
		}
	}
	return n
}

// encodeProgram encodes p's literals. With pixel, the literal holding the
// last "</body" is cut before it and a pixel mark put there (at the end
// when there is none): values are HTML-escaped, so only a literal can
// hold it.
func encodeProgram(p program, pixel bool) qprogram {
	q := qprogram{mode: p.mode}
	at := len(p.segs) // the seg whose literal holds the last </body
	cut := 0
	if pixel {
		for i := len(p.segs) - 1; i >= 0; i-- {
			if j := bodyEnd([]byte(p.segs[i].lit)); j < len(p.segs[i].lit) {
				at, cut = i, j
				break
			}
		}
	}
	add := func(lit string, f field, link int, px bool) {
		var e qp
		enc := e.append(nil, []byte(lit))
		q.segs = append(q.segs, qseg{enc: string(enc), col: e.n, f: f, link: link, pixel: px})
	}
	for i, sg := range p.segs {
		if i == at {
			add(sg.lit[:cut], fNone, 0, true)
			add(sg.lit[cut:], sg.f, sg.link, false)
			continue
		}
		add(sg.lit, sg.f, sg.link, false)
	}
	if pixel && at == len(p.segs) {
		add("", fNone, 0, true)
	}
	return q
}

// size is the encoded literals' length.
func (q *qprogram) size() int {
	n := 0
	for i := range q.segs {
		n += len(q.segs[i].enc) + 3
	}
	return n
}

// appendPart appends the part for r: each literal as encoded, after a soft
// line break when a value left the line open, each value encoded where it
// falls, each tracked link's address for delivery id; pixel (a URL, ""
// none) at the pixel mark. b is scratch space.
func (f *Form) appendPart(dst []byte, p *qprogram, r *mail.Recipient, b *Buffer, pixel string, id int64) []byte {
	var q qp
	for i := range p.segs {
		if len(dst) > b.stop {
			return dst // past the form's MaxBytes: the mail is not finished
		}
		sg := &p.segs[i]
		if sg.enc != "" {
			if q.n > 0 {
				dst = append(dst, "=\r\n"...)
			}
			dst = append(dst, sg.enc...)
			q.n = sg.col
		}
		if sg.pixel && pixel != "" {
			dst = q.append(dst, pixelOpen)
			dst = q.appendURL(dst, pixel)
			dst = q.append(dst, pixelClose)
		}
		switch sg.f {
		case fNone:
		case fLink:
			b.link = f.clicks.AppendClickToken(b.link[:0], id, sg.link)
			html := p.mode == modeHTML
			if q.n+len(b.link) <= qpMax { // copied and checked at once
				at := len(dst)
				if dst = append(dst, b.link...); clean(dst[at:], &tokenBad[btoi(html)]) {
					q.n += len(b.link)
					continue
				}
				dst = dst[:at]
			}
			if !clean(b.link, &linkBad[btoi(html)]) {
				b.scratch = appendLinkURL(b.scratch[:0], b.link, html)
				dst = q.append(dst, b.scratch)
				continue
			}
			dst = q.append(dst, b.link)
		default:
			b.scratch = value(b.scratch[:0], sg.f, p.mode, r, f.sender)
			dst = q.append(dst, b.scratch)
		}
	}
	return dst
}

// clean reports whether u holds none of the bytes bad marks.
func clean(u []byte, bad *[256]bool) bool {
	for _, c := range u {
		if bad[c] {
			return false
		}
	}
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// linkBad marks the bytes a tracked address cannot hold as they are, in
// text [0] and HTML [1]: anything but printable ASCII, space, quotes,
// backtick, angle brackets, '\' (nothing can leave an attribute, quoted
// either way or not), and '&' in HTML. tokenBad adds '=', which
// quoted-printable encodes.
var linkBad, tokenBad = func() (link, token [2][256]bool) {
	for c := range 256 {
		link[0][c] = c <= ' ' || c >= 0x7f || strings.IndexByte("\"'`<>\\", byte(c)) >= 0
		link[1][c] = link[0][c] || c == '&'
		token[0][c], token[1][c] = link[0][c] || c == '=', link[1][c] || c == '='
	}
	return link, token
}()

// appendLinkURL appends u with the bytes linkClean refuses percent-encoded,
// but '&', which becomes &amp; in HTML.
func appendLinkURL(dst, u []byte, html bool) []byte {
	const hex = "0123456789ABCDEF"
	for _, c := range u {
		switch {
		case html && c == '&':
			dst = append(dst, "&amp;"...)
		case linkBad[0][c]:
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// maxURL bounds a URL placed in a header or the pixel, percent-encoded;
// a longer one is left out rather than producing an over-long line.
const maxURL = 900

// NewForm precomputes a send's frame. Control characters are removed
// from the sender's name and addresses, so nothing there can start a
// header line. The addresses are written as they go out
// (mail.Email.Wire: the domain as its A-label; a UTF-8 local part as
// UTF-8, RFC 6532, and the mail then needs SMTPUTF8).
func NewForm(t *Template, s *mail.Sender, opts FormOptions) *Form {
	if s == nil {
		s = &mail.Sender{}
	}
	if t == nil {
		t = &Template{}
	}
	f := &Form{now: opts.Now, t: t, sender: s, clicks: opts.Clicks, max: opts.MaxBytes}
	if f.max <= 0 {
		f.max = MaxMailBytes
	}
	var numbers []int // none: every link as written
	var prefix string
	if opts.Clicks != nil {
		numbers, prefix = opts.LinkNumbers, opts.Clicks.ClickPrefix()
	}
	f.text = encodeProgram(t.text.tracked(numbers, string(appendLinkURL(nil, []byte(prefix), false))), false)
	f.html = encodeProgram(t.html.tracked(numbers, string(appendLinkURL(nil, []byte(prefix), true))), true)
	if f.now == nil {
		f.now = time.Now
	}
	fromWire := s.FromEmail.Wire()
	from := cleanAddr(fromWire) // ASCII: for the Message-ID's domain

	var h []byte
	h = append(h, "From: "...)
	h = appendDisplayName(h, len("From: "), s.FromName, string(appendMailbox(nil, fromWire)))
	if rt := appendMailbox(nil, s.ReplyTo.Wire()); len(rt) > 0 {
		h = append(h, "Reply-To: "...)
		h = append(h, rt...)
		h = append(h, "\r\n"...)
	}
	f.head = string(h)

	f.boundary = newBoundary(t)
	part := func(typ string) string {
		return "--" + f.boundary + "\r\nContent-Type: " + typ + "; charset=utf-8\r\n" +
			"Content-Transfer-Encoding: quoted-printable\r\n\r\n"
	}
	f.mime = "MIME-Version: 1.0\r\nContent-Type: multipart/alternative;\r\n boundary=\"" +
		f.boundary + "\"\r\n\r\n" + part("text/plain")
	f.mid = "\r\n" + part("text/html")
	f.end = "\r\n--" + f.boundary + "--\r\n"

	domain := cleanAddr(opts.Domain)
	if domain == "" {
		if i := strings.LastIndexByte(from, '@'); i >= 0 {
			domain = from[i+1:]
		}
	}
	if domain == "" {
		domain = "localhost"
	}
	f.domain = domain
	if opts.Signer != nil {
		k := opts.Signer.MessageIDKey(opts.SendID, domain)
		f.msgKey = &k
	}
	if m := cleanAddr(opts.UnsubscribeMailto); m != "" {
		f.mailto = "mailto:" + m + "?subject=unsubscribe-"
	}
	f.size = len(f.head) + len(f.mime) + len(f.mid) + len(f.end) + f.text.size() + f.html.size() + 1024
	if n := f.text.links() + f.html.links(); n > 0 {
		// A token is about as long as link 0's of delivery 1, its ids'
		// varints aside.
		f.size += n * (len(opts.Clicks.AppendClickToken(nil, 1, 0)) + 16)
	}
	f.sizeUses()
	return f
}

// newBoundary is a random multipart boundary that occurs nowhere in the
// template. It starts with "=_", which quoted-printable output never
// holds, so no rendered value can produce it either.
func newBoundary(t *Template) string {
	for {
		b := "=_" + rand.Text()
		if t == nil || !t.holds(b) {
			return b
		}
	}
}

func (t *Template) holds(s string) bool {
	for _, p := range []program{t.subject, t.preheader, t.html, t.text} {
		for _, sg := range p.segs {
			if strings.Contains(sg.lit, s) || strings.Contains(sg.raw, s) {
				return true
			}
		}
	}
	return false
}

// Build appends to dst the whole RFC 5322 message (CRLF line ends) for
// r: To, Subject, Date, Message-ID, List-Unsubscribe, then a
// multipart/alternative body with the text and HTML parts in
// quoted-printable, the open pixel before </body> when
// r.Tokens.OpenPixelURL is set, each tracked link's address for
// deliveryID (FormOptions.Clicks). b is scratch space (its Subject is left
// holding r's subject); the parts are made from the literals NewForm
// encoded, so per recipient only values are encoded. With a reused dst
// and b it allocates nothing.
//
// A mail longer than the form's MaxBytes is not finished: once the parts
// pass it Build writes no more of them, so it holds at most one literal
// or value more than the limit. The dst returned is then more than
// MaxBytes longer than the one given, and is no mail to send
// (BuildChecked says so).
func (f *Form) Build(dst []byte, b *Buffer, r *mail.Recipient, deliveryID int64) []byte {
	if r == nil {
		r = &mail.Recipient{}
	}
	b.stop = len(dst) + f.max
	b.Subject = f.t.subject.run(grow(b.Subject[:0], f.t.size[0]), r, f.sender)
	dst = slices.Grow(dst, f.size+len(b.Subject)*2+3*len(r.Tokens.OpenPixelURL))

	dst = append(dst, f.head...)
	dst = append(dst, "To: "...)
	dst = appendMailbox(dst, r.Email.Wire())
	dst = append(dst, "\r\nSubject: "...)
	dst = appendSubject(dst, b.Subject)
	dst = append(dst, "\r\nDate: "...)
	dst = f.now().AppendFormat(dst, "Mon, 02 Jan 2006 15:04:05 -0700")
	dst = append(dst, "\r\nMessage-ID: "...)
	dst = f.appendMessageID(dst, deliveryID)

	u := r.Tokens.UnsubscribeURL
	if !urlOK(u) {
		u = ""
	}
	mailto := f.mailto != "" && tokenOK(r.Tokens.Unsubscribe)
	if u != "" || mailto {
		dst = append(dst, "List-Unsubscribe: "...)
		if u != "" {
			dst = append(dst, '<')
			dst = appendURL(dst, u, false)
			dst = append(dst, '>')
			if mailto {
				dst = append(dst, ",\r\n "...)
			}
		}
		if mailto {
			dst = append(dst, '<')
			dst = append(dst, f.mailto...)
			dst = append(dst, r.Tokens.Unsubscribe...)
			dst = append(dst, '>')
		}
		dst = append(dst, "\r\n"...)
		if u != "" {
			dst = append(dst, "List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"...)
		}
	}

	dst = append(dst, f.mime...)
	dst = f.appendPart(dst, &f.text, r, b, "", deliveryID)
	dst = append(dst, f.mid...)
	px := r.Tokens.OpenPixelURL
	if !urlOK(px) {
		px = ""
	}
	dst = f.appendPart(dst, &f.html, r, b, px, deliveryID)
	return append(dst, f.end...)
}

func (f *Form) appendMessageID(dst []byte, deliveryID int64) []byte {
	if f.msgKey != nil {
		dst = f.msgKey.Append(dst, deliveryID)
	} else {
		dst = append(dst, '<')
		dst = mail.AppendRandomID(dst)
		dst = append(dst, '.')
		dst = mail.AppendRandomID(dst)
		dst = append(dst, '@')
		dst = append(dst, f.domain...)
		dst = append(dst, '>')
	}
	return append(dst, "\r\n"...)
}

var (
	pixelOpen  = []byte(`<img src="`)
	pixelClose = []byte(`" width="1" height="1" alt="" style="display:block;border:0">`)
)

// bodyEnd is the index of the last "</body" in h (any case), len(h) when
// there is none. Values are HTML-escaped, so only the template can hold it.
func bodyEnd(h []byte) int {
	for i := len(h); i > 0; {
		j := bytes.LastIndexByte(h[:i], '<')
		if j < 0 {
			break
		}
		if len(h)-j >= 6 && bytes.EqualFold(h[j:j+6], []byte("</body")) {
			return j
		}
		i = j
	}
	return len(h)
}

// tokenOK accepts an unsubscribe token for the mailto subject: base64url
// text short enough for a header line.
func tokenOK(t string) bool {
	if t == "" || len(t) > mail.MaxTokenLen {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// urlOK refuses a URL too long for a header line once appendURL has
// percent-encoded it (a byte can become three).
func urlOK(u string) bool {
	if u == "" || len(u) > maxURL {
		return false
	}
	n := len(u)
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' {
			n += 2
		}
	}
	return n <= maxURL
}

// appendURL appends u with bytes that could end a header, an angle
// bracket or an attribute (control characters, space, '"', '<', '>',
// '\\', non-ASCII) percent-encoded; in html mode '&' becomes &amp;.
func appendURL(dst []byte, u string, html bool) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case c <= ' ' || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\':
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		case html && c == '&':
			dst = append(dst, "&amp;"...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// cleanAddr drops from an address or domain what could start a header
// line or add an address: control characters, spaces, non-ASCII and
// , ; < > ( ) " \ .
func cleanAddr(s string) string {
	return string(appendAddr(nil, s))
}

func appendAddr(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; addrByte(c) {
			dst = append(dst, c)
		}
	}
	return dst
}

// addrByte reports whether an address keeps byte c in a header: printable
// ASCII but space and the specials that could end or split it.
func addrByte(c byte) bool {
	switch {
	case c <= ' ' || c >= 0x7f:
		return false
	case c == ',' || c == ';' || c == '<' || c == '>' || c == '(' || c == ')' || c == '"' || c == '\\':
		return false
	}
	return true
}

// appendMailbox appends an address for a header as appendAddr does, but
// keeping its UTF-8 (RFC 6532): a valid character past ASCII stays unless
// it is a control, a space or a line or paragraph separator; invalid
// UTF-8 is dropped.
func appendMailbox(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if addrByte(c) {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError && !unicode.IsControl(r) && !unicode.IsSpace(r) && r != '\u2028' && r != '\u2029' {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return dst
}

// appendDisplayName appends `"name" <addr>` and CRLF: a quoted string when
// name is printable ASCII and fits the line, else RFC 2047 B-encoded
// words folded at 78 characters. used is the line's length so far.
func appendDisplayName(dst []byte, used int, name, addr string) []byte {
	name = strings.TrimSpace(string(put(nil, modePlain, name)))
	if name == "" {
		dst = append(dst, '<')
		dst = append(dst, addr...)
		return append(dst, ">\r\n"...)
	}
	line := used
	if plainHeader([]byte(name)) && used+len(name)+len(addr)+5+strings.Count(name, `"`)+strings.Count(name, `\`) <= 78 {
		dst = append(dst, '"')
		for i := 0; i < len(name); i++ {
			if name[i] == '"' || name[i] == '\\' {
				dst = append(dst, '\\')
			}
			dst = append(dst, name[i])
		}
		dst = append(dst, '"')
		line += len(name) + 2
	} else {
		dst, line = appendWords(dst, used, []byte(name))
	}
	if line+len(addr)+3 > 78 {
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, " <"...)
	dst = append(dst, addr...)
	return append(dst, ">\r\n"...)
}

// plainHeader reports whether s can be written as is in a header: printable
// ASCII, no "=?" that a reader would take for an encoded word, no leading,
// trailing or doubled spaces that unfolding could lose.
func plainHeader(s []byte) bool {
	for _, c := range s {
		if c < ' ' || c > '~' {
			return false
		}
	}
	return !bytes.Contains(s, []byte("=?")) && !bytes.Contains(s, []byte("  ")) &&
		!bytes.HasPrefix(s, []byte(" ")) && !bytes.HasSuffix(s, []byte(" "))
}

// appendSubject appends the subject's value after "Subject: ", folded at
// 78 characters: as is when plainHeader allows and every word fits, else
// as RFC 2047 B-encoded words.
func appendSubject(dst []byte, s []byte) []byte {
	const used = len("Subject: ")
	if plainHeader(s) {
		mark := len(dst)
		line := used
		ok := true
		for i := 0; i < len(s); {
			j := i
			for j < len(s) && s[j] != ' ' {
				j++
			}
			w := s[i:j]
			switch {
			case i == 0:
				if line+len(w) > 78 {
					ok = false
				}
				line += len(w)
			case line+1+len(w) <= 78:
				dst = append(dst, ' ')
				line += 1 + len(w)
			case 1+len(w) <= 78:
				dst = append(dst, "\r\n "...)
				line = 1 + len(w)
			default:
				ok = false
			}
			if !ok {
				break
			}
			dst = append(dst, w...)
			i = j + 1
		}
		if ok {
			return dst
		}
		dst = dst[:mark]
	}
	dst, _ = appendWords(dst, used, s)
	return dst
}

// appendWords appends s as "=?utf-8?b?…?=" words of at most 75
// characters, cut at rune boundaries, one per line (CRLF SP between them)
// so no line exceeds 78 characters. used is the first line's length so
// far; it returns the last line's length.
func appendWords(dst []byte, used int, s []byte) ([]byte, int) {
	const pre, post = "=?utf-8?b?", "?="
	line := used
	first := true
	for len(s) > 0 {
		room := 63 // the longest word is 75 characters
		if first && 78-used-len(pre)-len(post) < 8 {
			first = false // no room on the first line
		}
		if first {
			room = min(room, 78-used-len(pre)-len(post))
		} else {
			dst = append(dst, "\r\n "...)
			line = 1
		}
		n := min(room/4*3, len(s))
		for n < len(s) && n > 1 && s[n]&0xc0 == 0x80 {
			n-- // do not split a rune
		}
		dst = append(dst, pre...)
		dst = base64.StdEncoding.AppendEncode(dst, s[:n])
		dst = append(dst, post...)
		line += len(pre) + base64.StdEncoding.EncodedLen(n) + len(post)
		s = s[n:]
		first = false
	}
	return dst, line
}

// qp is a quoted-printable encoder (RFC 2045 6.7) that appends to a byte
// slice and keeps its line length across calls, so a part can be written
// in pieces. Lines end in CRLF: CRLF, LF and CR in the input are hard line
// breaks; encoded lines hold at most 76 characters, soft break included.
type qp struct{ n int }

const qpMax = 75 // characters on an encoded line before a soft break "="

// appendURL writes u as appendURL does in html mode, quoted-printable.
func (q *qp) appendURL(dst []byte, u string) []byte {
	var buf [64]byte
	for len(u) > 0 {
		b := buf[:0]
		for len(u) > 0 && len(b) <= len(buf)-5 {
			b = appendURL(b, u[:1], true)
			u = u[1:]
		}
		dst = q.append(dst, b)
	}
	return dst
}

func (q *qp) append(dst []byte, src []byte) []byte {
	const hex = "0123456789ABCDEF"
	// Room for the worst case (every byte as =XX; a soft break ends a line
	// of at least 73 characters, so at most one per 24 input bytes) and
	// for the 8 bytes a word store writes: the loops then store into out
	// without growing it.
	dst = slices.Grow(dst, 3*len(src)+3*(len(src)/24+1)+16)
	out := dst[:cap(dst)]
	o, n := len(dst), q.n
	for i := 0; i < len(src); {
		// Fast path, while a whole word fits the line: eight bytes loaded
		// and stored at once; the first byte to encode is found in the
		// word (unsafe8) and a line end or an =XX written on the spot.
		for i+8 <= len(src) && n <= qpMax-8 {
			x := binary.LittleEndian.Uint64(src[i:])
			binary.LittleEndian.PutUint64(out[o:], x)
			m := unsafe8(x)
			if m == 0 {
				if x>>56 == ' ' && (i+8 == len(src) || src[i+8] == '\r' || src[i+8] == '\n') {
					o, n, i = o+7, n+7, i+7 // the byte path encodes the space
					break
				}
				o, n, i = o+8, n+8, i+8
				continue
			}
			k := bits.TrailingZeros64(m) >> 3
			c := src[i+k]
			if c == '\r' || c == '\n' {
				if k > 0 && src[i+k-1] == ' ' {
					k-- // a space before a line end: the byte path encodes it
					o, n, i = o+k, n+k, i+k
					break
				}
				o, i = o+k, i+k+1
				if c == '\r' && i < len(src) && src[i] == '\n' {
					i++
				}
				out[o], out[o+1] = '\r', '\n'
				o, n = o+2, 0
				continue
			}
			o, n, i = o+k, n+k, i+k
			if n+3 > qpMax {
				break
			}
			out[o], out[o+1], out[o+2] = '=', hex[c>>4], hex[c&15]
			o, n, i = o+3, n+3, i+1
		}
		if i >= len(src) {
			break
		}
		c := src[i]
		if c == '\r' || c == '\n' {
			out[o], out[o+1] = '\r', '\n'
			o, n = o+2, 0
			i++
			if c == '\r' && i < len(src) && src[i] == '\n' {
				i++
			}
			continue
		}
		if n >= qpMax {
			out[o], out[o+1], out[o+2] = '=', '\r', '\n'
			o, n = o+3, 0
		}
		// Up to eight printable ASCII bytes (space included) before the
		// first to encode, within the line's room.
		if i+8 <= len(src) {
			x := binary.LittleEndian.Uint64(src[i:])
			k := 8
			if m := unsafe8(x); m != 0 {
				k = bits.TrailingZeros64(m) >> 3
			}
			if k = min(k, qpMax-n); k > 0 {
				// A space before a line end or the end of the input would
				// be stripped by readers: the byte path encodes it.
				if j := i + k; src[j-1] == ' ' && (j == len(src) || src[j] == '\r' || src[j] == '\n') {
					k--
				}
				binary.LittleEndian.PutUint64(out[o:], x)
				o, n, i = o+k, n+k, i+k
				if k > 0 {
					continue
				}
				c = src[i]
			}
		}
		// One byte.
		switch {
		case c > ' ' && c <= '~' && c != '=',
			(c == ' ' || c == '\t') && i+1 < len(src) && src[i+1] != '\r' && src[i+1] != '\n':
			out[o] = c
			o, n = o+1, n+1
		default:
			if n+3 > qpMax {
				out[o], out[o+1], out[o+2] = '=', '\r', '\n'
				o, n = o+3, 0
			}
			out[o], out[o+1], out[o+2] = '=', hex[c>>4], hex[c&15]
			o, n = o+3, n+3
		}
		i++
	}
	q.n = n
	return out[:o]
}

// unsafe8 marks (0x80 in its byte) the bytes of x, read little-endian,
// that are not printable ASCII (0x20 to 0x7e) or are '='. Carries and
// borrows run only upward from a marked byte, so the lowest mark is
// exact: the first byte to encode.
func unsafe8(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	less := (x - ones*0x20) & ^x // a byte < 0x20
	more := (x + ones) | x       // a byte >= 0x7f
	eq := x ^ (ones * '=')       // zero where a byte is '='
	zero := (eq - ones) & ^eq    // a zero byte
	return (less | more | zero) & highs
}
