package render

import (
	"bytes"
	"fmt"
	"html"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/mail"
)

// fakeClicks makes {base}{delivery}{token}{link}; its zero value
// https://t.example/c/{delivery}/{link}.
type fakeClicks struct{ base, token string }

func (c fakeClicks) ClickPrefix() string {
	if c == (fakeClicks{}) {
		return "https://t.example/c/"
	}
	return c.base
}

func (c fakeClicks) AppendClickToken(dst []byte, id int64, link int) []byte {
	dst = strconv.AppendInt(dst, id, 10)
	if c == (fakeClicks{}) {
		c.token = "/"
	}
	dst = append(dst, c.token...)
	return strconv.AppendInt(dst, int64(link), 10)
}

// numbered numbers a template's links 100, 101, … in order.
func numbered(tp *Template) []int {
	n := make([]int, len(tp.Links()))
	for i := range n {
		n[i] = 100 + i
	}
	return n
}

// Which links are tracked: absolute http(s) addresses in <a href>, any
// case or quoting, entities decoded; not mailto:, tel:, anchors, relative
// or javascript: links, placeholders, addresses with ((, spaces, quotes,
// a non-ASCII host; not inside comments, head, style or script. Each
// address once, in order.
func TestTemplateLinks(t *testing.T) {
	t.Parallel()
	src := `<html><head><title>x</title><style>a{}</style><link href="https://css.example/a.css"></head><body>
<a href="https://a.example/x?y=1&amp;z=2">A</a>
<A HREF='HTTP://b.example/B'>B</A>
<a class=btn href=https://c.example/c>C</a>
<a title="x" href = " https://d.example/d " >D</a>
<a href="mailto:ann@example.com">mail</a> <a href="tel:+4912345">tel</a> <a href="#top">top</a>
<a href="/relative">rel</a> <a href="javascript:void(0)">js</a> <a href="ftp://f.example/">ftp</a>
<a href="((unsubscribe_preferences))">prefs</a> <a href="https://e.example/?u=((email))">personal</a>
<a href="https://e.example/?u=((x">parens</a> <a href="https://e.example/(">ends in a parenthesis</a>
<a href="https://e.example/a b">space</a> <a href="https://例え.jp/">idn</a> <a href="https://">no host</a>
<a href="https://g.example/caf%C3%A9/über">unicode path</a>
<!-- <a href="https://comment.example/">c</a> --><script>x='<a href="https://script.example/">'</script>
<a href="https://a.example/x?y=1&z=2">A again</a>
<a name="anchor">no href</a><area href="https://area.example/">
</body></html>`
	tp := mustCompile(t, "s", "", src)
	want := []string{"https://a.example/x?y=1&z=2", "HTTP://b.example/B", "https://c.example/c", "https://d.example/d", "https://g.example/caf%C3%A9/über"}
	if got := tp.Links(); !slices.Equal(got, want) {
		t.Fatalf("Links() =\n%q\nwant\n%q", got, want)
	}
}

// Build writes each tracked link's address for the delivery in its href
// and where the text part shows it, and nothing else changes: untracked
// links, placeholders beside links, the preheader, the pixel.
func TestBuildTracksLinks(t *testing.T) {
	t.Parallel()
	src := `<html><body><p>Hi ((first_name))</p>
<a href="https://a.example/x?y=1&amp;z=2">Shop</a> <a href='https://b.example/'>https://b.example/</a>
<a href=https://c.example/c><img src="i.png"></a> <a href="https://a.example/x?y=1&z=2">again</a>
<a href="mailto:ann@example.com">Mail us</a> <a href="#top">Top</a>
<a href="((unsubscribe_preferences))">Preferences</a> <a href="https://d.example/?r=((postal_code))">Mine</a>
</body></html>`
	tp := mustCompile(t, "s", "Preview", src)
	r := recipient()
	r.Tokens.OpenPixelURL = "https://t.example/o/1"
	f := NewForm(tp, sender(), FormOptions{SendID: 1, Clicks: fakeClicks{}, LinkNumbers: []int{7, 8, -1}})
	data := f.Build(nil, &Buffer{}, r, 55)
	checkLines(t, data)
	_, parts := parse(t, data)
	html, text := parts[1].body, parts[0].body
	for _, want := range []string{
		`<a href="https://t.example/c/55/7">Shop</a>`,
		`<a href='https://t.example/c/55/8'>https://b.example/</a>`,
		`<a href=https://c.example/c><img`, // no number: as written
		`<a href="https://t.example/c/55/7">again</a>`,
		`<a href="mailto:ann@example.com">`, `<a href="#top">`,
		`<a href="https://m.example/p/abc?x=1&amp;y=2">Preferences</a>`,
		`<a href="https://d.example/?r=682001">Mine</a>`,
		`<img src="https://t.example/o/1" width="1"`,
		`mso-hide:all;">Preview</div>`,
	} {
		if !strings.Contains(html, canon(want)) {
			t.Errorf("html part lacks %q:\n%s", want, html)
		}
	}
	wantText := "Hi Ann\r\n\r\nShop (https://t.example/c/55/7) https://t.example/c/55/8 https://c.example/c again (https://t.example/c/55/7) Mail us (mailto:ann@example.com) Top Preferences (https://m.example/p/abc?x=1&y=2) Mine (https://d.example/?r=682001)"
	if text != wantText {
		t.Errorf("text part\n%q\nwant\n%q", text, wantText)
	}

	// Without Clicks, or without numbers, the mail is Render's.
	for _, opts := range []FormOptions{{SendID: 1, LinkNumbers: []int{7, 8, 9}}, {SendID: 1, Clicks: fakeClicks{}}} {
		var want Buffer
		tp.Render(&want, r, sender())
		_, parts := parse(t, NewForm(tp, sender(), opts).Build(nil, &Buffer{}, r, 55))
		if parts[0].body != canon(string(want.Text)) || parts[1].body != canon(withPixel(want.HTML, r.Tokens.OpenPixelURL)) {
			t.Errorf("%+v: parts differ from Render's", opts)
		}
	}
}

// A tracked address with bytes that could leave an attribute or are not
// ASCII is percent-encoded, & escaped in HTML; long ones are folded by
// quoted-printable like any text.
func TestBuildTrackedAddressEscaped(t *testing.T) {
	t.Parallel()
	tp := mustCompile(t, "s", "", `<a href='https://a.example/'>x</a>`)
	long := strings.Repeat("y", 300)
	f := NewForm(tp, nil, FormOptions{SendID: 1, Clicks: fakeClicks{base: `https://t.example/'"> &é` + long + "/", token: "/<&>" + long + "/"},
		LinkNumbers: []int{0}})
	data := f.Build(nil, &Buffer{}, &mail.Recipient{Email: "a@b.example"}, 9)
	checkLines(t, data)
	_, parts := parse(t, data)
	if want := `<a href='https://t.example/%27%22%3E%20&amp;%C3%A9` + long + `/9/%3C&amp;%3E` + long + `/0'>x</a>`; parts[1].body != want {
		t.Errorf("html\n%q\nwant\n%q", parts[1].body, want)
	}
	if want := `x (https://t.example/%27%22%3E%20&%C3%A9` + long + `/9/%3C&%3E` + long + `/0)`; parts[0].body != want {
		t.Errorf("text\n%q\nwant\n%q", parts[0].body, want)
	}
}

// TestBuildTrackedAllocs: with tracked links (real click tokens) and
// reused buffers, Build allocates nothing.
func TestBuildTrackedAllocs(t *testing.T) {
	s, p, h := benchTemplate()
	tp := mustCompile(t, s, p, h)
	r, snd := recipient(), sender()
	r.Tokens.OpenPixelURL = "https://t.example/o/abc?x=1&y=2"
	f := trackedForm(tp, snd, len(tp.Links()))
	var b Buffer
	var dst []byte
	id := int64(1000)
	n := testing.AllocsPerRun(100, func() {
		id++
		dst = f.Build(dst[:0], &b, r, id)
	})
	if n != 0 {
		t.Errorf("%v allocations per mail", n)
	}
}

// trackedForm is testForm tracking the first n of the template's links
// with real click tokens.
func trackedForm(tp *Template, s *mail.Sender, n int) *Form {
	numbers := make([]int, len(tp.Links()))
	for i := range numbers {
		numbers[i] = -1
		if i < n {
			numbers[i] = i
		}
	}
	clicks := mail.Links{Base: "https://m.example", Signer: mail.NewTokenSigner(bytes.Repeat([]byte{7}, 32))}.Clicks(42)
	return NewForm(tp, s, FormOptions{Domain: "mail.example", SendID: 42, UnsubscribeMailto: "unsub@mail.example",
		Now: func() time.Time { return testNow }, Clicks: clicks, LinkNumbers: numbers})
}

// BenchmarkRenderAndBuildTracked is BenchmarkRenderAndBuild with 10 of
// the template's links tracked (real click tokens), and with all of them.
func BenchmarkRenderAndBuildTracked(b *testing.B) {
	s, p, h := benchTemplate()
	tp := mustCompile(b, s, p, h)
	for _, n := range []int{10, len(tp.Links())} {
		b.Run(fmt.Sprint("links=", n), func(b *testing.B) {
			benchBuild(b, len(h), trackedForm(tp, sender(), n).Build)
		})
	}
}

// refTrackable is docs/tracking.md's rule for a link's address (its href,
// entities decoded, white space trimmed), written apart from trackable.
func refTrackable(u string) bool {
	lower := strings.ToLower(u)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") || len(u) > 2048 ||
		strings.Contains(u, "((") || strings.HasSuffix(u, "(") || !utf8.ValidString(u) {
		return false
	}
	if strings.ContainsFunc(u, func(r rune) bool {
		return r <= ' ' || strings.ContainsRune("\"'<>\\`", r) || unicode.IsControl(r) || unicode.IsSpace(r) ||
			unicode.In(r, unicode.Cf) || r == '\u034f' || r == '\u2028' || r == '\u2029'
	}) {
		return false
	}
	p, err := url.Parse(u)
	return err == nil && p.Host != "" && strings.IndexFunc(p.Host, func(r rune) bool { return r >= 0x80 }) < 0
}

// refAddress is a tracked address as Build writes it: the bytes that are
// not printable ASCII, space, quotes, backtick, angle brackets and '\'
// percent-encoded, '&' as &amp; in HTML.
func refAddress(u string, inHTML bool) string {
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		switch c := u[i]; {
		case inHTML && c == '&':
			b.WriteString("&amp;")
		case c <= ' ' || c >= 0x7f || strings.IndexByte("\"'`<>\\", c) >= 0:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// FuzzBuildTracked holds tracked links to docs/tracking.md whatever the
// template and the tracker's addresses hold: Links() are trackable
// addresses, each link segment stands for its href (entities decoded,
// trimmed) or the address the text part shows; a Form numbering some of
// them builds a mail whose lines keep quoted-printable's limits and whose
// parts decode to Render's with each numbered link's raw text replaced by
// its tracked address (escaped), the others as written.
func FuzzBuildTracked(f *testing.F) {
	f.Add(`<body><a href="https://a.example/?x=1&amp;y=2">A ((first_name))</a> <a href='HTTP://b.example'>http://b.example</a></body>`,
		"Ann", "https://t.example/c/", "/", uint64(0))
	f.Add(`<a href=https://a.example/>x</a><a href="((unsubscribe_preferences))">p</a><a href="mailto:a@b">m</a>`+strings.Repeat("y", 80)+
		`<a href="https://c.example/`+strings.Repeat("z", 100)+`">`, "= ", `https://t.example/'"> &é`, "=&<", uint64(2))
	f.Add(`<a href="https://a.example/a(">https://a.example/a(</a>(first_name))<a href="https://b.example/((x">b</a>`, "", "x", "", uint64(1))
	f.Fuzz(func(t *testing.T, src, first, base, mid string, mask uint64) {
		tp, err := Compile("s", "Pre", src)
		if err != nil {
			return
		}
		links := tp.Links()
		for _, u := range links {
			if !refTrackable(u) {
				t.Fatalf("Links() holds %q", u)
			}
		}
		for _, p := range []program{tp.html, tp.text} {
			for _, sg := range p.segs {
				if sg.f != fLink {
					continue
				}
				u := sg.raw
				if p.mode == modeHTML {
					u = strings.TrimSpace(html.UnescapeString(u))
				}
				if sg.link < 0 || sg.link >= len(links) || u != links[sg.link] {
					t.Fatalf("link segment %q stands for link %d of %q", sg.raw, sg.link, links)
				}
			}
		}
		numbers := make([]int, len(links))
		for k := range numbers {
			numbers[k] = 100 + k
			if mask>>(k%64)&1 == 1 {
				numbers[k] = -1
			}
		}
		r := &mail.Recipient{Email: "a@b.example", FirstName: first, Tokens: mail.Tokens{OpenPixelURL: "https://t.example/p"}}
		const id = 77
		want := func(p program) string {
			var b []byte
			for _, sg := range p.segs {
				b = append(b, sg.lit...)
				switch {
				case sg.f == fLink && numbers[sg.link] >= 0:
					b = append(b, refAddress(base+strconv.Itoa(id)+mid+strconv.Itoa(numbers[sg.link]), p.mode == modeHTML)...)
				case sg.f == fLink:
					b = append(b, sg.raw...)
				case sg.f != fNone:
					b = value(b, sg.f, p.mode, r, &mail.Sender{})
				}
			}
			return string(b)
		}
		data := NewForm(tp, nil, FormOptions{SendID: 1, Clicks: fakeClicks{base: base, token: mid}, LinkNumbers: numbers}).Build(nil, &Buffer{}, r, id)
		checkLines(t, data)
		if strings.Contains(src, "\r") {
			return // a CR cut from its LF by a placeholder may decode as two line ends
		}
		_, parts := parse(t, data)
		if got, w := parts[0].body, canon(want(tp.text)); got != w {
			t.Fatalf("text part\n%q\nwant\n%q", got, w)
		}
		if got, w := parts[1].body, canon(withPixel([]byte(want(tp.html)), r.Tokens.OpenPixelURL)); got != w {
			t.Fatalf("html part\n%q\nwant\n%q", got, w)
		}
	})
}
