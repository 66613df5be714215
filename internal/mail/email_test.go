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
		{"h@BÜCHER.example", "h@BÜCHER.example", EmailOK, "h@xn--bcher-kva.example", false},
		{"h@xn--bcher-kva.example", "h@xn--bcher-kva.example", EmailOK, "h@xn--bcher-kva.example", false},
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
		{"a@x\u200d.example", "", EmailBadDomain, "", false},                         // a joiner out of context
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
