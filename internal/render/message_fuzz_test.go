package render

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/mail"
)

// refAddr is an address or domain as docs/render.md says a header gets
// it: control characters, spaces, non-ASCII and , ; < > ( ) " \ removed.
// refMailbox is an address as docs/render.md says From, To and Reply-To
// carry it: as it goes out (mail.Email.Wire), then without what
// refAddr drops, but for printable characters past ASCII (RFC 6532).
func refMailbox(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f || strings.ContainsRune(`,;<>()"\`, r) || unicode.IsControl(r) || unicode.IsSpace(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(mail.Email(s).Wire(), ""))
}

func refAddr(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`,;<>()"\`, r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}

// refURL is a URL as docs/render.md says headers and the pixel carry it:
// control characters, space, " < > \ and non-ASCII bytes percent-encoded,
// & as &amp; in HTML.
func refURL(u string, inHTML bool) string {
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		switch c := u[i]; {
		case c <= ' ' || c >= 0x7f || strings.IndexByte(`"<>\`, c) >= 0:
			b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c)>>4, 16)+strconv.FormatUint(uint64(c)&15, 16)))
		case inHTML && c == '&':
			b.WriteString("&amp;")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// bounded cuts s to n bytes: addresses, domains and the mailto address are
// checked at the edge (254 characters at most), not by Build.
func bounded(s string, n int) string { return s[:min(len(s), n)] }

// FuzzMessage holds NewForm and Build to docs/render.md whatever the
// subject, names, addresses, preheader, field values and links hold: the
// message is ASCII with CRLF line ends and no bare CR or LF; its header is
// exactly the expected fields, once each (no value starts another), the
// Subject and From lines within 78 characters (but for a From address too
// long to share a line) and every line within 998;
// net/mail reads it and gives back the subject, the From name and address,
// To, Reply-To, Message-ID and List-Unsubscribe; the body is one
// multipart/alternative with exactly two parts, each with exactly its
// Content-Type and Content-Transfer-Encoding, delimited only where the
// boundary is meant to be; each part decodes (quoted-printable) to what
// Render made, the HTML with the pixel before the last </body.
func FuzzMessage(f *testing.F) {
	f.Add("Hello ((first_name)), your offers", "Deals", "<html><body>\n<p>Hi ((first_name)) =^.^= caf\u00e9 </p>\n</body></html>",
		"Shop", "shop@example.com", "help@example.com", "ann@example.com", "Ann", "Acme & Co",
		"https://m.example/u/abc", "abc", "https://t.example/o/1?a=1&b=2", "unsub@mail.example", "mail.example", int64(42), int64(1001))
	f.Add("Hi ((first_name))", "", "<body>x</body>", "Shop\r\nBcc: evil@x.example", "shop@example.com\r\nBcc: x", "help@example.com\r\nBcc: x",
		"ann@example.com\r\nBcc: evil@x.example", "Ann\r\nBcc: evil@x.example\nX-A: 1", "\u2028x\u0085",
		"https://u.example/1>\r\nBcc: evil@x.example", "tok\r\nBcc: x", "https://t.example/1\" onerror=\"alert(1)\r\n", "u@m.example>\r\nBcc: x", "m.example\r\nBcc: x", int64(1), int64(5))
	f.Add(strings.Repeat("Ünïcödé wörds ", 20), "  ", "((first_name))\r\n((last_name))\n((company_name)) \n</body>tail",
		`Quote "me" \ please`, "a@b.example", "", "x@y.example", strings.Repeat("x", 80), "=?utf-8?q?x?=",
		"", "", "", "", "", int64(-1), int64(0))
	f.Add("Hi", "", "<body>x</body>", "N", "ü@bücher.example", "h@bücher.example", "ü-h@example.com", "", "",
		"", "", "", "", "", int64(3), int64(4))
	f.Add("Hi", "", "<body>x</body>", "Ünï", "ü\u2028\u00a0\x85\xff@bücher.example\r\nBcc: x", "h@BÜCHER.example", "a\u3000b@\u00e9.x", "", "",
		"", "", "", "", "", int64(3), int64(4))
	f.Add("  leading and trailing  ", "=?x?=", strings.Repeat("a", 74)+"((first_name))"+strings.Repeat("b", 73)+" ((company_name)) </BODY>",
		strings.Repeat("Ωμέγα ", 30), "", "", "", " = ", "\u00e9\u00e9", "https://u.example/"+strings.Repeat("\u00e9", 300), "tk-1_Z",
		"https://t.example/"+strings.Repeat("a", 901), "none", "", int64(7), int64(9))
	f.Fuzz(func(t *testing.T, subject, preheader, src, fromName, fromEmail, replyTo, to, first, custom,
		unsubURL, token, pixelURL, mailto, domain string, sendID, deliveryID int64) {
		tp, err := Compile(subject, preheader, src)
		if err != nil {
			return
		}
		fromEmail, replyTo, to = bounded(fromEmail, 254), bounded(replyTo, 254), bounded(to, 254)
		mailto, domain = bounded(mailto, 254), bounded(domain, 253)
		s := &mail.Sender{FromName: fromName, FromEmail: mail.Email(fromEmail), ReplyTo: mail.Email(replyTo)}
		r := &mail.Recipient{Email: mail.Email(to), FirstName: first, LastName: custom,
			Custom: map[string]string{"company_name": custom},
			Tokens: mail.Tokens{Unsubscribe: token, UnsubscribeURL: unsubURL, PreferencesURL: unsubURL, OpenPixelURL: pixelURL}}
		now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("", -9000))
		form := NewForm(tp, s, FormOptions{Domain: domain, SendID: sendID, Signer: testSigner, UnsubscribeMailto: mailto, Now: func() time.Time { return now }})
		var want, scratch Buffer
		tp.Render(&want, r, s)
		data := form.Build(nil, &scratch, r, deliveryID)
		// Only the Message-ID's random part differs from one build to the next.
		if again := form.Build(data[len(data):], &scratch, r, deliveryID); !bytes.Equal(messageIDMasked(again), messageIDMasked(data)) {
			t.Fatal("a reused Buffer builds another mail")
		}

		// Lines: ASCII, CRLF, no bare CR or LF, lengths.
		if !bytes.HasSuffix(data, []byte("\r\n")) {
			t.Fatal("message does not end in CRLF")
		}
		head, body, ok := bytes.Cut(data, []byte("\r\n\r\n"))
		if !ok {
			t.Fatal("no blank line after the header")
		}
		// Only the address lines may hold UTF-8 (RFC 6532): printable.
		inHead := true
		for i, l := range bytes.Split(data[:len(data)-2], []byte("\r\n")) {
			if bytes.ContainsAny(l, "\r\n") {
				t.Fatalf("line %d holds a bare CR or LF: %q", i, l)
			}
			inHead = inHead && len(l) > 0
			s := string(l)
			addr := inHead && (strings.HasPrefix(s, "From: ") || strings.HasPrefix(s, "To: ") || strings.HasPrefix(s, "Reply-To: ") || strings.HasPrefix(s, " <"))
			if addr && !utf8.Valid(l) {
				t.Fatalf("line %q is not UTF-8", l)
			}
			if i := bytes.IndexFunc(l, func(r rune) bool {
				return (r >= 0x7f && !addr) || r < ' ' && r != '\t' || unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
			}); i >= 0 {
				t.Fatalf("line %q holds byte %#x", l, l[i])
			}
		}

		// The header: exactly the expected fields, once each.
		wantFields := []string{"From", "To", "Subject", "Date", "Message-ID", "MIME-Version", "Content-Type"}
		if refMailbox(replyTo) != "" {
			wantFields = append(wantFields, "Reply-To")
		}
		wantURL := unsubURL != "" && len(refURL(unsubURL, false)) <= maxURL
		wantMailto := refAddr(mailto) != "" && token != "" && len(token) <= mail.MaxTokenLen &&
			strings.Trim(token, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
		if wantURL || wantMailto {
			wantFields = append(wantFields, "List-Unsubscribe")
		}
		if wantURL {
			wantFields = append(wantFields, "List-Unsubscribe-Post")
		}
		var fields []string
		var field string
		for _, l := range strings.Split(string(head), "\r\n") {
			if strings.HasPrefix(l, " ") {
				if field == "" {
					t.Fatal("the header starts with a continuation line")
				}
				if field != "Subject" && field != "From" && field != "List-Unsubscribe" && field != "Content-Type" {
					t.Fatalf("%s is folded: %q", field, head)
				}
			} else {
				name, _, ok := strings.Cut(l, ":")
				if !ok || name == "" || strings.ContainsAny(name, " \t") {
					t.Fatalf("header line %q is no field", l)
				}
				field = name
				fields = append(fields, name)
			}
			// An address cannot be folded: a From line over 78 holds it alone.
			long := field == "Subject" || field == "From" && l != " <"+refMailbox(fromEmail)+">" && l != "From: <"+refMailbox(fromEmail)+">"
			if max := 998; long && len(l) > 78 || len(l) > max {
				t.Fatalf("%s line of %d characters: %q", field, len(l), l)
			}
		}
		slices.Sort(fields)
		slices.Sort(wantFields)
		if !slices.Equal(fields, wantFields) {
			t.Fatalf("header fields %q, want %q:\n%s", fields, wantFields, head)
		}

		// What net/mail reads back.
		m, err := netmail.ReadMessage(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("ReadMessage: %v\n%s", err, data)
		}
		get := func(k string) string {
			if v := m.Header[k]; len(v) != 1 {
				t.Fatalf("%s: %q", k, v)
			}
			return m.Header.Get(k)
		}
		var dec mime.WordDecoder
		if got, err := dec.DecodeHeader(get("Subject")); err != nil || got != string(want.Subject) {
			t.Fatalf("Subject %q decodes to %q, %v; want %q", get("Subject"), got, err, want.Subject)
		}
		if string(scratch.Subject) != string(want.Subject) {
			t.Fatalf("Build's subject %q, Render's %q", scratch.Subject, want.Subject)
		}
		from := refMailbox(fromEmail)
		if _, err := netmail.ParseAddress("<" + from + ">"); err == nil {
			a, err := netmail.ParseAddress(get("From"))
			if name := strings.TrimSpace(refClean(fromName)); err != nil || a.Name != name || a.Address != from {
				t.Fatalf("From %q reads as %+v, %v; want %q <%s>", get("From"), a, err, name, from)
			}
		}
		if got := get("To"); got != refMailbox(to) {
			t.Fatalf("To %q, want %q", got, refMailbox(to))
		}
		if rt := refMailbox(replyTo); rt != "" && get("Reply-To") != rt {
			t.Fatalf("Reply-To %q, want %q", get("Reply-To"), rt)
		}
		msgDomain := refAddr(domain)
		if msgDomain == "" {
			if ascii := refAddr(mail.Email(fromEmail).Wire()); strings.LastIndexByte(ascii, '@') >= 0 {
				msgDomain = ascii[strings.LastIndexByte(ascii, '@')+1:]
			}
		}
		if msgDomain == "" {
			msgDomain = "localhost"
		}
		if got := get("Message-Id"); !strings.HasSuffix(got, "@"+msgDomain+">") {
			t.Fatalf("Message-ID %q, want one at %q", got, msgDomain)
		} else if send, id, ok := testSigner.OpenMessageID(got); sendID > 0 && deliveryID > 0 && (!ok || send != sendID || id != deliveryID) {
			t.Fatalf("Message-ID %q opens to %d, %d, %v; want %d, %d", got, send, id, ok, sendID, deliveryID)
		}
		if d, err := m.Header.Date(); err != nil || !d.Equal(now) {
			t.Fatalf("Date %q: %v", get("Date"), err)
		}
		var list []string
		if wantURL {
			list = append(list, "<"+refURL(unsubURL, false)+">")
		}
		if wantMailto {
			list = append(list, "<mailto:"+refAddr(mailto)+"?subject=unsubscribe-"+token+">")
		}
		if got := m.Header.Get("List-Unsubscribe"); got != strings.Join(list, ", ") {
			t.Fatalf("List-Unsubscribe %q, want %q", got, strings.Join(list, ", "))
		}
		if wantURL && get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
			t.Fatalf("List-Unsubscribe-Post %q", get("List-Unsubscribe-Post"))
		}
		if get("Mime-Version") != "1.0" {
			t.Fatalf("MIME-Version %q", get("Mime-Version"))
		}

		// The body: one multipart/alternative, two parts, nothing else.
		mt, params, err := mime.ParseMediaType(get("Content-Type"))
		boundary := params["boundary"]
		if err != nil || mt != "multipart/alternative" || len(params) != 1 || !strings.HasPrefix(boundary, "=_") {
			t.Fatalf("Content-Type %q: %v", get("Content-Type"), err)
		}
		var delims []string
		for _, l := range strings.Split(string(body), "\r\n") {
			if strings.HasPrefix(l, "--"+boundary) {
				delims = append(delims, l)
			}
		}
		if want := []string{"--" + boundary, "--" + boundary, "--" + boundary + "--"}; !slices.Equal(delims, want) ||
			!bytes.HasSuffix(body, []byte("\r\n--"+boundary+"--\r\n")) {
			t.Fatalf("delimiter lines %q, want %q at the end", delims, want)
		}
		mr := multipart.NewReader(m.Body, boundary)
		types := []string{"text/plain; charset=utf-8", "text/html; charset=utf-8"}
		px := pixelURL
		if len(refURL(px, false)) > maxURL {
			px = ""
		}
		wantHTML := string(want.HTML)
		if px != "" {
			at := strings.LastIndex(strings.ToLower(wantHTML), "</body")
			if at < 0 {
				at = len(wantHTML)
			}
			wantHTML = wantHTML[:at] + `<img src="` + refURL(px, true) + `" width="1" height="1" alt="" style="display:block;border:0">` + wantHTML[at:]
		}
		// A placeholder right after a CR in the template may cut the CR from
		// its LF: that line end decodes as two (docs/render.md).
		crCut := false
		for _, m := range refPlaceholder.FindAllStringIndex(src, -1) {
			crCut = crCut || m[0] > 0 && src[m[0]-1] == '\r'
		}
		for i, w := range []string{string(want.Text), wantHTML} {
			p, err := mr.NextRawPart()
			if err != nil {
				t.Fatalf("part %d: %v", i, err)
			}
			if len(p.Header) != 2 || p.Header.Get("Content-Type") != types[i] ||
				p.Header.Get("Content-Transfer-Encoding") != "quoted-printable" {
				t.Fatalf("part %d header %q", i, p.Header)
			}
			got, err := io.ReadAll(quotedprintable.NewReader(p))
			if err != nil {
				t.Fatalf("part %d: %v", i, err)
			}
			if !crCut && string(got) != canon(w) {
				t.Fatalf("part %d decodes to\n%q\nwant\n%q", i, got, canon(w))
			}
		}
		if _, err := mr.NextRawPart(); err != io.EOF {
			t.Fatalf("a third part: %v", err)
		}
	})
}

// messageIDMasked is a copy of a built mail with its Message-ID's random
// part (the 13 characters before the '@') blanked.
func messageIDMasked(data []byte) []byte {
	out := bytes.Clone(data)
	i := bytes.Index(out, []byte("\r\nMessage-ID: <"))
	if i < 0 {
		return out
	}
	if at := bytes.IndexByte(out[i:], '@'); at > 13 {
		copy(out[i+at-13:i+at], strings.Repeat("_", 13))
	}
	return out
}
