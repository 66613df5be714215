package mail

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

var testKey = bytes.Repeat([]byte{7}, 32)

func TestUnsubscribeTokenRoundTrip(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	long := Email(strings.Repeat("a", 64) + "@" + strings.Repeat("b", 185) + ".com")
	tests := []UnsubscribeToken{
		{UserID: 1, Email: "a@b.example"},
		{UserID: 7, Email: "Ann.Lee+x@Example.COM", GroupID: 3, SendID: 99},
		{UserID: 12, Email: "ünï@exämple.org", AutomationID: 5},
		{UserID: math.MaxInt64, Email: long, GroupID: math.MaxInt64, SendID: math.MaxInt64, AutomationID: math.MaxInt64},
	}
	for _, want := range tests {
		tok := string(s.Seal(nil, want))
		if len(tok) > MaxTokenLen {
			t.Errorf("token of %d characters, MaxTokenLen %d", len(tok), MaxTokenLen)
		}
		if strings.Trim(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			t.Errorf("token %q is not base64url", tok)
		}
		got, ok := s.Open(tok)
		if !ok || got != want {
			t.Errorf("Open(Seal(%+v)) = %+v, %v", want, got, ok)
		}
	}
}

// Any change to a token, another key or garbage opens nothing.
func TestUnsubscribeTokenRefused(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	tok := string(s.Seal(nil, UnsubscribeToken{UserID: 5, Email: "a@b.example", GroupID: 2}))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
	for i := range len(tok) {
		for _, c := range []byte{alphabet[(strings.IndexByte(alphabet, tok[i])+1)%64], alphabet[(strings.IndexByte(alphabet, tok[i])+17)%64]} {
			changed := tok[:i] + string(c) + tok[i+1:]
			if got, ok := s.Open(changed); ok {
				t.Fatalf("changed at %d (%q) opened: %+v", i, changed, got)
			}
		}
	}
	other := NewTokenSigner(bytes.Repeat([]byte{8}, 32))
	for _, bad := range []string{
		"", "a", tok[:len(tok)-1], tok[1:], tok + "A", tok + "=", "!!!!", strings.Repeat("A", MaxTokenLen+1),
		tok[:5] + "\n" + tok[5:], tok + "\r\n", "\r" + tok, // base64 skips line ends: still refused
		string(other.Seal(nil, UnsubscribeToken{UserID: 5, Email: "a@b.example", GroupID: 2})),
		string(s.Seal(nil, UnsubscribeToken{UserID: 0, Email: "a@b.example"})), // no account
		string(s.Seal(nil, UnsubscribeToken{UserID: 1})),                       // no address
	} {
		if got, ok := s.Open(bad); ok {
			t.Errorf("Open(%q) = %+v, want refused", bad, got)
		}
	}
}

func TestLinksFill(t *testing.T) {
	t.Parallel()
	l := Links{Base: "https://mail.example", Signer: NewTokenSigner(testKey)}
	var r Recipient
	want := UnsubscribeToken{UserID: 3, Email: "a@b.example", SendID: 4}
	l.Fill(&r, want)
	if r.Tokens.UnsubscribeURL != "https://mail.example/unsubscribe/"+r.Tokens.Unsubscribe || r.Tokens.PreferencesURL != r.Tokens.UnsubscribeURL {
		t.Fatalf("tokens %+v", r.Tokens)
	}
	if got, ok := l.Signer.Open(r.Tokens.Unsubscribe); !ok || got != want {
		t.Errorf("Open = %+v, %v", got, ok)
	}
}

func BenchmarkLinksFill(b *testing.B) {
	l := Links{Base: "https://mail.example", Signer: NewTokenSigner(testKey)}
	var r Recipient
	tok := UnsubscribeToken{UserID: 3, Email: "someone.long@example.com", SendID: 12345, GroupID: 7}
	b.ReportAllocs()
	for b.Loop() {
		l.Fill(&r, tok)
	}
}

func TestOpenToken(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	for _, ids := range [][2]int64{{1, 1}, {42, 1234567}, {math.MaxInt64, math.MaxInt64}} {
		tok := string(s.SealOpen(nil, ids[0], ids[1]))
		if a, b, ok := s.OpenOpen(tok); !ok || a != ids[0] || b != ids[1] {
			t.Errorf("OpenOpen(SealOpen(%v)) = %d %d %v", ids, a, b, ok)
		}
		if _, ok := s.Open(tok); ok {
			t.Error("an open token opened as an unsubscribe token")
		}
		for _, nl := range []string{tok + "\n", "\r\n" + tok, tok[:3] + "\r" + tok[3:]} {
			if _, _, ok := s.OpenOpen(nl); ok {
				t.Fatalf("%q opened", nl)
			}
		}
		for i := range len(tok) {
			b := []byte(tok)
			b[i] ^= 1
			if _, _, ok := s.OpenOpen(string(b)); ok {
				t.Fatalf("changed at %d opened", i)
			}
		}
	}
	un := string(s.Seal(nil, UnsubscribeToken{UserID: 1, Email: "a@b.example"}))
	if _, _, ok := s.OpenOpen(un); ok {
		t.Error("an unsubscribe token opened as an open token")
	}
	l := Links{Base: "https://m.example", Signer: s}
	if u := string(l.Pixel(nil, "LT", 3, 4)); u != "https://m.example/o/LT/"+string(s.SealOpen(nil, 3, 4)) {
		t.Errorf("Pixel = %q", u)
	}
}
