package render

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/bits"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

var testNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("IST", 5*3600+1800))

// testSigner seals the test forms' Message-IDs.
var testSigner = mail.NewTokenSigner(bytes.Repeat([]byte{7}, 32))

func testForm(t testing.TB, tp *Template, s *mail.Sender) *Form {
	t.Helper()
	return NewForm(tp, s, FormOptions{
		Domain: "mail.example", SendID: 42, Signer: testSigner, UnsubscribeMailto: "unsub@mail.example",
		Now: func() time.Time { return testNow },
	})
}

// canon is s with its line ends in MIME's canonical form, CRLF: what a
// quoted-printable part decodes to.
func canon(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.ReplaceAll(s, "\n", "\r\n")
}

type part struct {
	header map[string][]string
	body   string
}

// parse reads a built message with net/mail and mime/multipart, which
// decodes quoted-printable parts.
func parse(t *testing.T, data []byte) (*netmail.Message, []part) {
	t.Helper()
	m, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("ReadMessage: %v\n%s", err, data)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q: %v", m.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	var parts []part
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("NextPart: %v", err)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			t.Fatalf("part: %v", err)
		}
		parts = append(parts, part{header: p.Header, body: string(b)})
	}
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2", len(parts))
	}
	return m, parts
}

// checkLines fails when a line does not end in CRLF, a header line is
// longer than 78 characters or a body line longer than 76.
func checkLines(t *testing.T, data []byte) {
	t.Helper()
	if !bytes.HasSuffix(data, []byte("\r\n")) {
		t.Error("message does not end in CRLF")
	}
	inHead := true
	for i, l := range bytes.Split(data[:len(data)-2], []byte("\r\n")) {
		if bytes.ContainsAny(l, "\r\n") {
			t.Fatalf("line %d holds a bare CR or LF: %q", i, l)
		}
		if len(l) == 0 {
			inHead = false
		}
		if max := 76; inHead && len(l) > 78 || !inHead && len(l) > max {
			t.Fatalf("line %d is %d long: %q", i, len(l), l)
		}
		for _, c := range l {
			if c >= 0x80 {
				t.Fatalf("line %d holds a non-ASCII byte: %q", i, l)
			}
		}
	}
}

func TestBuildHeaders(t *testing.T) {
	t.Parallel()
	tp := mustCompile(t, "Hello ((first_name)), your offers", "Deals",
		"<html><body>\n<p>Hi ((first_name)) =^.^= caf\u00e9 </p>\n</body></html>")
	r := recipient()
	var b Buffer
	tp.Render(&b, r, sender())
	f := testForm(t, tp, sender())
	data := f.Build(nil, &b, r, 1001)
	checkLines(t, data)
	m, parts := parse(t, data)

	want := map[string]string{
		"From":                  `"Shop" <shop@example.com>`,
		"Reply-To":              "help@example.com",
		"To":                    "ann@example.com",
		"Subject":               "Hello Ann, your offers",
		"Date":                  "Wed, 04 Mar 2026 05:06:07 +0530",
		"List-Unsubscribe":      "<https://m.example/u/abc>, <mailto:unsub@mail.example?subject=unsubscribe-abc>",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
		"Mime-Version":          "1.0",
		"Content-Type":          `multipart/alternative; boundary="` + f.boundary + `"`,
	}
	id := m.Header.Get("Message-Id")
	if send, delivery, ok := testSigner.OpenMessageID(id); !ok || send != 42 || delivery != 1001 || !strings.HasSuffix(id, "@mail.example>") {
		t.Errorf("Message-ID %q opens to %d, %d, %v; want 42, 1001 at mail.example", id, send, delivery, ok)
	}
	if again := f.Build(nil, &b, r, 1001); bytes.Contains(again, []byte(id)) {
		t.Errorf("Message-ID %q written twice: its random part must be new in each mail", id)
	}
	for k, v := range m.Header {
		if k == "Message-Id" {
			continue
		}
		if len(v) != 1 || want[k] != v[0] {
			t.Errorf("header %s = %q, want %q", k, v, want[k])
		}
	}
	if len(m.Header) != len(want)+1 {
		t.Errorf("%d headers, want %d: %v", len(m.Header), len(want), m.Header)
	}
	if d, err := m.Header.Date(); err != nil || !d.Equal(testNow) {
		t.Errorf("Date = %v, %v", d, err)
	}
	if !strings.HasPrefix(f.boundary, "=_") || len(f.boundary) < 20 {
		t.Errorf("boundary %q", f.boundary)
	}

	for i, ct := range []string{"text/plain; charset=utf-8", "text/html; charset=utf-8"} {
		if got := parts[i].header["Content-Type"]; !slices.Equal(got, []string{ct}) {
			t.Errorf("part %d Content-Type = %q, want %q", i, got, ct)
		}
	}
	if !bytes.Contains(data, []byte("Content-Transfer-Encoding: quoted-printable\r\n")) {
		t.Error("parts are not quoted-printable")
	}
	if got, want := parts[0].body, canon(string(b.Text)); got != want {
		t.Errorf("text part =\n%q\nwant\n%q", got, want)
	}
	if got, want := parts[1].body, canon(string(b.HTML)); got != want {
		t.Errorf("html part =\n%q\nwant\n%q", got, want)
	}
}

func TestBuildUnsubscribeVariants(t *testing.T) {
	t.Parallel()
	tp := mustCompile(t, "s", "", "<p>x</p>")
	var b Buffer
	tests := []struct {
		name, url, token, mailto, list, post string
	}{
		{"both", "https://u.example/1", "tk-1_Z", "u@x.example", "<https://u.example/1>, <mailto:u@x.example?subject=unsubscribe-tk-1_Z>", "List-Unsubscribe=One-Click"},
		{"url only", "https://u.example/1", "tk", "", "<https://u.example/1>", "List-Unsubscribe=One-Click"},
		{"mailto only", "", "tk", "u@x.example", "<mailto:u@x.example?subject=unsubscribe-tk>", ""},
		{"mailto without token", "", "", "u@x.example", "", ""},
		{"mailto with a token that is not base64url", "", "a b>", "u@x.example", "", ""},
		{"none", "", "", "", "", ""},
		{"url too long", "https://u.example/" + strings.Repeat("a", maxURL), "", "", "", ""},
		{"url too long once encoded", "https://u.example/" + strings.Repeat("\u00e9", 300), "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &mail.Recipient{Email: "a@b.example", Tokens: mail.Tokens{UnsubscribeURL: tt.url, Unsubscribe: tt.token}}
			tp.Render(&b, r, nil)
			f := NewForm(tp, sender(), FormOptions{SendID: 1, UnsubscribeMailto: tt.mailto})
			data := f.Build(nil, &b, r, 9)
			checkLines(t, data)
			m, _ := parse(t, data)
			if got := m.Header.Get("List-Unsubscribe"); got != tt.list {
				t.Errorf("List-Unsubscribe = %q, want %q", got, tt.list)
			}
			if got := m.Header.Get("List-Unsubscribe-Post"); got != tt.post {
				t.Errorf("List-Unsubscribe-Post = %q, want %q", got, tt.post)
			}
			// The domain defaults to the sender's; without a signer the
			// Message-ID is random and names no delivery.
			if got := m.Header.Get("Message-Id"); !regexp.MustCompile(`^<[a-z2-7]{13}\.[a-z2-7]{13}@example\.com>$`).MatchString(got) {
				t.Errorf("Message-ID = %q", got)
			}
		})
	}
}

func TestBuildNonASCII(t *testing.T) {
	t.Parallel()
	var dec mime.WordDecoder
	tests := []struct{ subject, name string }{
		{"Grüße, ((first_name))! 日本語のお知らせ 🎉", "Zoë Café"},
		{strings.Repeat("Ünïcödé wörds ", 20), strings.Repeat("Ωμέγα ", 30)},
		{"  leading and trailing  ", `Quote "me" \ please`},
		{"looks =?utf-8?q?encoded?= but is not", "=?utf-8?q?x?="},
		{"", "Shop"},
		{strings.Repeat("日", 100), "日本"},
	}
	for _, tt := range tests {
		tp := mustCompile(t, tt.subject, "", "<p>x</p>")
		r := recipient()
		var b Buffer
		tp.Render(&b, r, nil)
		s := sender()
		s.FromName = tt.name
		data := testForm(t, tp, s).Build(nil, &b, r, 1)
		checkLines(t, data)
		m, _ := parse(t, data)
		got, err := dec.DecodeHeader(m.Header.Get("Subject"))
		if err != nil || got != string(b.Subject) {
			t.Errorf("subject %q decodes to %q, %v; want %q", m.Header.Get("Subject"), got, err, b.Subject)
		}
		a, err := netmail.ParseAddress(m.Header.Get("From"))
		if err != nil || a.Name != strings.TrimSpace(tt.name) || a.Address != "shop@example.com" {
			t.Errorf("From %q parses to %+v, %v; want %q", m.Header.Get("From"), a, err, tt.name)
		}
	}
}

func TestBuildLongSubject(t *testing.T) {
	t.Parallel()
	var dec mime.WordDecoder
	words := strings.Fields(strings.Repeat("Limited offer on the finest products, only this week ", 5))
	long := strings.Join(words, " ")
	tests := []struct {
		name, subject string
		plain         bool // written as is, folded at spaces
	}{
		{"words", long, true},
		{"one long word", strings.Repeat("x", 210), false},
		{"non-ascii", strings.Repeat("Ação rápida ", 20), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.subject) < 200 {
				t.Fatalf("subject only %d long", len(tt.subject))
			}
			tp := mustCompile(t, tt.subject, "", "<p>x</p>")
			var b Buffer
			tp.Render(&b, nil, nil)
			data := testForm(t, tp, sender()).Build(nil, &b, &mail.Recipient{Email: "a@b.example"}, 1)
			checkLines(t, data)
			raw := data[bytes.Index(data, []byte("\r\nSubject: "))+2:]
			raw = raw[:bytes.Index(raw, []byte("\r\nDate: "))]
			if n := bytes.Count(raw, []byte("\r\n ")); n < 2 {
				t.Errorf("subject folded %d times:\n%s", n, raw)
			}
			if tt.plain && bytes.Contains(raw, []byte("=?")) {
				t.Errorf("ASCII subject was encoded:\n%s", raw)
			}
			m, _ := parse(t, data)
			got, err := dec.DecodeHeader(m.Header.Get("Subject"))
			if err != nil || got != tt.subject {
				t.Errorf("subject =\n%q, %v\nwant\n%q", got, err, tt.subject)
			}
		})
	}
}

func TestBuildLongLines(t *testing.T) {
	t.Parallel()
	h := "<html><body><p>" + strings.Repeat("Dear ((first_name)), caf\u00e9 a=b   ", 1<<20/32) + "</p></body></html>"
	if strings.Contains(h, "\n") || len(h) < 1<<20 {
		t.Fatal("bad test input")
	}
	tp := mustCompile(t, "s", "", h)
	r := recipient()
	r.Tokens.OpenPixelURL = "https://t.example/o/1"
	var b Buffer
	tp.Render(&b, r, nil)
	data := testForm(t, tp, sender()).Build(nil, &b, r, 1)
	for i, l := range bytes.Split(data, []byte("\r\n")) {
		if len(l) > 998 {
			t.Fatalf("line %d is %d octets", i, len(l))
		}
	}
	checkLines(t, data)
	_, parts := parse(t, data)
	at := strings.LastIndex(string(b.HTML), "</body>")
	want := string(b.HTML[:at]) + `<img src="https://t.example/o/1" width="1" height="1" alt="" style="display:block;border:0">` + string(b.HTML[at:])
	if parts[1].body != want {
		t.Error("1 MB html part does not decode back")
	}
}

func TestBuildPixel(t *testing.T) {
	t.Parallel()
	const img = `<img src="https://t.example/o?a=1&amp;b=2" width="1" height="1" alt="" style="display:block;border:0">`
	tests := []struct{ name, html, want string }{
		{"before body end", "<html><BODY>\n<p>Hi</p>\n</Body></html>", "<html><BODY>\n<p>Hi</p>\n" + img + "</Body></html>"},
		{"no body", "<p>Hi</p>", "<p>Hi</p>" + img},
		{"last body end", "<p>a</p></body>x</body>", "<p>a</p></body>x" + img + "</body>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := mustCompile(t, "s", "", tt.html)
			r := recipient()
			r.Tokens.OpenPixelURL = "https://t.example/o?a=1&b=2"
			var b Buffer
			tp.Render(&b, r, nil)
			data := testForm(t, tp, sender()).Build(nil, &b, r, 1)
			checkLines(t, data)
			_, parts := parse(t, data)
			if got := parts[1].body; got != canon(tt.want) {
				t.Errorf("html =\n%q\nwant\n%q", got, canon(tt.want))
			}
			if n := strings.Count(parts[1].body, "<img "); n != 1 {
				t.Errorf("%d pixels", n)
			}
			if strings.Contains(parts[0].body, "t.example") {
				t.Error("pixel in the text part")
			}
		})
	}
	// Without a pixel URL there is none.
	tp := mustCompile(t, "s", "", "<body>x</body>")
	var b Buffer
	tp.Render(&b, recipient(), nil)
	_, parts := parse(t, testForm(t, tp, sender()).Build(nil, &b, recipient(), 1))
	if parts[1].body != "<body>x</body>" {
		t.Errorf("html = %q", parts[1].body)
	}
}

func TestBuildInjection(t *testing.T) {
	t.Parallel()
	tp := mustCompile(t, "Hi ((first_name))", "", "<body>x</body>")
	r := &mail.Recipient{
		Email:     "ann@example.com\r\nBcc: evil@x.example",
		FirstName: "Ann\r\nBcc: evil@x.example\nX-A: 1",
		Tokens: mail.Tokens{
			Unsubscribe:    "tok\r\nBcc: evil@x.example",
			UnsubscribeURL: "https://u.example/1>\r\nBcc: evil@x.example",
			OpenPixelURL:   "https://t.example/1\" onerror=\"alert(1)\r\nBcc: evil@x.example",
		},
	}
	s := sender()
	s.FromName = "Shop\r\nBcc: evil@x.example"
	s.ReplyTo = "help@example.com\r\nBcc: evil@x.example"
	var b Buffer
	tp.Render(&b, r, s)
	f := NewForm(tp, s, FormOptions{Domain: "m.example\r\nBcc: x", SendID: 1,
		UnsubscribeMailto: "u@m.example>\r\nBcc: x", Now: func() time.Time { return testNow }})
	data := f.Build(nil, &b, r, 5)
	checkLines(t, data)
	m, parts := parse(t, data)
	for k := range m.Header {
		switch k {
		case "From", "Reply-To", "To", "Subject", "Date", "Message-Id", "List-Unsubscribe",
			"List-Unsubscribe-Post", "Mime-Version", "Content-Type":
		default:
			t.Errorf("injected header %s: %q", k, m.Header[k])
		}
	}
	if got := m.Header.Get("List-Unsubscribe"); got != "<https://u.example/1%3E%0D%0ABcc:%20evil@x.example>" {
		t.Errorf("List-Unsubscribe = %q", got)
	}
	if got := m.Header.Get("To"); got != "ann@example.comBcc:evil@x.example" {
		t.Errorf("To = %q", got)
	}
	if got := m.Header.Get("Message-Id"); !strings.HasSuffix(got, "@m.exampleBcc:x>") {
		t.Errorf("Message-ID = %q", got)
	}
	if a, err := netmail.ParseAddress(m.Header.Get("From")); err != nil || a.Name != "ShopBcc: evil@x.example" {
		t.Errorf("From = %q: %+v %v", m.Header.Get("From"), a, err)
	}
	if !strings.Contains(parts[1].body, `<img src="https://t.example/1%22%20onerror=%22alert(1)%0D%0ABcc:%20evil@x.example" width="1"`) {
		t.Errorf("pixel not escaped: %q", parts[1].body)
	}
}

func TestBuildMessageIDs(t *testing.T) {
	t.Parallel()
	tp := mustCompile(t, "s", "", "<p>x</p>")
	var b Buffer
	r := recipient()
	tp.Render(&b, r, nil)
	f := testForm(t, tp, sender())
	id := func(d int64) string {
		m, _ := parse(t, f.Build(nil, &b, r, d))
		return m.Header.Get("Message-Id")
	}
	a1, a2, c := id(7), id(7), id(8)
	for _, tt := range []struct {
		id       string
		delivery int64
	}{{a1, 7}, {a2, 7}, {c, 8}} {
		if send, d, ok := testSigner.OpenMessageID(tt.id); !ok || send != 42 || d != tt.delivery {
			t.Errorf("Message-ID %q opens to %d, %d, %v; want 42, %d", tt.id, send, d, ok, tt.delivery)
		}
	}
	// Each mail has its own random part, a replay of the same delivery too.
	if a1 == a2 || a1 == c {
		t.Errorf("Message-IDs %q, %q, %q: each must be new", a1, a2, c)
	}
	// Apart from it, a replay of the same delivery builds the same mail.
	if !bytes.Equal(messageIDMasked(f.Build(nil, &b, r, 7)), messageIDMasked(f.Build(nil, &b, r, 7))) {
		t.Error("same delivery built two different mails")
	}
	// Each send has its own boundary.
	if g := testForm(t, tp, sender()); g.boundary == f.boundary {
		t.Error("two forms share a boundary")
	}
}

func TestQuotedPrintable(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a=b", "a=3Db"},
		{"trailing \nspace ", "trailing=20\r\nspace=20"},
		{"tab\there\t", "tab=09here=09"},
		{"crlf\r\ncr\rlf\n", "crlf\r\ncr\r\nlf\r\n"},
		{"café", "caf=C3=A9"},
		{strings.Repeat("a", 75), strings.Repeat("a", 75)},
		{strings.Repeat("a", 76), strings.Repeat("a", 75) + "=\r\na"},
		{strings.Repeat("a", 74) + "é", strings.Repeat("a", 74) + "=\r\n=C3=A9"},
		{strings.Repeat("a", 74) + " \n", strings.Repeat("a", 74) + "=\r\n=20\r\n"},
		{"\x00\x7f~ ", "=00=7F~=20"},
	}
	for _, tt := range tests {
		var q qp
		if got := string(q.append(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("qp(%q) =\n%q\nwant\n%q", tt.in, got, tt.want)
		}
	}
	// Random input, written in random pieces, decodes back to itself
	// (line ends made CRLF) and keeps lines within 76 characters.
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab =\t\r\n.~\x00\x7f\xc3\xa9xyz0123456789")
	for range 300 {
		in := make([]byte, rng.IntN(400))
		for i := range in {
			if rng.IntN(4) == 0 {
				in[i] = byte(rng.IntN(256))
			} else {
				in[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		var q qp
		var out []byte
		for rest := in; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(100))
			if n < len(rest) && rest[n-1] == '\r' {
				n++ // keep a CRLF together, as Build does
			}
			n = min(n, len(rest))
			out = q.append(out, rest[:n])
			rest = rest[n:]
		}
		for _, l := range strings.Split(string(out), "\r\n") {
			if len(l) > 76 || strings.ContainsAny(l, "\r\n") {
				t.Fatalf("bad line %q in qp(%q)", l, in)
			}
		}
		got, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(out)))
		if err != nil || string(got) != canon(string(in)) {
			t.Fatalf("qp(%q) = %q decodes to %q, %v", in, out, got, err)
		}
	}
}

// TestQuotedPrintableWorstCase: long inputs that expand the most still fit
// the room the encoder reserves, and decode back.
func TestQuotedPrintableWorstCase(t *testing.T) {
	t.Parallel()
	for _, unit := range []string{"\xff", "a\xff", "ab\xff", "a\xff\xff", " \n", "\n", "=", "\t"} {
		in := []byte(strings.Repeat(unit, 100_000/len(unit)))
		var q qp
		out := q.append(make([]byte, 0, 1), in)
		got, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(out)))
		if err != nil || string(got) != canon(string(in)) {
			t.Errorf("%q x %d does not decode back: %v", unit, len(in)/len(unit), err)
		}
	}
}

func TestUnsafe8(t *testing.T) {
	t.Parallel()
	first := func(w []byte) int {
		for i, c := range w {
			if c < ' ' || c > '~' || c == '=' {
				return i
			}
		}
		return 8
	}
	check := func(w []byte) {
		m := unsafe8(binary.LittleEndian.Uint64(w))
		got := 8
		if m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		if want := first(w); got != want {
			t.Fatalf("unsafe8(%q): first at %d, want %d", w, got, want)
		}
	}
	for c := range 256 {
		for pos := range 8 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			check(w)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		w := make([]byte, 8)
		for i := range w {
			w[i] = byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				w[i] = byte(' ' + rng.IntN(95))
			}
		}
		check(w)
	}
}

// TestBuildAllocs: with reused buffers, render and build allocate nothing.
func TestBuildAllocs(t *testing.T) {
	s, p, h := benchTemplate()
	tp := mustCompile(t, s, p, h)
	r, snd := recipient(), sender()
	r.Tokens.OpenPixelURL = "https://t.example/o/abc?x=1&y=2"
	f := testForm(t, tp, snd)
	var b Buffer
	var dst []byte
	n := testing.AllocsPerRun(100, func() {
		tp.Render(&b, r, snd)
		dst = f.Build(dst[:0], &b, r, 12345)
	})
	if n != 0 {
		t.Errorf("%v allocations per mail", n)
	}
}

func BenchmarkRenderAndBuild(b *testing.B) {
	s, p, h := benchTemplate()
	f := testForm(b, mustCompile(b, s, p, h), sender())
	benchBuild(b, len(h), f.Build) // renders the subject and both parts
}

// benchBuild times build making the benchmark's mail (its HTML htmlLen
// bytes) for one recipient with an open pixel, a new delivery id each
// time, into reused buffers: mails/s and the mail's bytes.
func benchBuild(b *testing.B, htmlLen int, build func(dst []byte, buf *Buffer, r *mail.Recipient, id int64) []byte) {
	r := recipient()
	r.Tokens.OpenPixelURL = "https://t.example/o/abc?x=1&y=2"
	var buf Buffer
	var dst []byte
	b.SetBytes(int64(htmlLen))
	b.ReportAllocs()
	id := int64(0)
	for b.Loop() {
		id++
		dst = build(dst[:0], &buf, r, id)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mails/s")
	b.ReportMetric(float64(len(dst)), "mail-bytes")
}

// BenchmarkNewForm is the per-send cost Build's speed is bought with:
// the parts' literals encoded once.
func BenchmarkNewForm(b *testing.B) {
	s, p, h := benchTemplate()
	tp := mustCompile(b, s, p, h)
	snd := sender()
	b.SetBytes(int64(len(h)))
	b.ReportAllocs()
	for b.Loop() {
		NewForm(tp, snd, FormOptions{SendID: 1})
	}
}
