package render

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/mail"
)

// MaxMailBytes is the largest mail a send may make, headers included:
// 10 MB (10,485,760 bytes), what most providers accept
// (docs/limits.md). A template whose WorstSize passes it is refused when
// it is saved, and Build leaves unfinished a mail that passes a Form's
// limit (FormOptions.MaxBytes), which the engine then fails.
const MaxMailBytes = 10 << 20

// Longest values, in characters and in bytes, the placeholders can take
// (docs/limits.md): single-line text is at most mail.MaxLine characters
// of up to four bytes; an address at most maxAddr bytes. A number custom
// value (jsonb prints 1e300 in full, about 330 digits) is shorter than
// the text bound in bytes and in what it encodes to.
const (
	maxAddr     = 254
	lineRunes   = mail.MaxLine
	lineBytes   = mail.MaxLine * utf8.UTFMax
	qpLine      = 73 // characters at least on a line quoted-printable breaks softly
	softBreak   = len("=\r\n")
	senderParts = 5 // company_address, company_address2, city, state, country
)

// headRoom bounds every header but Subject, the MIME frame and a
// DKIM-Signature added after Build: From (a 255-character name B-encoded,
// under 2,100 bytes, and its address), Reply-To, To, Date and Message-ID
// (254-byte addresses and domain, 20-digit ids), List-Unsubscribe (a
// 900-byte URL and a mailto of an address and a token), the
// List-Unsubscribe-Post, MIME-Version and Content-Type headers, the part
// headers and boundaries (about 5,300 bytes together), and some 800 bytes
// of DKIM signature.
const headRoom = 8 << 10

// encoded bounds what a value of at most runes characters and bytes bytes
// becomes in a part, quoted-printable, soft line breaks aside: a byte at
// most three characters (=XX), and in HTML an escaped ASCII character at
// most five (&amp;, all printable); so a character at most twelve.
func encoded(m mode, runes, bytes int) int {
	per := 3
	if m == modeHTML {
		per = 5
	}
	return min(runes*3*utf8.UTFMax, bytes*per)
}

// valueMax bounds f's value for m: in a part (quoted-printable, escaped in
// HTML) when m is set, else raw (the subject, before RFC 2047). linkBase
// is the length of the base of the mail's own links (PUBLIC_URL).
func valueMax(f field, m mode, raw bool, linkBase int) int {
	runes, bytes := 0, 0
	switch f {
	case fFirstName, fLastName, fCountry, fState, fCity, fAddressLine1, fAddressLine2, fStateProvinceRegion,
		fPostalCode, fFatherName, fDesignation, fAge, fCompanyName, fBirthDate, fJoinDate, fSenderName:
		runes, bytes = lineRunes, lineBytes
	case fEmail:
		runes, bytes = maxAddr, maxAddr
	case fAltEmail: // an address, but counted as a line of text
		runes, bytes = lineRunes, lineBytes
	case fFullName:
		runes, bytes = 2*lineRunes+1, 2*lineBytes+1
	case fSenderAddress: // the parts joined by " " and ", "
		runes, bytes = senderParts*lineRunes+7, senderParts*lineBytes+7
	case fUnsubscribePreferences:
		n := linkBase + len(mail.UnsubscribePath) + mail.MaxTokenLen
		runes, bytes = n, n
	}
	if raw {
		return bytes
	}
	return encoded(m, runes, bytes)
}

// litMax bounds what quoted-printable makes of literal text s encoded from
// the start of a line, soft line breaks included: a printable byte stays
// one character, a line end two, any other byte (a space may be one
// before a line end) three; a soft break follows at least qpLine
// characters.
func litMax(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\r' || c == '\n':
			n += 2
		case c > ' ' && c <= '~' && c != '=':
			n++
		default:
			n += 3
		}
	}
	return n + softBreak*(n/qpLine)
}

// WorstSize is the largest mail, in bytes, a Form of t can build, so
// what a send of t may cost at most per recipient: the headers (headRoom)
// and the subject (its longest rendering, B-encoded at worst), then both
// parts with every literal as quoted-printable encodes it at worst, every
// placeholder at the longest value it can take (valueMax), every link at
// the longer of its address as written and a tracked address (linkBase,
// the length of PUBLIC_URL, the click path and the longest token), and
// the open pixel. It is one pass over the compiled parts, with nothing
// rendered or encoded.
func (t *Template) WorstSize(linkBase int) int {
	subject := 0
	for _, sg := range t.subject.segs {
		subject += len(sg.lit)
		if sg.f != fNone {
			subject += valueMax(sg.f, modePlain, true, linkBase)
		}
	}
	// B-encoded words of at least 39 bytes take at most 75 bytes each, with
	// the folding; folding plain text adds at most a byte per byte.
	n := headRoom + 2*subject + 80

	tracked := 5 * (linkBase + len(mail.ClickPath) + mail.MaxClickTokenLen)
	for _, p := range []*program{&t.text, &t.html} {
		for _, sg := range p.segs {
			n += litMax(sg.lit) + softBreak // a soft break may start it, after a value
			v := 0
			switch sg.f {
			case fNone, fUnknown:
				continue
			case fLink:
				v = max(litMax(sg.raw), tracked)
			default:
				v = valueMax(sg.f, p.mode, false, linkBase)
			}
			// Written where the line is: its soft breaks may come sooner.
			n += v + softBreak*(v/qpLine+2)
		}
	}
	// The open pixel, cutting the HTML's literal before </body.
	return n + pixelMax + 2*softBreak
}

// CheckSize is the check of a template's worst-case mail a save applies
// (docs/limits.md): the template compiled once, then WorstSize, each link
// counted at linkBase bytes (the length of PUBLIC_URL); max 0 is
// MaxMailBytes. The API's sends and schedules and the console's design
// editor take their templates through it.
func CheckSize(max, linkBase int) mail.MailSize {
	if max <= 0 {
		max = MaxMailBytes
	}
	return mail.MailSize{Max: max, Worst: func(subject, preheader, html string) (int, bool) {
		t, err := Compile(subject, preheader, html)
		if err != nil {
			return 0, false
		}
		return t.WorstSize(linkBase), true
	}}
}

// pixelMax bounds what the open pixel's tag takes in the HTML part: a
// URL of maxURL bytes, each escaped to at most five, and its soft breaks.
var pixelMax = func() int {
	n := len(pixelOpen) + 5*maxURL + len(pixelClose)
	return n + softBreak*(n/qpLine+2)
}()

// fieldUse is a field whose value the parts write n times: text times in
// the text part, html times in the HTML part; subject counts its writes
// in the subject.
type fieldUse struct {
	f                   field
	n                   int
	text, html, subject int
}

// sizeUses sets what Bounds needs: the bytes of the frame and
// the encoded literals, which every mail holds, how often each field's
// value is written where, and (ceiling) the bound of the rest of a mail
// that no value decides.
func (f *Form) sizeUses() {
	f.fixed = len(f.head) + len(f.mime) + len(f.mid) + len(f.end)
	var count [fLink + 1]fieldUse
	for _, q := range []*qprogram{&f.text, &f.html} {
		for i := range q.segs {
			f.fixed += len(q.segs[i].enc)
			f.longestLit = max(f.longestLit, len(q.segs[i].enc))
			u := &count[q.segs[i].f]
			u.n++
			if q.mode == modeHTML {
				u.html++
			} else {
				u.text++
			}
		}
	}
	subject := 0 // the subject's literal text
	for _, sg := range f.t.subject.segs {
		subject += len(sg.lit)
		count[sg.f].subject++
	}
	writes := 0
	for fl := fFirstName; fl < fUnknown; fl++ {
		if u := count[fl]; u.n > 0 || u.subject > 0 {
			u.f = fl
			f.uses = append(f.uses, u)
			writes += u.n
		}
	}
	// What no value's length decides, at its longest: every header but the
	// subject (headRoom, as in WorstSize), the subject's literals B-encoded and
	// folded, each tracked link's token (the longest a token of this
	// form's ClickURLs can be, each byte as it is written at worst), the
	// open pixel, and the room q.append reserves beyond what it writes for
	// a link or the pixel. Build's own first reservation (f.size with the
	// subject and the pixel) is within it.
	// Each value written may take two soft breaks more than its length
	// fills and end in a space written =20 (Bounds counts the rest).
	f.ceiling = f.size + headRoom + 2*subject + 80 + writes*(2+2*(softBreak+2))
	if f.clicks != nil {
		tok := f.clicks.AppendClickToken(nil, 1<<63-1, mail.MaxLink)
		v := 0
		for _, c := range tok {
			switch {
			case c == '&':
				v += 5
			case linkBad[0][c] || c == '=':
				v += 3
			default:
				v++
			}
		}
		f.linkMax = v + softBreak*(v/qpLine+2)
		f.ceiling += (f.text.links() + f.html.links()) * f.linkMax
		f.ceiling += 3*v + 3*(v/24+1) + 16
	}
	f.ceiling += pixelMax + 3*64 + 3*(64/24+1) + 16
}

// Bounds is what a recipient's mail will take, known before it is built.
type Bounds struct {
	// Min: it is at least this long (the frame, the encoded literals and
	// each value as often as the parts write it, cleaned but neither
	// escaped nor encoded, both of which only lengthen it).
	Min int
	// Max bounds what Build writes for it, and the capacity Build grows
	// dst to (the room its encoder reserves included): built into a dst
	// with Max bytes free, the mail is written without a new array.
	Max int
}

// Bounds answers a lower and an upper bound of r's mail in one pass over
// r's values: each value costs, in each part it is written in, what
// quoted-printable (and in HTML the escaping) makes of its bytes and its
// soft line breaks; the rest is bounded once per form (ceiling). A mail
// longer than the form's MaxBytes is cut short by Build, so Max is never
// much more than MaxBytes. It writes each value once into b's scratch
// space and allocates nothing once b has grown; the engine reserves
// memory for the mail from Max (docs/deliveries.md).
func (f *Form) Bounds(b *Buffer, r *mail.Recipient) Bounds {
	if r == nil {
		r = &mail.Recipient{}
	}
	lo, hi := f.fixed, f.ceiling
	enc := 0                // the values as the parts write them, soft breaks aside
	longest, widest := 0, 0 // the longest value so written, and escaped
	for _, u := range f.uses {
		b.scratch = value(b.scratch[:0], u.f, modePlain, r, f.sender)
		v := b.scratch
		lo += u.n * len(v)
		if len(v) == 0 {
			continue
		}
		text, html, escaped := encodedLen(v)
		enc += u.text*text + u.html*html
		hi += 2 * u.subject * len(v)
		longest = max(longest, text, html)
		widest = max(widest, escaped)
	}
	// A soft break ends a line of at least qpLine characters; a space
	// before it becomes =20. (Two more per write: f.ceiling.)
	hi += enc + (softBreak+2)*(enc/qpLine)
	// The room q.append reserves past what it writes, for the widest value.
	room := 3*widest + 3*(widest/24+1) + 16
	hi += room
	// Build stops writing the parts once they pass MaxBytes: a literal, the
	// pixel, a link and a value at most past it, and the frame's end.
	cut := f.max + f.ceiling + f.longestLit + softBreak + pixelMax + f.linkMax +
		longest + (softBreak+2)*(longest/qpLine+2) + len(f.mid) + len(f.end) + room
	return Bounds{Min: lo, Max: min(hi, cut)}
}

// byteClass sorts the bytes of a value by what the parts make of them:
// 0 one byte in both; 1 ('=', past ASCII) =XX in both; 2 (& " ') one in
// text, a five-byte entity in HTML; 3 (< >) a four-byte one.
var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c == '=' || c >= utf8.RuneSelf:
			t[c] = 1
		case c == '&' || c == '"' || c == '\'':
			t[c] = 2
		case c == '<' || c == '>':
			t[c] = 3
		}
	}
	return t
}()

// encodedLen is what v, a value as put writes it in plain mode, becomes
// in the text part (quoted-printable) and in the HTML part (escaped, then
// quoted-printable), soft line breaks aside; escaped is its length
// escaped, before the encoding.
func encodedLen(v []byte) (text, html, escaped int) {
	qp, ent := 0, 0 // bytes written =XX, and what entities add
	for _, c := range v {
		if k := byteClass[c]; k != 0 { // seldom: a branch, not a count per byte
			switch k {
			case 1:
				qp++
			case 2:
				ent += 4
			default:
				ent += 3
			}
		}
	}
	text, escaped = len(v)+2*qp, len(v)+ent
	return text, escaped + 2*qp, escaped
}

// MaxBytes is the longest mail the form builds (FormOptions.MaxBytes): a
// recipient whose Bounds.Min passes it is refused before anything is
// written.
func (f *Form) MaxBytes() int { return f.max }

// TooLarge is the error of a mail longer than its form's MaxBytes.
type TooLarge struct {
	Size int // the mail's length, at least
	Max  int // the form's MaxBytes
}

func (e *TooLarge) Error() string {
	return "the mail is at least " + strconv.Itoa(e.Size) + " bytes, more than the limit of " +
		strconv.Itoa(e.Max) + " bytes"
}

// BuildChecked is Build for a mail that may pass the form's MaxBytes:
// such a mail is answered with a *TooLarge and dst as it was given (its
// capacity kept). A recipient whose values alone make the mail too long
// (Bounds.Min) is found before anything is written; otherwise Build stops
// soon after the limit, so no more than about MaxBytes is ever written
// for one mail.
func (f *Form) BuildChecked(dst []byte, b *Buffer, r *mail.Recipient, deliveryID int64) ([]byte, error) {
	return f.BuildBounded(dst, b, r, deliveryID, f.Bounds(b, r))
}

// BuildBounded is BuildChecked for r's Bounds s, asked of the form before
// (the engine reserves the mail's memory in between): dst is grown to
// hold s.Max at once, so a big mail is one array, not a chain of ever
// larger ones.
func (f *Form) BuildBounded(dst []byte, b *Buffer, r *mail.Recipient, deliveryID int64, s Bounds) ([]byte, error) {
	if s.Min > f.max {
		return dst, &TooLarge{Size: s.Min, Max: f.max}
	}
	start := len(dst)
	out := f.Build(slices.Grow(dst, s.Max), b, r, deliveryID)
	if n := len(out) - start; n > f.max {
		return out[:start], &TooLarge{Size: n, Max: f.max}
	}
	return out, nil
}
