package render

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/racetest"
)

// worstClicks makes tracked addresses of the longest kind WorstSize
// allows: {base}/t/c/ and MaxClickTokenLen bytes, all '&' (five bytes each
// in HTML).
type worstClicks struct{ base string }

func (c worstClicks) ClickPrefix() string { return c.base + mail.ClickPath }

func (c worstClicks) AppendClickToken(dst []byte, _ int64, _ int) []byte {
	return append(dst, strings.Repeat("&", mail.MaxClickTokenLen)...)
}

// worstRecipients are recipients whose every value is as long as the
// limits allow, of the characters that cost most: four-byte characters
// (twelve bytes quoted-printable), '"' (&#34; in HTML), '=' (=3D).
func worstRecipients(base string) []*mail.Recipient {
	var out []*mail.Recipient
	for _, c := range []string{"𝄞", `"`, "=", "é"} {
		line := strings.Repeat(c, mail.MaxLine)
		url := base + mail.UnsubscribePath + strings.Repeat("&", mail.MaxTokenLen)
		r := &mail.Recipient{
			Email:     mail.Email(strings.Repeat("&", 254-len("@x.example")) + "@x.example"),
			FirstName: line, LastName: line, AltEmail: line, Country: line, State: line, City: line,
			AddressLine1: line, AddressLine2: line, StateProvinceRegion: line, PostalCode: line,
			Custom: map[string]string{"father_name": line, "designation": line, "age": line, "company_name": line,
				"birth_date": line, "join_date": line},
			Tokens: mail.Tokens{Unsubscribe: strings.Repeat("A", mail.MaxTokenLen), UnsubscribeURL: url, PreferencesURL: url,
				OpenPixelURL: base + "/o/" + strings.Repeat("&", 900-len(base)-3)},
		}
		out = append(out, r)
	}
	return out
}

func worstSender() *mail.Sender {
	line := strings.Repeat("𝄞", mail.MaxLine)
	return &mail.Sender{FromName: line, FromEmail: mail.Email(strings.Repeat("a", 254-len("@x.example")) + "@x.example"),
		ReplyTo: mail.Email(strings.Repeat("b", 254-len("@x.example")) + "@x.example"),
		Address: line + " " + line, City: line, State: line, Country: line}
}

// WorstSize bounds every mail Build makes: templates using every
// placeholder (in subject, preheader, HTML and the text part, at line
// ends, side by side, in links), tracked or not, for recipients whose
// every value is as long and as costly to encode as the limits allow. And
// it is no idle bound: the worst mails come within a factor of two of it.
func TestWorstSizeHoldsBuild(t *testing.T) {
	racetest.Heavy(t)
	t.Parallel()
	const base = "https://m.example.test"
	var all strings.Builder
	for _, n := range mail.DynamicContent {
		all.WriteString("((" + n + "))")
	}
	every := all.String()
	templates := []struct{ subject, preheader, html string }{
		{"Hi", "", "<p>plain</p>"},
		{every, every, "<html><body><p>" + every + "</p></body></html>"},
		{"((first_name))((last_name))", "((email))", strings.Repeat("((first_name))\n((full_name))=((sender_address)) ", 300)},
		{"x", "", strings.Repeat(`<a href="https://shop.example/p?a=1&b=((email))">((first_name))</a>`+"\r\n", 200) +
			`<a href="((unsubscribe_preferences))">prefs</a><a href="https://a.b/">https://a.b/</a>`},
		{every, "", strings.Repeat("<p>"+every+"</p>\n", 50) + "</body>"},
		{"", "", strings.Repeat("é€𝄞=\t ", 5000) + strings.Repeat("((unsubscribe_preferences))", 100)},
	}
	for i, tc := range templates {
		tp, err := Compile(tc.subject, tc.preheader, tc.html)
		if err != nil {
			t.Fatal(err)
		}
		worst := tp.WorstSize(len(base))
		for _, tracked := range []bool{false, true} {
			opts := FormOptions{Domain: strings.Repeat("d", 250) + ".example", SendID: 1<<63 - 1,
				UnsubscribeMailto: strings.Repeat("u", 240) + "@x.example", MaxBytes: 1 << 40,
				Now: func() time.Time { return testNow }}
			if tracked {
				opts.Clicks, opts.LinkNumbers = worstClicks{base}, numbered(tp)
			}
			f := NewForm(tp, worstSender(), opts)
			biggest := 0
			for _, r := range worstRecipients(base) {
				var b Buffer
				n := len(f.Build(nil, &b, r, 1<<63-1))
				if n > worst {
					t.Errorf("template %d (tracked %v): built %d bytes, more than its worst case %d", i, tracked, n, worst)
				}
				biggest = max(biggest, n)
			}
			if i > 0 && 2*biggest < worst {
				t.Errorf("template %d (tracked %v): worst case %d, more than twice the biggest mail built (%d)", i, tracked, worst, biggest)
			}
		}
	}
}

// amplified is the template of the report: 70,000 ((first_name)) in
// about 1 MB of HTML.
func amplified() string {
	return "<html><body>" + strings.Repeat("((first_name))", 70000) + "</body></html>"
}

// The template that made a 37 MB mail passes the limit by far; a 1 MB
// template of literal HTML with a few placeholders fits it.
func TestWorstSizeLimit(t *testing.T) {
	t.Parallel()
	tp, err := Compile("Hi ((first_name))", "", amplified())
	if err != nil {
		t.Fatal(err)
	}
	if n := tp.WorstSize(22); n <= MaxMailBytes || n < 70000*2*mail.MaxLine*3*4 {
		t.Errorf("amplified template: worst case %d bytes, want more than %d and at least 70,000 × 2 parts × 3,060", n, MaxMailBytes)
	}
	var big strings.Builder
	big.WriteString("<html><body>((first_name)) ((sender_address)) <a href=\"((unsubscribe_preferences))\">x</a>")
	for big.Len() < mail.MaxTemplateBytes-200 {
		big.WriteString(`<tr><td class="c" style="padding:4px">Ünïcode &amp; text, item with a = sign</td></tr>` + "\n")
	}
	big.WriteString("</body></html>")
	tp, err = Compile("Hello ((full_name))", "((first_name))", big.String())
	if err != nil {
		t.Fatal(err)
	}
	if n := tp.WorstSize(22); n > MaxMailBytes {
		t.Errorf("1 MB of literal HTML: worst case %d bytes, more than the limit %d", n, MaxMailBytes)
	}
}

// A mail whose values make it longer than the form's MaxBytes is not
// built: BuildChecked answers *TooLarge before writing (the values alone
// pass the limit) or once Build passed it (they pass it encoded), and
// the dst it gives back is the one it was given. Another recipient's mail
// of the same form is built whole.
func TestBuildCheckedTooLarge(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", mail.MaxLine)
	f := testForm(t, mustCompile(t, "Hi ((first_name))", "", amplified()), nil)
	var b Buffer
	dst := []byte("kept")
	out, err := f.BuildChecked(dst, &b, &mail.Recipient{Email: "ann@example.com", FirstName: long}, 7)
	var tl *TooLarge
	if !errors.As(err, &tl) || tl.Max != MaxMailBytes || tl.Size < 70000*2*mail.MaxLine || string(out) != "kept" {
		t.Fatalf("255-character name: %v, %q", err, out[:min(len(out), 20)])
	}
	if want := "the mail is at least " + strconv.Itoa(tl.Size) + " bytes, more than the limit of 10485760 bytes"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	out, err = f.BuildChecked(out[:0], &b, &mail.Recipient{Email: "bob@example.com", FirstName: "Bob"}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, parts := parse(t, out); !strings.Contains(parts[1].body, strings.Repeat("Bob", 70000)) {
		t.Errorf("short name: html part %.200s", parts[1].body)
	}

	// 3,000 names of 255 four-byte characters: 6 MB of values, 18 MB
	// encoded. Bounds.Min lets them by, Build stops past the limit.
	f = NewForm(mustCompile(t, "x", "", strings.Repeat("((first_name))", 3000)), nil, FormOptions{MaxBytes: 8 << 20})
	r := &mail.Recipient{Email: "c@example.com", FirstName: strings.Repeat("𝄞", mail.MaxLine)}
	if n := f.Bounds(&b, r).Min; n > 8<<20 {
		t.Fatalf("Bounds.Min %d: the case is not the one meant", n)
	}
	built := f.Build(nil, &b, r, 1)
	if len(built) <= 8<<20 || len(built) > 8<<20+8<<10 {
		t.Errorf("Build wrote %d bytes: want it stopped within a value past 8 MB", len(built))
	}
	out, err = f.BuildChecked(nil, &b, r, 1)
	if !errors.As(err, &tl) || tl.Size <= 8<<20 || len(out) != 0 {
		t.Errorf("four-byte names: %v, %d bytes", err, len(out))
	}
}

// Building the amplified template's mail for 100 recipients with
// 255-character names allocates next to nothing: none of the mails is
// built. Before the cap each was, 37 MB apiece (3.7 GB for 100 with a new
// buffer each, ~75 MB with one reused).
func TestBuildCheckedMemory(t *testing.T) {
	// Not parallel: TotalAlloc counts the whole process.
	f := testForm(t, mustCompile(t, "Hi ((first_name))", "", amplified()), nil)
	var b Buffer
	var data []byte
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	failed := 0
	for i := range 100 {
		r := &mail.Recipient{Email: "ann@example.com", FirstName: strings.Repeat(string(rune('a'+i%26)), mail.MaxLine)}
		var err error
		if data, err = f.BuildChecked(data[:0], &b, r, int64(i)); err != nil {
			failed++
		}
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("100 mails of the amplified template: %d bytes allocated", alloc)
	if failed != 100 || alloc > 1<<20 {
		t.Errorf("%d of 100 mails refused, %d bytes allocated: want all, under 1 MB", failed, alloc)
	}
}

// BenchmarkBuildChecked is the engine's per-recipient path: Bounds, then
// Build, on BenchmarkRenderAndBuild's mail.
func BenchmarkBuildChecked(b *testing.B) {
	s, p, h := benchTemplate()
	f := testForm(b, mustCompile(b, s, p, h), sender())
	benchBuild(b, len(h), func(dst []byte, buf *Buffer, r *mail.Recipient, id int64) []byte {
		dst, err := f.BuildChecked(dst, buf, r, id)
		if err != nil {
			b.Fatal(err)
		}
		return dst
	})
}

// Bounds holds what Build makes: for templates using every placeholder,
// tracked or not, cut short by MaxBytes or not, and recipients ordinary,
// as long and costly as the limits allow, or the report's (255 emoji in
// each name), the mail is at most Max bytes long and, unless cut short, at
// least Min, and
// built into a dst with Max bytes free it is written without a new array.
// Max is no idle bound where it matters, for the big mails: the report's
// is within 10% of it.
func TestBoundsHoldBuild(t *testing.T) {
	racetest.Heavy(t)
	t.Parallel()
	const base = "https://m.example.test"
	var all strings.Builder
	for _, n := range mail.DynamicContent {
		all.WriteString("((" + n + "))")
	}
	every := all.String()
	emoji := strings.Repeat("😀", mail.MaxLine)
	report := "<p>" + strings.Repeat("((full_name)) ", 780) + "</p>"
	templates := []struct{ subject, preheader, html string }{
		{"Hi", "", "<p>plain</p>"},
		{every, every, "<html><body><p>" + every + "</p></body></html>"},
		{"((first_name))((last_name))", "((email))", strings.Repeat("((first_name))\n((full_name))=((sender_address)) ", 300)},
		{"x", "", strings.Repeat(`<a href="https://shop.example/p?a=1&b=((email))">((first_name))</a>`+"\r\n", 200) +
			`<a href="((unsubscribe_preferences))">prefs</a><a href="https://a.b/">https://a.b/</a>`},
		{"", "", strings.Repeat("é€𝄞=\t ", 5000) + strings.Repeat("((unsubscribe_preferences))", 100)},
		{"((full_name))", "((full_name))", report},
		{"Hi ((first_name))", "", amplified()},
	}
	recipients := append(worstRecipients(base), recipient(),
		&mail.Recipient{Email: "e@example.com", FirstName: emoji, LastName: emoji},
		&mail.Recipient{Email: "a@example.com", FirstName: strings.Repeat("a ", mail.MaxLine/2), LastName: strings.Repeat("&<", mail.MaxLine/2)},
		&mail.Recipient{Email: "z@example.com"})
	for i, tc := range templates {
		tp := mustCompile(t, tc.subject, tc.preheader, tc.html)
		for _, tracked := range []bool{false, true} {
			for _, maxBytes := range []int{MaxMailBytes, 1 << 40} {
				if i == len(templates)-1 && maxBytes > MaxMailBytes {
					continue // 140 MB mails: the cut is what this template shows
				}
				opts := FormOptions{Domain: strings.Repeat("d", 250) + ".example", SendID: 1<<63 - 1,
					UnsubscribeMailto: strings.Repeat("u", 240) + "@x.example", MaxBytes: maxBytes,
					Now: func() time.Time { return testNow }}
				if tracked {
					opts.Clicks, opts.LinkNumbers = worstClicks{base}, numbered(tp)
				}
				f := NewForm(tp, worstSender(), opts)
				for j, r := range recipients {
					var b Buffer
					s := f.Bounds(&b, r)
					dst := make([]byte, 3, 3+s.Max)
					out := f.Build(dst, &b, r, 1<<63-1)
					n := len(out) - 3
					if n <= maxBytes && n < s.Min || n > s.Max { // a mail cut short may be shorter than Min
						t.Errorf("template %d (tracked %v, max %d), recipient %d: built %d bytes, bounds %+v", i, tracked, maxBytes, j, n, s)
					}
					if &out[0] != &dst[0] {
						t.Errorf("template %d (tracked %v, max %d), recipient %d: Build grew dst past its %d bytes free (%d built)",
							i, tracked, maxBytes, j, s.Max, n)
					}
					if i == 5 && j == len(recipients)-3 && maxBytes == MaxMailBytes && 10*s.Max > 11*n {
						t.Errorf("the report's mail: %d bytes, bounded by %d, more than 10%% above", n, s.Max)
					}
				}
			}
		}
	}
}
