package mail

import (
	"slices"
	"strings"
	"testing"
)

// The address rule: what is accepted and kept, what is refused and why,
// and how each address goes out.
func TestCheckEmail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Email
		why  EmailProblem
		wire string
		utf8 bool
	}{
		{"ann@example.com", "ann@example.com", EmailOK, "ann@example.com", false},
		{" Ann@Example.COM ", "Ann@Example.COM", EmailOK, "Ann@Example.COM", false},
		{"a.b+c@sub.example.co.uk", "a.b+c@sub.example.co.uk", EmailOK, "a.b+c@sub.example.co.uk", false},
		{"h@bücher.example", "h@bücher.example", EmailOK, "h@xn--bcher-kva.example", false},
		// An internationalized domain has one stored spelling, its U-labels
		// in lower case, however it is written: one contact, one
		// suppression, as on the wire.
		{"h@BÜCHER.example", "h@bücher.example", EmailOK, "h@xn--bcher-kva.example", false},
		{"h@xn--bcher-kva.example", "h@bücher.example", EmailOK, "h@xn--bcher-kva.example", false},
		{"H@XN--BCHER-KVA.Example", "H@bücher.example", EmailOK, "H@xn--bcher-kva.example", false},
		{"h@Mail.bücher.example", "h@mail.bücher.example", EmailOK, "h@mail.xn--bcher-kva.example", false},
		{"ü-h@example.com", "ü-h@example.com", EmailOK, "ü-h@example.com", true},
		{"ü@bücher.example", "ü@bücher.example", EmailOK, "ü@xn--bcher-kva.example", true},
		{"用户@例子.广告", "用户@例子.广告", EmailOK, "用户@xn--fsqu00a.xn--4rr70v", true},
		// Decomposed (u + U+0308) is stored composed, so it matches.
		{"u\u0308-h@bu\u0308cher.example", "ü-h@bücher.example", EmailOK, "ü-h@xn--bcher-kva.example", true},
		{"faß@faß.de", "faß@faß.de", EmailOK, "faß@xn--fa-hia.de", true},

		// Refused as before, with the same message.
		{"", "", EmailInvalid, "", false},
		{"nope", "", EmailInvalid, "", false},
		{"x@y", "", EmailInvalid, "", false},
		{"Ada <a@b.co>", "", EmailInvalid, "", false},
		{"a@b..example", "", EmailInvalid, "", false},
		{"a@[127.0.0.1]", "", EmailInvalid, "", false},
		{"a b@example.com", "", EmailInvalid, "", false},
		{"ü\u2028@example.com", "", EmailInvalid, "", false},

		// Domains without a valid A-label.
		{"a@xn--zz.example", "", EmailBadDomain, "", false},
		{"a@xn--a.example", "", EmailBadDomain, "", false},
		{"a@-x.example", "", EmailBadDomain, "", false},
		{"a@x-.example", "", EmailBadDomain, "", false},
		{"a@ab--cd.example", "", EmailBadDomain, "", false},
		{"a@ex_ample.com", "", EmailBadDomain, "", false},
		{"a@x\u200d.example", "", EmailInvisible, "", false}, // a joiner

		// Invisible characters, anywhere: an address holding one looks
		// like another, and IDNA drops some from the domain on the wire.
		{"victim1@ex\u200bample.com", "", EmailInvisible, "", false},                 // zero-width space
		{"victim2@ex\u00adample.com", "", EmailInvisible, "", false},                 // soft hyphen
		{"v6@ex\u2060ample.com", "", EmailInvisible, "", false},                      // word joiner
		{"v7@e\u034fxample.com", "", EmailInvisible, "", false},                      // combining grapheme joiner
		{"v8@ex\ufe0fample.com", "", EmailInvisible, "", false},                      // variation selector
		{"victim5@EXAMPLE.com\u200c", "", EmailInvisible, "", false},                 // zero-width non-joiner
		{"\u202emoc.lapyap@evil.test", "", EmailInvisible, "", false},                // right-to-left override
		{"a\u2066b\u2069@evil.test", "", EmailInvisible, "", false},                  // isolates
		{"a\u061c@evil.test", "", EmailInvisible, "", false},                         // Arabic letter mark
		{"\ufeff@evil.test", "", EmailInvisible, "", false},                          // byte order mark
		{"a\u3164@evil.test", "", EmailInvisible, "", false},                         // Hangul filler
		{"a\u3000b@evil.test", "", EmailInvisible, "", false},                        // ideographic space
		{"a\u00a0b@evil.test", "", EmailInvisible, "", false},                        // no-break space
		{"a@e\U000E0041xample.com", "", EmailInvisible, "", false},                   // a tag character
		{"a@\u0301x.example", "", EmailBadDomain, "", false},                         // a label starting with a combining mark
		{"a@\u05d0a1.example", "", EmailBadDomain, "", false},                        // right-to-left and left-to-right mixed (bidi rule)
		{"a@" + strings.Repeat("ü", 60) + ".example", "", EmailBadDomain, "", false}, // its A-label is longer than 63
	}
	for _, tt := range tests {
		got, why := CheckEmail(tt.in)
		if got != tt.want || why != tt.why {
			t.Errorf("CheckEmail(%q) = %q, %v; want %q, %v", tt.in, got, why, tt.want, tt.why)
			continue
		}
		if why != EmailOK {
			continue
		}
		if w := got.Wire(); w != tt.wire {
			t.Errorf("%q.Wire() = %q, want %q", got, w, tt.wire)
		}
		if u := got.NeedsUTF8(); u != tt.utf8 {
			t.Errorf("%q.NeedsUTF8() = %v, want %v", got, u, tt.utf8)
		}
	}
	if got := EmailInvalid.Message("email"); got != "The email must be a valid email address." {
		t.Errorf("EmailInvalid: %q", got)
	}
	if got := EmailBadDomain.Message("alt email"); got != "The alt email must be a valid email address: its domain is not a valid domain name." {
		t.Errorf("EmailBadDomain: %q", got)
	}
}

func TestWithULabels(t *testing.T) {
	t.Parallel()
	in := []string{"a@example.com", "h@xn--bcher-kva.example", "x@xn--zz.example"}
	got := WithULabels(in)
	if want := append(in[:3:3], "h@bücher.example"); !slices.Equal(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
	if got := WithULabels(in[:1]); !slices.Equal(got, in[:1]) {
		t.Fatalf("%q", got)
	}
}
