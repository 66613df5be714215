package render

import (
	"html"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/mail"
)

// refPlaceholder is docs/render.md's placeholder as a regular expression:
// "((", optional white space, a name of letters, digits and underscores
// (at most 64), optional white space, "))". Leftmost-first matching finds
// what Compile's scan finds.
var refPlaceholder = regexp.MustCompile(`\(\([ \t\n\r\f]*([A-Za-z0-9_]{1,64})[ \t\n\r\f]*\)\)`)

// refClean is the documented cleaning, written apart from put: bytes that
// are not UTF-8, C0 and C1 control characters, DEL, U+2028 and U+2029 go.
func refClean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}

// refValues are the 21 names' raw values for r and s, as docs/render.md
// lists them; a name not here renders as nothing.
func refValues(r *mail.Recipient, s *mail.Sender) map[string]string {
	joined := func(sep string, parts ...string) string {
		var keep []string
		for _, p := range parts {
			if p = strings.TrimSpace(p); p != "" {
				keep = append(keep, p)
			}
		}
		return strings.Join(keep, sep)
	}
	v := map[string]string{
		"first_name": r.FirstName, "last_name": r.LastName, "email": string(r.Email), "alt_email": r.AltEmail,
		"country": r.Country, "state": r.State, "city": r.City, "address_line1": r.AddressLine1,
		"address_line2": r.AddressLine2, "state_province_region": r.StateProvinceRegion, "postal_code": r.PostalCode,
		"full_name":               joined(" ", r.FirstName, r.LastName),
		"sender_name":             s.FromName,
		"sender_address":          joined(", ", s.Address, s.City, s.State, s.Country),
		"unsubscribe_preferences": r.Tokens.PreferencesURL,
	}
	for _, n := range []string{"father_name", "designation", "age", "company_name", "birth_date", "join_date"} {
		v[n] = r.CustomValue(n)
	}
	return v
}

// refRender fills src's placeholders from values: literals cleaned when
// cleanLit (subject, preheader), escaped too when escLit (the preheader in
// the HTML); values always cleaned, and HTML-escaped when htmlMode.
func refRender(src string, values map[string]string, htmlMode, cleanLit, escLit bool) string {
	var b strings.Builder
	lit := func(s string) {
		if cleanLit || escLit {
			s = refClean(s)
		}
		if escLit {
			s = html.EscapeString(s)
		}
		b.WriteString(s)
	}
	at := 0
	for _, m := range refPlaceholder.FindAllStringSubmatchIndex(src, -1) {
		lit(src[at:m[0]])
		v := refClean(values[strings.ToLower(src[m[2]:m[3]])])
		if htmlMode {
			v = html.EscapeString(v)
		}
		b.WriteString(v)
		at = m[1]
	}
	lit(src[at:])
	return b.String()
}

// FuzzRender holds Compile and Render to docs/render.md: every part is
// what a separate implementation of the documented rules makes (names in
// any case, unknown names render as nothing, values cleaned, escaped in
// HTML, never parsed again; subject and preheader literals cleaned too;
// the preheader hidden after <body…>); Render never panics; a reused
// Buffer gives what a new one does; the derived text part keeps its
// documented shape.
func FuzzRender(f *testing.F) {
	f.Add("Hi ((first_name))", "Deals for (( First_Name ))", "<html><body class=\"a\"><p>((FULL_NAME)) ((nope))</p><a href=\"((unsubscribe_preferences))\">x</a></body></html>",
		"Ann", "Lee", "Acme & Co", "https://m.example/u/a?b=1&c=2", "9 Rd", "<Shop>")
	f.Add("(((first_name)))((last_name))(())((a+b))((first_name", "", "((email))((alt_email))((country))((state))((city))((address_line1))((address_line2))((state_province_region))((postal_code))",
		"\r\nBcc: x", "((last_name))", "\u2028\x00\x85", "", "", "")
	f.Add("\r\n\t((company_name))\u2029", "  ", "<!-- <body> --><BODY\n x='>'>((father_name))((designation))((age))((birth_date))((join_date))</body>",
		" ", "\xff\xfe", "'\"<>&", "javascript:x", "", "")
	f.Add("", "pre\x7f((sender_name))", "no body ((sender_address))", "", "", "", "", " , ", "\x1b[31m")
	f.Fuzz(func(t *testing.T, subject, preheader, src, first, last, custom, url, addr, from string) {
		tp, err := Compile(subject, preheader, src)
		if valid := utf8.ValidString(subject) && utf8.ValidString(preheader) && utf8.ValidString(src); valid != (err == nil) {
			t.Fatalf("Compile: %v for UTF-8 %v", err, valid)
		}
		if err != nil {
			return
		}
		r := &mail.Recipient{
			Email: mail.Email(first + "@x.example"), FirstName: first, LastName: last, AltEmail: last,
			Country: custom, State: last, City: first, AddressLine1: addr, AddressLine2: url,
			StateProvinceRegion: from, PostalCode: custom,
			Custom: map[string]string{"company_name": custom, "AGE": first, "father_name": last, "join_date": url},
			Tokens: mail.Tokens{PreferencesURL: url},
		}
		s := &mail.Sender{FromName: from, Address: addr, City: first, State: " ", Country: last}
		values := refValues(r, s)

		var b Buffer
		// A Buffer used for another recipient first must not matter.
		tp.Render(&b, &mail.Recipient{FirstName: strings.Repeat("z", 300), Custom: map[string]string{"age": src}}, nil)
		tp.Render(&b, r, s)
		var fresh Buffer
		tp.Render(&fresh, r, s)
		if string(b.Subject) != string(fresh.Subject) || string(b.Preheader) != string(fresh.Preheader) ||
			string(b.HTML) != string(fresh.HTML) || string(b.Text) != string(fresh.Text) {
			t.Fatal("a reused Buffer renders differently")
		}

		if got, want := string(b.Subject), refRender(subject, values, false, true, false); got != want {
			t.Fatalf("subject %q, want %q", got, want)
		}
		if got, want := string(b.Preheader), refRender(preheader, values, false, true, false); got != want {
			t.Fatalf("preheader %q, want %q", got, want)
		}
		for _, p := range [][]byte{b.Subject, b.Preheader} {
			if strings.ContainsFunc(string(p), func(r rune) bool {
				return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
			}) || !utf8.Valid(p) {
				t.Fatalf("header text %q holds a control character", p)
			}
		}

		want := refRender(src, values, true, false, false)
		if strings.TrimSpace(preheader) != "" {
			at := bodyStart(src)
			if at != 0 && !strings.HasSuffix(src[:at], ">") && at != len(src) {
				t.Fatalf("body start %d of %q", at, src)
			}
			want = refRender(src[:at], values, true, false, false) + preheaderOpen +
				refRender(preheader, values, true, false, true) + preheaderClose +
				refRender(src[at:], values, true, false, false)
		}
		if got := string(b.HTML); got != want {
			t.Fatalf("html\n%q\nwant\n%q", got, want)
		}

		text := Text(src)
		checkText(t, text)
		if got, want := string(b.Text), refRender(text, values, false, false, false); got != want {
			t.Fatalf("text\n%q\nwant\n%q", got, want)
		}
	})
}

// checkText holds Text's output to its documented shape: valid UTF-8 when
// the input is, no control character but LF, no white space at either
// end, no space before or after a line end, no double space, at most one
// blank line in a row.
func checkText(t *testing.T, s string) {
	t.Helper()
	switch {
	case !utf8.ValidString(s):
		t.Fatalf("text %q is not UTF-8", s)
	case strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && unicode.IsControl(r) }):
		t.Fatalf("text %q holds a control character", s)
	case s != strings.TrimSpace(s):
		t.Fatalf("text %q has white space at an end", s)
	case strings.Contains(s, " \n") || strings.Contains(s, "\n ") || strings.Contains(s, "  "):
		t.Fatalf("text %q holds stray spaces", s)
	case strings.Contains(s, "\n\n\n"):
		t.Fatalf("text %q holds two blank lines", s)
	}
}
