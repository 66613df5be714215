package mail

import (
	"strings"
	"testing"
)

// FuzzTokenOpen hands any text to the token parsers: they never panic,
// and what they accept is exactly what the signer makes of its contents,
// byte for byte, or what it made of them before the sealed tokens (the
// signer is deterministic, so a token it did not make has no other way
// in).
func FuzzTokenOpen(f *testing.F) {
	s := NewTokenSigner(testKey)
	for _, seed := range []string{
		"", "A", "!!!!", strings.Repeat("A", MaxTokenLen+1),
		string(s.Seal(nil, UnsubscribeToken{UserID: 7, Email: "ann@example.com", GroupID: 3, SendID: 99})),
		string(s.Seal(nil, UnsubscribeToken{UserID: 1, Email: "a@b.example", AutomationID: 5})),
		string(s.SealOpen(nil, 42, 1234567)),
		string(s.SealBounce(nil, 42, 1234567)),
		string(s.ClickKey(42).Seal(nil, 1234567, 3)),
		legacySeal(testKey, UnsubscribeToken{UserID: 7, Email: "ann@example.com", GroupID: 3, SendID: 99}),
		legacySealOpen(testKey, 42, 1234567),
		string(s.clickV3(nil, 42, 1234567, 3)),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if tok, ok := s.Open(text); ok {
			if tok.UserID <= 0 || tok.Email == "" || tok.GroupID < 0 || tok.SendID < 0 || tok.AutomationID < 0 {
				t.Fatalf("Open(%q) = %+v", text, tok)
			}
			if again := string(s.Seal(nil, tok)); again != text && legacySeal(testKey, tok) != text {
				t.Fatalf("Open accepted %q, which the signer writes %q", text, again)
			}
		}
		if send, id, ok := s.OpenOpen(text); ok {
			if send <= 0 || id <= 0 {
				t.Fatalf("OpenOpen(%q) = %d, %d", text, send, id)
			}
			if again := string(s.SealOpen(nil, send, id)); again != text && legacySealOpen(testKey, send, id) != text {
				t.Fatalf("OpenOpen accepted %q, which the signer writes %q", text, again)
			}
		}
		// Bounce tokens are read in any case: the signer writes the
		// lower-cased text.
		if send, id, ok := s.OpenBounce(text); ok {
			if send <= 0 || id <= 0 {
				t.Fatalf("OpenBounce(%q) = %d, %d", text, send, id)
			}
			if again := string(s.SealBounce(nil, send, id)); again != strings.ToLower(text) {
				t.Fatalf("OpenBounce accepted %q, which the signer writes %q", text, again)
			}
		}
		if send, id, link, ok := s.OpenClick(text); ok {
			if send <= 0 || id <= 0 || link < 0 || link > MaxLink {
				t.Fatalf("OpenClick(%q) = %d, %d, %d", text, send, id, link)
			}
			if again := string(s.ClickKey(send).Seal(nil, id, link)); again != text && string(s.clickV3(nil, send, id, link)) != text {
				t.Fatalf("OpenClick accepted %q, which the signer writes %q", text, again)
			}
		}
	})
}

// FuzzTokenMutation seals a token from fuzzed contents, then changes it
// (a byte replaced, inserted or removed, a cut, an addition): the
// original opens to its contents, the changed text to nothing unless it
// is byte-identical to the original.
func FuzzTokenMutation(f *testing.F) {
	s := NewTokenSigner(testKey)
	f.Add(int64(7), int64(3), int64(99), int64(0), "ann@example.com", uint8(0), uint16(5), byte('B'))
	f.Add(int64(1), int64(0), int64(0), int64(5), "ünï@exämple.org", uint8(1), uint16(0), byte('-'))
	f.Add(int64(1<<62), int64(1), int64(1), int64(1), "a@b.example", uint8(2), uint16(30), byte(0))
	f.Add(int64(5), int64(2), int64(8), int64(9), "x@y.example", uint8(3), uint16(10), byte('='))
	f.Add(int64(5), int64(2), int64(8), int64(9), "x@y.example", uint8(4), uint16(1), byte('A'))
	f.Fuzz(func(t *testing.T, user, group, send, automation int64, email string, op uint8, at uint16, c byte) {
		want := UnsubscribeToken{UserID: user, Email: Email(email), GroupID: group, SendID: send, AutomationID: automation}
		tok := string(s.Seal(nil, want))
		valid := user > 0 && group >= 0 && send >= 0 && automation >= 0 && email != "" && len(tok) <= MaxTokenLen
		if got, ok := s.Open(tok); ok != valid || ok && got != want {
			t.Fatalf("Open(Seal(%+v)) = %+v, %v; want valid %v", want, got, ok, valid)
		}
		changed := mutate(tok, op, int(at), c)
		if got, ok := s.Open(changed); ok && changed != tok {
			t.Fatalf("%q, changed from %q, opened: %+v", changed, tok, got)
		}

		// The open-pixel token, from the same ids.
		otok := string(s.SealOpen(nil, send, automation))
		if a, b, ok := s.OpenOpen(otok); ok != (send > 0 && automation > 0) || ok && (a != send || b != automation) {
			t.Fatalf("OpenOpen(SealOpen(%d, %d)) = %d, %d, %v", send, automation, a, b, ok)
		}
		changed = mutate(otok, op, int(at), c)
		if a, b, ok := s.OpenOpen(changed); ok && changed != otok {
			t.Fatalf("%q, changed from %q, opened: %d, %d", changed, otok, a, b)
		}
		if _, ok := s.Open(otok); ok {
			t.Fatalf("open-pixel token %q opened as an unsubscribe token", otok)
		}
		if _, _, ok := s.OpenOpen(tok); ok {
			t.Fatalf("unsubscribe token %q opened as an open-pixel token", tok)
		}

		// The click token, from the same ids (the group as the link number).
		link := int(group % (MaxLink + 1))
		ctok := string(s.ClickKey(send).Seal(nil, automation, link))
		if a, b, l, ok := s.OpenClick(ctok); ok != (send > 0 && automation > 0 && link >= 0) || ok && (a != send || b != automation || l != link) {
			t.Fatalf("OpenClick(Seal(%d, %d, %d)) = %d, %d, %d, %v", send, automation, link, a, b, l, ok)
		}
		changed = mutate(ctok, op, int(at), c)
		if a, b, l, ok := s.OpenClick(changed); ok && changed != ctok {
			t.Fatalf("%q, changed from %q, opened: %d, %d, %d", changed, ctok, a, b, l)
		}
		if _, _, _, ok := s.OpenClick(otok); ok {
			t.Fatalf("open-pixel token %q opened as a click token", otok)
		}
		if _, _, ok := s.OpenOpen(ctok); ok {
			t.Fatalf("click token %q opened as an open-pixel token", ctok)
		}
		if _, ok := s.Open(ctok); ok {
			t.Fatalf("click token %q opened as an unsubscribe token", ctok)
		}
	})
}

// mutate changes tok at position at (modulo its length) by op: replace
// the byte with c, insert c, remove the byte, cut there, or append c.
func mutate(tok string, op uint8, at int, c byte) string {
	if tok == "" {
		return string([]byte{c})
	}
	at %= len(tok)
	switch op % 5 {
	case 0:
		return tok[:at] + string([]byte{c}) + tok[at+1:]
	case 1:
		return tok[:at] + string([]byte{c}) + tok[at:]
	case 2:
		return tok[:at] + tok[at+1:]
	case 3:
		return tok[:at]
	default:
		return tok + string([]byte{c})
	}
}
