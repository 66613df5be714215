package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
)

func recipient() *mail.Recipient {
	return &mail.Recipient{
		ContactID: 7, Email: "ann@example.com",
		FirstName: "Ann", LastName: "Lee", AltEmail: "ann@alt.example",
		Country: "India", State: "Kerala", City: "Kochi",
		AddressLine1: "1 Main St", AddressLine2: "Flat 2", StateProvinceRegion: "South",
		PostalCode: "682001",
		Custom: map[string]string{
			"father_name": "Raj", "designation": "CTO", "age": "41",
			"company_name": "Acme & Co", "birth_date": "1984-02-03", "join_date": "2020-01-01T09:30",
		},
		Tokens: mail.Tokens{
			Unsubscribe:    "abc",
			UnsubscribeURL: "https://m.example/u/abc",
			PreferencesURL: "https://m.example/p/abc?x=1&y=2",
		},
	}
}

func sender() *mail.Sender {
	return &mail.Sender{
		FromName: "Shop", FromEmail: "shop@example.com", ReplyTo: "help@example.com",
		Address: "9 Market Rd", City: "Pune", State: "Maharashtra", Country: "India",
	}
}

func mustCompile(t testing.TB, subject, pre, h string) *Template {
	t.Helper()
	tp, err := Compile(subject, pre, h)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestDynamicNamesMatchMail(t *testing.T) {
	var got []string
	for f := fFirstName; f < fUnknown; f++ {
		got = append(got, names[f])
	}
	if strings.Join(got, ",") != strings.Join(mail.DynamicContent, ",") {
		t.Fatalf("names = %v, mail.DynamicContent = %v", got, mail.DynamicContent)
	}
}

// TestRenderNames renders every name in the subject (plain) and the body
// (HTML-escaped).
func TestRenderNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, plain, html string
	}{
		{"first_name", "Ann", "Ann"},
		{"last_name", "Lee", "Lee"},
		{"email", "ann@example.com", "ann@example.com"},
		{"alt_email", "ann@alt.example", "ann@alt.example"},
		{"country", "India", "India"},
		{"state", "Kerala", "Kerala"},
		{"city", "Kochi", "Kochi"},
		{"address_line1", "1 Main St", "1 Main St"},
		{"address_line2", "Flat 2", "Flat 2"},
		{"state_province_region", "South", "South"},
		{"postal_code", "682001", "682001"},
		{"full_name", "Ann Lee", "Ann Lee"},
		{"father_name", "Raj", "Raj"},
		{"designation", "CTO", "CTO"},
		{"age", "41", "41"},
		{"company_name", "Acme & Co", "Acme &amp; Co"},
		{"birth_date", "1984-02-03", "1984-02-03"},
		{"join_date", "2020-01-01T09:30", "2020-01-01T09:30"},
		{"sender_name", "Shop", "Shop"},
		{"sender_address", "9 Market Rd, Pune, Maharashtra, India", "9 Market Rd, Pune, Maharashtra, India"},
		{"unsubscribe_preferences", "https://m.example/p/abc?x=1&y=2", "https://m.example/p/abc?x=1&amp;y=2"},
		{"no_such_name", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := mustCompile(t, "[(("+tt.name+"))]", "", "<p>[(("+tt.name+"))]</p>")
			var b Buffer
			tp.Render(&b, recipient(), sender())
			if got, want := string(b.Subject), "["+tt.plain+"]"; got != want {
				t.Errorf("subject = %q, want %q", got, want)
			}
			if got, want := string(b.HTML), "<p>["+tt.html+"]</p>"; got != want {
				t.Errorf("html = %q, want %q", got, want)
			}
			if got, want := string(b.Text), "["+tt.plain+"]"; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
		})
	}
}

func TestRenderEscaping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		first, html, subject string
	}{
		{`<script>alert(1)</script>`, `&lt;script&gt;alert(1)&lt;/script&gt;`, `<script>alert(1)</script>`},
		{`"quoted" 'single'`, `&#34;quoted&#34; &#39;single&#39;`, `"quoted" 'single'`},
		{`Tom & Jerry &amp;`, `Tom &amp; Jerry &amp;amp;`, `Tom & Jerry &amp;`},
		{`x" onmouseover="alert(1)`, `x&#34; onmouseover=&#34;alert(1)`, `x" onmouseover="alert(1)`},
		{`Zoë Ωmega 日本 🙂`, `Zoë Ωmega 日本 🙂`, `Zoë Ωmega 日本 🙂`},
		{`((last_name))`, `((last_name))`, `((last_name))`}, // values are never re-parsed
	}
	for _, tt := range tests {
		t.Run(tt.first, func(t *testing.T) {
			tp := mustCompile(t, "((first_name))", "", `<a title="((first_name))">((first_name))</a>`)
			r := recipient()
			r.FirstName = tt.first
			var b Buffer
			tp.Render(&b, r, sender())
			if got, want := string(b.HTML), `<a title="`+tt.html+`">`+tt.html+`</a>`; got != want {
				t.Errorf("html = %q, want %q", got, want)
			}
			if got := string(b.Subject); got != tt.subject {
				t.Errorf("subject = %q, want %q", got, tt.subject)
			}
		})
	}
}

// TestRenderHeaderInjection: no field can put a line break or other
// control character into the subject or preheader, nor can the template.
func TestRenderHeaderInjection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value, want string
	}{
		{"x\r\nBcc: y@example.com", "xBcc: y@example.com"},
		{"x\nBcc: y", "xBcc: y"},
		{"x\rBcc: y", "xBcc: y"},
		{"a\u2028b\u2029c\u0085d", "abcd"},
		{"tab\there\x00nul\x7fdel\x1besc", "tabherenuldelesc"},
		{"bad\xffutf8", "badutf8"},
		{"Zoë\u00a0Ω", "Zoë\u00a0Ω"},
	}
	set := []func(*mail.Recipient, *mail.Sender, string){
		func(r *mail.Recipient, _ *mail.Sender, v string) { r.FirstName = v },
		func(r *mail.Recipient, _ *mail.Sender, v string) { r.Email = mail.Email(v) },
		func(r *mail.Recipient, _ *mail.Sender, v string) { r.Custom = map[string]string{"company_name": v} },
		func(_ *mail.Recipient, s *mail.Sender, v string) { s.FromName = v },
		func(r *mail.Recipient, _ *mail.Sender, v string) { r.Tokens.PreferencesURL = v },
	}
	names := []string{"first_name", "email", "company_name", "sender_name", "unsubscribe_preferences"}
	for _, tt := range tests {
		for i, name := range names {
			t.Run(name+"/"+tt.value, func(t *testing.T) {
				tp := mustCompile(t, "Hi (("+name+"))!", "P (("+name+"))", "<body>x</body>")
				r, s := recipient(), sender()
				set[i](r, s, tt.value)
				var b Buffer
				tp.Render(&b, r, s)
				if got, want := string(b.Subject), "Hi "+tt.want+"!"; got != want {
					t.Errorf("subject = %q, want %q", got, want)
				}
				if got, want := string(b.Preheader), "P "+tt.want; got != want {
					t.Errorf("preheader = %q, want %q", got, want)
				}
				if strings.ContainsAny(string(b.HTML), "\r\n\u2028") {
					t.Errorf("html = %q holds a line break", b.HTML)
				}
			})
		}
	}
	t.Run("template", func(t *testing.T) {
		tp := mustCompile(t, "Sale\r\nBcc: x@example.com\u2028", "a\nb", "")
		var b Buffer
		tp.Render(&b, nil, nil)
		if got := string(b.Subject); got != "SaleBcc: x@example.com" {
			t.Errorf("subject = %q", got)
		}
		if got := string(b.Preheader); got != "ab" {
			t.Errorf("preheader = %q", got)
		}
	})
}

func TestRenderMissing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    *mail.Recipient
		s    *mail.Sender
		want string
	}{
		{"nil recipient and sender", nil, nil, "[||||||]"},
		{"empty", &mail.Recipient{}, &mail.Sender{}, "[||||||]"},
		{"first only", &mail.Recipient{FirstName: "Ann"}, nil, "[Ann|Ann|||||]"},
		{"last only", &mail.Recipient{LastName: "Lee"}, nil, "[|Lee|||||]"},
		{"blank first", &mail.Recipient{FirstName: " ", LastName: "Lee"}, nil, "[ |Lee|||||]"},
		{"custom absent", &mail.Recipient{Custom: map[string]string{"other": "x"}}, nil, "[||||||]"},
		{"custom other case", &mail.Recipient{Custom: map[string]string{"Age": "40"}}, nil, "[|||40|||]"},
		{"sender parts", nil, &mail.Sender{Address: "9 Rd", Country: "India"}, "[||||9 Rd, India||]"},
		{"sender city only", nil, &mail.Sender{City: "Pune"}, "[||||Pune||]"},
		{"no preferences url", &mail.Recipient{Tokens: mail.Tokens{UnsubscribeURL: "u"}}, nil, "[||||||]"},
	}
	const tpl = "[((first_name))|((full_name))|((designation))|((age))|((sender_address))|((unsubscribe_preferences))|((nope))]"
	tp := mustCompile(t, tpl, "", tpl)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Buffer
			tp.Render(&b, tt.r, tt.s)
			if got := string(b.Subject); got != tt.want {
				t.Errorf("subject = %q, want %q", got, tt.want)
			}
			if got := string(b.HTML); got != tt.want {
				t.Errorf("html = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCompilePlaceholders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tpl, want string
	}{
		{"((first_name))", "Ann"},
		{"(( First_Name ))", "Ann"},
		{"((FIRST_NAME))", "Ann"},
		{"((\tfull_name\n))", "Ann Lee"},
		{"((first_name)) ((last_name))", "Ann Lee"},
		{"((first_name))((last_name))", "AnnLee"},
		{"(((first_name)))", "(Ann)"},
		{"((unknown))!", "!"},
		{"((first name))", "((first name))"},
		{"((a+b))", "((a+b))"},
		{"(())", "(())"},
		{"((first_name", "((first_name"},
		{"((first_name)", "((first_name)"},
		{"x ((", "x (("},
		{"((", "(("},
		{"))((", "))(("},
		{"(( ((first_name))", "(( Ann"},
		{"((" + strings.Repeat("a", 65) + "))", "((" + strings.Repeat("a", 65) + "))"},
		{"((" + strings.Repeat("a", 64) + "))", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.tpl, func(t *testing.T) {
			tp := mustCompile(t, tt.tpl, "", "")
			var b Buffer
			tp.Render(&b, recipient(), sender())
			if got := string(b.Subject); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	if _, err := Compile("a\xff", "", ""); err == nil {
		t.Error("non-UTF-8 subject compiled")
	}
	if _, err := Compile("", "", strings.Repeat("x", MaxSize+1)); err == nil {
		t.Error("oversized template compiled")
	}
}

func TestPreheader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, pre, html, want string
	}{
		{"after body", "Hi ((first_name))", `<html><body class="x">B</body></html>`,
			`<html><body class="x">` + preheaderOpen + `Hi Ann` + preheaderClose + `B</body></html>`},
		{"no body tag", "Hi", `<p>B</p>`, preheaderOpen + `Hi` + preheaderClose + `<p>B</p>`},
		{"body case and quotes", "Hi", `<BODY style="a>b">B`, `<BODY style="a>b">` + preheaderOpen + `Hi` + preheaderClose + `B`},
		{"body in comment", "Hi", `<!-- <body> --><body>B`, `<!-- <body> --><body>` + preheaderOpen + `Hi` + preheaderClose + `B`},
		{"not bodyx", "Hi", `<bodyx>B`, preheaderOpen + `Hi` + preheaderClose + `<bodyx>B`},
		{"escaped", `<b>"50% & more"</b> ((company_name))`, `<body>B`,
			`<body>` + preheaderOpen + `&lt;b&gt;&#34;50% &amp; more&#34;&lt;/b&gt; Acme &amp; Co` + preheaderClose + `B`},
		{"empty", "  ", `<body>B`, `<body>B`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := mustCompile(t, "s", tt.pre, tt.html)
			var b Buffer
			tp.Render(&b, recipient(), sender())
			if got := string(b.HTML); got != tt.want {
				t.Errorf("html =\n%q\nwant\n%q", got, tt.want)
			}
			if strings.Contains(string(b.Text), "Hi") {
				t.Errorf("text %q holds the preheader", b.Text)
			}
		})
	}
	if !strings.Contains(preheaderOpen, "display:none") || !strings.Contains(preheaderOpen, "max-height:0") ||
		!strings.Contains(preheaderOpen, "overflow:hidden") {
		t.Errorf("preheader div %q is not hidden", preheaderOpen)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, html, want string
	}{
		{"plain", "Hello   world", "Hello world"},
		{"entities", "Fish &amp; chips &lt;3 &quot;ok&quot; &#39;x&#39; &eacute;&#x263A;&nbsp;end", `Fish & chips <3 "ok" 'x' é☺ end`},
		{"link", `See <a href="https://x.example/a?b=1&amp;c=2">our sale</a> now`, "See our sale (https://x.example/a?b=1&c=2) now"},
		{"link same as text", `<a href="https://x.example">https://x.example</a>`, "https://x.example"},
		{"link no text", `<a href="https://x.example"><img src="p.png"></a>`, "https://x.example"},
		{"link image alt", `<a href='https://x.example'><img alt="Logo" src="p.png"></a>`, "Logo (https://x.example)"},
		{"mailto", `<a href="mailto:a@example.com">a@example.com</a>`, "a@example.com"},
		{"anchor and js", `<a href="#top">Top</a> <a href="javascript:void(0)">Go</a>`, "Top Go"},
		{"link placeholder", `<a href="((unsubscribe_preferences))">Preferences</a>`, "Preferences (((unsubscribe_preferences)))"},
		{"scripts styles head dropped", `<html><head><title>T</title><style>p{color:red}</style></head><body><script>var a = "<p>x</p>";</script><p>Body</p><STYLE>.x{}</STYLE></body></html>`, "Body"},
		{"comments dropped", `a<!-- hidden -->b<!--[if mso]><p>mso</p><![endif]-->c`, "abc"},
		{"paragraphs", `<p>One</p><p>Two</p>`, "One\n\nTwo"},
		{"blank lines collapsed", `<p>One</p><p></p><p></p><div><p>Two</p></div>`, "One\n\nTwo"},
		{"br", `a<br>b<br/><br />c<br><br><br><br>d`, "a\nb\n\nc\n\nd"},
		{"lists", `<ul><li>a</li><li>b</li></ul>after`, "- a\n- b\n\nafter"},
		{"table cells", `<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>`, "a b\nc"},
		{"inline tags", `<b>bo</b><i>ld</i> <span>x</span>`, "bold x"},
		{"stray lt", `1 < 2 and 3<4`, "1 < 2 and 3<4"},
		{"whitespace lines", "<div>\n  a\n  b  \n</div>\n\n<div> c </div>", "a b\nc"},
		{"zero width", "Pre\u200c&zwnj;&#8203;view", "Preview"},
		{"doctype", `<!DOCTYPE html><p>x</p>`, "x"},
		{"placeholder kept", `<p>Hi ((first_name)),</p>`, "Hi ((first_name)),"},
		{"unclosed comment", `a<!-- b`, "a"},
		{"unclosed script", `a<script>b`, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.html); got != tt.want {
				t.Errorf("Text(%q) =\n%q\nwant\n%q", tt.html, got, tt.want)
			}
		})
	}
}

func TestRenderTextPart(t *testing.T) {
	t.Parallel()
	tp := mustCompile(t, "s", "", `<p>Hi <b>((first_name))</b>,</p><p><a href="((unsubscribe_preferences))">Manage</a></p>`)
	r := recipient()
	r.FirstName = "<Ann & \"Bo\">"
	var b Buffer
	tp.Render(&b, r, sender())
	want := "Hi <Ann & \"Bo\">,\n\nManage (https://m.example/p/abc?x=1&y=2)"
	if got := string(b.Text); got != want {
		t.Errorf("text =\n%q\nwant\n%q", got, want)
	}
}

// TestRenderReuse: one buffer across recipients holds only the last mail.
func TestRenderReuse(t *testing.T) {
	t.Parallel()
	tp := mustCompile(t, "((first_name))", "((last_name))", "<p>((full_name))</p>")
	var b Buffer
	tp.Render(&b, &mail.Recipient{FirstName: "Alexandria", LastName: "Longname"}, nil)
	tp.Render(&b, &mail.Recipient{FirstName: "Al"}, nil)
	if string(b.Subject) != "Al" || string(b.Preheader) != "" || !strings.Contains(string(b.HTML), "<p>Al</p>") || string(b.Text) != "Al" {
		t.Errorf("reused buffer = %q %q %q %q", b.Subject, b.Preheader, b.HTML, b.Text)
	}
}

func TestLargeTemplate(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	sb.WriteString("<html><body>")
	for sb.Len() < 1<<20 {
		fmt.Fprintf(&sb, "<p>Dear ((first_name)), item %d &amp; <a href=\"https://x.example/%d\">more</a></p>\n", sb.Len(), sb.Len())
	}
	sb.WriteString("</body></html>")
	tp := mustCompile(t, "Hi ((first_name))", "pre", sb.String())
	var b Buffer
	tp.Render(&b, recipient(), sender())
	if len(b.HTML) < 900_000 || strings.Contains(string(b.HTML), "((first_name))") {
		t.Fatalf("html: %d bytes, placeholders left: %v", len(b.HTML), strings.Contains(string(b.HTML), "((first_name))"))
	}
	if !strings.HasPrefix(string(b.Text), "Dear Ann, item 12 & more (https://x.example/12)\n\nDear Ann") {
		t.Fatalf("text starts %q", string(b.Text)[:100])
	}
	if strings.Contains(string(b.Text), "((") {
		t.Fatal("text holds a placeholder")
	}
}

// BenchTemplate is a ~20 KB marketing mail with 10 placeholders.
func benchTemplate() (subject, preheader, html string) {
	var sb strings.Builder
	sb.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>News</title>` +
		`<style>body{font-family:Arial,sans-serif}td{padding:8px}.btn{background:#06c;color:#fff}</style></head>` +
		`<body style="margin:0;padding:0"><table width="100%" cellpadding="0" cellspacing="0"><tr><td>` +
		`<h1>Hello ((first_name)) ((last_name)),</h1><p>Thanks for being with ((company_name)) since ((join_date)).</p>`)
	for i := 0; sb.Len() < 19000; i++ {
		fmt.Fprintf(&sb, `<tr><td class="item"><h2>Product %d</h2><p>Our finest product &amp; more, `+
			`now at a better price. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod `+
			`tempor incididunt ut labore.</p><a class="btn" href="https://shop.example/p/%d?utm_source=mail">Buy now</a></td></tr>`, i, i)
	}
	sb.WriteString(`<tr><td><p>Sent to ((email)) in ((city)), ((country)).</p>` +
		`<p>((sender_name)) &middot; ((sender_address))</p>` +
		`<p><a href="((unsubscribe_preferences))">Manage preferences</a></p></td></tr></table></body></html>`)
	return "((first_name)), your offers", "Deals picked for you", sb.String()
}

func BenchmarkCompile(b *testing.B) {
	s, p, h := benchTemplate()
	b.SetBytes(int64(len(h)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(s, p, h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	s, p, h := benchTemplate()
	tp := mustCompile(b, s, p, h)
	r, snd := recipient(), sender()
	var buf Buffer
	b.SetBytes(int64(len(h)))
	b.ReportAllocs()
	for b.Loop() {
		tp.Render(&buf, r, snd)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mails/s")
}
