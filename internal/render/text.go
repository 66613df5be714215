package render

import (
	"html"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text derives a plain-text alternative from an HTML document: tags go,
// head, title, script, style and template contents go, comments go,
// entities are decoded, a link becomes "text (url)", an image its alt
// text, block elements start lines and white space is collapsed (at most
// one blank line). ((name)) placeholders are text, so they survive for
// Compile to fill per recipient. It runs once per send.
func Text(src string) string {
	text, _, _ := scan(src)
	return text
}

// span marks a tracked link's address: bytes [start, end) of a part's
// source hold url.
type span struct {
	start, end int
	url        string
}

// scan derives the plain-text part of src (as Text) and finds the tracked
// links (trackable): hrefs are their href values in src, shown where the
// text part shows their addresses, both in order.
func scan(src string) (text string, hrefs, shown []span) {
	w := &textWriter{}
	for i := 0; i < len(src); {
		j := strings.IndexByte(src[i:], '<')
		if j < 0 {
			w.text(src[i:])
			break
		}
		j += i
		w.text(src[i:j])
		i = w.markup(src, j)
	}
	text, shown = w.done()
	return text, w.hrefs, shown
}

// markup handles the markup starting with '<' at src[i:] and returns the
// index after it; a '<' that starts no markup is text.
func (w *textWriter) markup(src string, i int) int {
	rest := src[i:]
	switch {
	case strings.HasPrefix(rest, "<!--"):
		if k := strings.Index(rest[4:], "-->"); k >= 0 {
			return i + 4 + k + 3
		}
		return len(src)
	case strings.HasPrefix(rest, "<![CDATA["):
		if k := strings.Index(rest, "]]>"); k >= 0 {
			w.text(rest[9:k])
			return i + k + 3
		}
		return len(src)
	case strings.HasPrefix(rest, "<!") || strings.HasPrefix(rest, "<?"):
		if k := strings.IndexByte(rest, '>'); k >= 0 {
			return i + k + 1
		}
		return len(src)
	}
	closing := strings.HasPrefix(rest, "</")
	n := 1
	if closing {
		n = 2
	}
	if len(rest) <= n || !isLetter(rest[n]) {
		w.text("<")
		return i + 1
	}
	k := n
	for k < len(rest) && !isSpace(rest[k]) && rest[k] != '>' && rest[k] != '/' {
		k++
	}
	name := strings.ToLower(rest[n:k])
	end := tagEnd(src, i+k)
	attrs := src[i+k : end]
	if closing {
		w.endTag(name)
		return end
	}
	switch name {
	case "script", "style", "head", "title", "template", "xml":
		// Raw or hidden content: skip to the matching end tag.
		if e := indexFold(src[end:], "</"+name); e >= 0 {
			return tagEnd(src, end+e+2+len(name))
		}
		return len(src)
	}
	w.startTag(name, attrs, i+k)
	return end
}

// indexFold is strings.Index ignoring ASCII case; sub is lower-case.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1
		}
		i += j
		if i+len(sub) <= len(s) && strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// blocks are the elements that start and end a line (1) or a paragraph (2).
var blocks = map[string]int{
	"p": 2, "h1": 2, "h2": 2, "h3": 2, "h4": 2, "h5": 2, "h6": 2, "table": 2,
	"blockquote": 2, "ul": 2, "ol": 2, "pre": 2, "hr": 2,
	"div": 1, "br": 1, "tr": 1, "li": 1, "dt": 1, "dd": 1, "section": 1,
	"article": 1, "header": 1, "footer": 1, "nav": 1, "aside": 1, "main": 1,
	"center": 1, "address": 1, "figure": 1, "figcaption": 1, "form": 1,
	"dl": 1, "tbody": 1, "thead": 1, "tfoot": 1, "caption": 1, "body": 1,
}

// startTag handles a start tag whose attribute text, attrs, is at src[at:].
func (w *textWriter) startTag(name, attrs string, at int) {
	switch name {
	case "br":
		w.lineBreak()
		return
	case "li":
		w.newline(1)
		w.text("- ")
		return
	case "td", "th":
		w.space = true
		return
	case "img":
		if alt := attr(attrs, "alt"); strings.TrimSpace(alt) != "" {
			w.space = true
			w.write(alt)
			w.space = true
		}
		return
	case "a":
		raw, start, end := attrValue(attrs, "href")
		w.href = strings.TrimSpace(html.UnescapeString(raw))
		w.tracked = start >= 0 && trackable(w.href)
		if w.tracked {
			w.hrefs = append(w.hrefs, span{at + start, at + end, w.href})
		}
		w.linkAt = len(w.b)
		w.inLink = true
		return
	}
	if n, ok := blocks[name]; ok {
		w.newline(n)
	}
}

func (w *textWriter) endTag(name string) {
	switch name {
	case "a":
		w.closeLink()
		return
	case "td", "th":
		w.space = true
		return
	}
	if n, ok := blocks[name]; ok {
		w.newline(n)
	}
}

// closeLink writes " (url)" after a link's text, unless the URL says
// nothing more than the text or goes nowhere.
func (w *textWriter) closeLink() {
	if !w.inLink {
		return
	}
	w.inLink = false
	u := w.href
	if u == "" || strings.HasPrefix(u, "#") || hasPrefixFold(u, "javascript:") {
		return
	}
	label := strings.TrimSpace(string(w.b[min(w.linkAt, len(w.b)):]))
	bare := u
	if hasPrefixFold(u, "mailto:") || hasPrefixFold(u, "tel:") {
		bare = u[strings.IndexByte(u, ':')+1:]
	}
	switch label {
	case "":
		w.write(u)
		w.shows(u, 0)
	case u:
		w.shows(u, 0) // the link's text is its address
	case bare:
	default:
		w.space = true
		w.write("(" + u + ")")
		w.shows(u, 1)
	}
}

// shows notes that the text just written ends with a tracked link's
// address u and after bytes more (when the text holds it unaltered).
func (w *textWriter) shows(u string, after int) {
	end := len(w.b) - after
	if w.tracked && end >= len(u) && string(w.b[end-len(u):end]) == u {
		w.shown = append(w.shown, span{end - len(u), end, u})
	}
}

// maxLink bounds a tracked link's address, in bytes.
const maxLink = 2048

// trackable reports whether a link's address (its href, entities decoded,
// white space trimmed) is rewritten to a tracked one (docs/tracking.md):
// an absolute http or https URL with an ASCII host, at most maxLink bytes,
// without "((" (a placeholder would make it differ by recipient) and not
// ending in '(' (with text after it, a "((" that could start one), white
// space, control or format characters, quotes, angle brackets, backslash
// or backtick. Anything else (mailto:, tel:, #anchors, relative URLs,
// ((unsubscribe_preferences))) is left as written.
func trackable(u string) bool {
	if len(u) > maxLink || !hasPrefixFold(u, "http://") && !hasPrefixFold(u, "https://") ||
		strings.Contains(u, "((") || strings.HasSuffix(u, "(") {
		return false
	}
	for _, r := range u {
		switch {
		case r <= ' ' || r == 0x7f || strings.ContainsRune("\"'<>\\`", r):
			return false
		case r >= 0x80 && (r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) ||
			r == '\u034f' || r == '\u2028' || r == '\u2029'):
			return false
		}
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return false
	}
	for i := 0; i < len(p.Host); i++ {
		if p.Host[i] >= 0x80 {
			return false
		}
	}
	return true
}

func hasPrefixFold(s, p string) bool { return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) }

// attr is the entity-decoded value of the attribute named name (lower
// case) in a start tag's attribute text, "" when absent.
func attr(attrs, name string) string {
	v, _, _ := attrValue(attrs, name)
	return html.UnescapeString(v)
}

// attrValue is the value of the attribute named name (lower case) in a
// start tag's attribute text as written (entities not decoded, quotes
// left out) and where it is in attrs; start is -1 when there is no such
// attribute or it has no value.
func attrValue(attrs, name string) (val string, start, end int) {
	s := attrs
	for len(s) > 0 {
		i := 0
		for i < len(s) && (isSpace(s[i]) || s[i] == '/') {
			i++
		}
		s = s[i:]
		if s == "" || s[0] == '>' {
			return "", -1, -1
		}
		k := 0
		for k < len(s) && !isSpace(s[k]) && s[k] != '=' && s[k] != '>' && s[k] != '/' {
			k++
		}
		if k == 0 { // a stray '=' or quote
			s = s[1:]
			continue
		}
		key := s[:k]
		s = s[k:]
		for len(s) > 0 && isSpace(s[0]) {
			s = s[1:]
		}
		val, start := "", -1
		if len(s) > 0 && s[0] == '=' {
			s = s[1:]
			for len(s) > 0 && isSpace(s[0]) {
				s = s[1:]
			}
			if len(s) > 0 && (s[0] == '"' || s[0] == '\'') {
				q := s[0]
				start = len(attrs) - len(s) + 1
				e := strings.IndexByte(s[1:], q)
				if e < 0 {
					val, s = s[1:], ""
				} else {
					val, s = s[1:1+e], s[2+e:]
				}
			} else {
				start = len(attrs) - len(s)
				e := 0
				for e < len(s) && !isSpace(s[e]) && s[e] != '>' {
					e++
				}
				val, s = s[:e], s[e:]
			}
		}
		if strings.EqualFold(key, name) {
			return val, start, start + len(val)
		}
	}
	return "", -1, -1
}

// textWriter collapses white space as text arrives: runs of spaces
// become one space, line breaks are held until the next word so none
// trail, and at most one blank line separates paragraphs.
type textWriter struct {
	b      []byte
	space  bool // a space is pending
	nl     int  // line breaks pending (block edges: 1 or 2)
	breaks int  // hard <br> breaks pending
	href   string
	linkAt int
	inLink bool

	tracked bool   // the open link's address is trackable
	hrefs   []span // tracked links' href values in the source
	shown   []span // where the text shows tracked links' addresses
}

func (w *textWriter) newline(n int) {
	if len(w.b) > 0 && n > w.nl {
		w.nl = n
	}
}

func (w *textWriter) lineBreak() {
	if len(w.b) > 0 {
		w.breaks++
	}
}

// text writes raw HTML text: entities decoded, white space collapsed.
func (w *textWriter) text(raw string) {
	s := raw
	if strings.IndexByte(s, '&') >= 0 {
		s = html.UnescapeString(s)
	}
	w.write(s)
}

// write writes decoded text, white space collapsed.
func (w *textWriter) write(s string) {
	for _, r := range s {
		switch {
		case r == '\u00a0' || unicode.IsSpace(r):
			w.space = true
			continue
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff' || r == '\u034f' || r == '\u00ad':
			continue // zero-width padding (preheader tricks) and soft hyphens
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			continue
		}
		w.flush()
		w.b = utf8.AppendRune(w.b, r)
	}
}

// flush writes the pending separators before a visible character.
func (w *textWriter) flush() {
	nl := max(w.nl, min(w.breaks, 2))
	if len(w.b) == 0 {
		nl = 0
	}
	switch {
	case nl > 0:
		w.b = trimSpaceRight(w.b)
		for range nl {
			w.b = append(w.b, '\n')
		}
	case w.space && len(w.b) > 0 && w.b[len(w.b)-1] != '\n':
		w.b = append(w.b, ' ')
	}
	w.nl, w.breaks, w.space = 0, 0, false
}

func trimSpaceRight(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// done is the text and where it shows tracked links' addresses.
func (w *textWriter) done() (string, []span) {
	w.closeLink()
	s := string(w.b)
	cut := len(s) - len(strings.TrimLeftFunc(s, unicode.IsSpace))
	s = strings.TrimSpace(s)
	var shown []span
	for _, sp := range w.shown {
		if sp.start >= cut && sp.end-cut <= len(s) {
			shown = append(shown, span{sp.start - cut, sp.end - cut, sp.url})
		}
	}
	return s, shown
}
