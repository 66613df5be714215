package mail

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// legacySeal is the version-1 unsubscribe token, as mails sent before the
// sealed tokens carry it: base64url of the version, the ids as varints,
// the address and a 128-bit HMAC-SHA256 of all that.
func legacySeal(key []byte, t UnsubscribeToken) string {
	p := []byte{1}
	p = binary.AppendUvarint(p, uint64(t.UserID))
	p = binary.AppendUvarint(p, uint64(t.GroupID))
	p = binary.AppendUvarint(p, uint64(t.SendID))
	p = binary.AppendUvarint(p, uint64(t.AutomationID))
	p = append(p, t.Email...)
	return base64.RawURLEncoding.EncodeToString(legacyMAC(key, p))
}

// legacySealOpen is the version-2 open-pixel token.
func legacySealOpen(key []byte, send, id int64) string {
	p := binary.AppendUvarint([]byte{2}, uint64(send))
	p = binary.AppendUvarint(p, uint64(id))
	return base64.RawURLEncoding.EncodeToString(legacyMAC(key, p))
}

func legacyMAC(key, p []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(p)
	return append(p, m.Sum(nil)[:16]...)
}

// The sealed tokens are what docs/tracking.md writes down: base64url of
// the version byte and AES-SIV, under HMAC-SHA256(key, "mailroom token
// key\x00" || kind) with the version as associated data, of the fields as
// varints (and, in the unsubscribe token, the address).
func TestSealedTokenFormat(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	want := func(kind string, version byte, ids ...int64) string {
		m := hmac.New(sha256.New, testKey)
		m.Write([]byte("mailroom token key\x00" + kind))
		var p []byte
		for _, id := range ids {
			p = binary.AppendUvarint(p, uint64(id))
		}
		if kind == "unsubscribe" {
			p = append(p, "ann@example.com"...)
		}
		raw := make([]byte, 1+16+len(p))
		raw[0] = version
		newSIV(m.Sum(nil), []byte{version}).seal(raw[1:17], raw[17:], p, make([]byte, 16))
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	for _, c := range []struct{ got, want string }{
		{string(s.Seal(nil, UnsubscribeToken{UserID: 7, GroupID: 3, SendID: 99, AutomationID: 0, Email: "ann@example.com"})), want("unsubscribe", 4, 7, 3, 99, 0)},
		{string(s.SealOpen(nil, 77, 1234)), want("open", 5, 77, 1234)},
		{string(s.ClickKey(77).Seal(nil, 1234, 5)), want("click", 6, 77, 1234, 5)},
	} {
		if c.got != c.want {
			t.Errorf("token %q, want %q", c.got, c.want)
		}
	}
	if n := sealRoom(maxClickPlain); n != ClickRoom {
		t.Errorf("ClickRoom %d, want %d", ClickRoom, n)
	}
}

// No token shows what it holds: neither the address (as written, lower
// case, URL-escaped, or base64 of it at any alignment) nor an id, as a
// varint in the raw bytes or in decimal in the text.
func TestSealedTokensShowNothing(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	const user, group, send, auto, id, link = 4_000_321, 2_000_777, 98_765_432, 3_000_123, 123_456_789_012, 300_001
	email := Email("Ann.Lee+news@Example.COM")
	toks := map[string][]int64{
		string(s.Seal(nil, UnsubscribeToken{UserID: user, GroupID: group, SendID: send, AutomationID: auto, Email: email})): {user, group, send, auto},
		string(s.SealOpen(nil, send, id)):                                 {send, id},
		string(s.ClickKey(send).Seal(nil, id, link)):                      {send, id, link},
		string(s.Seal(nil, UnsubscribeToken{UserID: user, Email: email})): {user},
	}
	for tok, ids := range toks {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range addressForms(string(email)) {
			if strings.Contains(tok, f) || bytes.Contains(raw, []byte(f)) {
				t.Errorf("token %q shows the address as %q", tok, f)
			}
		}
		var all []byte
		for _, v := range ids {
			vi := binary.AppendUvarint(nil, uint64(v))
			all = append(all, vi...)
			if bytes.Contains(raw, vi) || strings.Contains(tok, strconv.FormatInt(v, 10)) {
				t.Errorf("token %q shows %d", tok, v)
			}
		}
		if bytes.Contains(raw, all) {
			t.Errorf("token %q shows its ids", tok)
		}
	}
}

// addressForms are the spellings of an address a link could show it in.
func addressForms(a string) []string {
	forms := []string{a, strings.ToLower(a), url.QueryEscape(a), url.PathEscape(a), strings.ReplaceAll(a, "@", "%40")}
	for _, x := range []string{a, strings.ToLower(a)} {
		for pad := range 3 { // base64 of the address at each alignment, minus the edges that depend on its neighbours
			b := append(bytes.Repeat([]byte{0}, pad), x...)
			for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.RawStdEncoding} {
				e := enc.EncodeToString(b)
				forms = append(forms, e[(pad*8+5)/6+1:len(e)-2])
			}
		}
	}
	return forms
}

// The tokens of mails sent before (versions 1 to 3: the fields in clear
// under a MAC) still open, to the same fields; changed, or under another
// key, they do not.
func TestOldTokensStillOpen(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	other := bytes.Repeat([]byte{8}, 32)
	for _, want := range []UnsubscribeToken{
		{UserID: 7, Email: "ann@example.com", GroupID: 3, SendID: 99},
		{UserID: math.MaxInt64, Email: "a@b.example", AutomationID: math.MaxInt64},
	} {
		tok := legacySeal(testKey, want)
		if got, ok := s.Open(tok); !ok || got != want {
			t.Errorf("Open(v1 %q) = %+v, %v; want %+v", tok, got, ok, want)
		}
		if got, ok := s.Open(legacySeal(other, want)); ok {
			t.Errorf("a v1 token of another key opened: %+v", got)
		}
		for i := range len(tok) {
			if got, ok := s.Open(tok[:i] + flip(tok[i]) + tok[i+1:]); ok {
				t.Fatalf("v1 %q changed at %d opened: %+v", tok, i, got)
			}
			if _, ok := s.Open(tok[:i]); ok {
				t.Fatalf("v1 %q cut at %d opened", tok, i)
			}
		}
	}
	for _, ids := range [][2]int64{{1, 1}, {42, 1234567}, {math.MaxInt64, math.MaxInt64}} {
		tok := legacySealOpen(testKey, ids[0], ids[1])
		if a, b, ok := s.OpenOpen(tok); !ok || a != ids[0] || b != ids[1] {
			t.Errorf("OpenOpen(v2 %q) = %d %d %v", tok, a, b, ok)
		}
		if _, _, ok := s.OpenOpen(legacySealOpen(other, ids[0], ids[1])); ok {
			t.Error("a v2 token of another key opened")
		}
		for i := range len(tok) {
			if _, _, ok := s.OpenOpen(tok[:i] + flip(tok[i]) + tok[i+1:]); ok {
				t.Fatalf("v2 %q changed at %d opened", tok, i)
			}
		}
		if _, ok := s.Open(tok); ok {
			t.Error("a v2 open token opened as an unsubscribe token")
		}
	}
	for _, c := range []struct {
		send, id int64
		link     int
	}{{1, 1, 0}, {77, 1234, 5}, {math.MaxInt64, math.MaxInt64, MaxLink}} {
		tok := string(s.clickV3(nil, c.send, c.id, c.link))
		if send, id, link, ok := s.OpenClick(tok); !ok || send != c.send || id != c.id || link != c.link {
			t.Errorf("OpenClick(v3 %q) = %d %d %d %v", tok, send, id, link, ok)
		}
		if _, _, _, ok := NewTokenSigner(other).OpenClick(tok); ok {
			t.Error("a v3 token opened under another key")
		}
		for i := range len(tok) {
			if _, _, _, ok := s.OpenClick(tok[:i] + flip(tok[i]) + tok[i+1:]); ok {
				t.Fatalf("v3 %q changed at %d opened", tok, i)
			}
		}
	}
}

// flip is another base64url character than c.
func flip(c byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	return string(alphabet[(strings.IndexByte(alphabet, c)+1)%64])
}

// A sealed token of one kind opens as no other, even with its version
// byte changed to the other's: each kind has its own key.
func TestSealedTokenKinds(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	toks := []string{
		string(s.Seal(nil, UnsubscribeToken{UserID: 5, Email: "a@b.example"})),
		string(s.SealOpen(nil, 5, 9)),
		string(s.ClickKey(5).Seal(nil, 9, 2)),
	}
	for _, tok := range toks {
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		for v := byte(0); v < 8; v++ {
			raw[0] = v
			text := base64.RawURLEncoding.EncodeToString(raw)
			if text == tok {
				continue
			}
			_, ok1 := s.Open(text)
			_, _, ok2 := s.OpenOpen(text)
			_, _, _, ok3 := s.OpenClick(text)
			if ok1 || ok2 || ok3 {
				t.Errorf("%q with version %d opened: %v %v %v", tok, v, ok1, ok2, ok3)
			}
		}
	}
	if _, ok := s.Open(toks[1]); ok {
		t.Error("an open token opened as an unsubscribe token")
	}
	if _, _, ok := s.OpenOpen(toks[2]); ok {
		t.Error("a click token opened as an open token")
	}
	if _, _, _, ok := s.OpenClick(toks[1]); ok {
		t.Error("an open token opened as a click token")
	}
}

// Every sealed token opens to what it was sealed from, and to nothing
// once a character is changed, once cut, or under another key.
func TestSealedTokensRefused(t *testing.T) {
	t.Parallel()
	s, other := NewTokenSigner(testKey), NewTokenSigner(bytes.Repeat([]byte{8}, 32))
	unsub := UnsubscribeToken{UserID: 5, Email: "ann@example.com", GroupID: 2, SendID: 77}
	for _, c := range []struct {
		tok  func(*TokenSigner) string
		open func(*TokenSigner, string) bool
	}{
		{func(s *TokenSigner) string { return string(s.Seal(nil, unsub)) },
			func(s *TokenSigner, tok string) bool { got, ok := s.Open(tok); return ok && got == unsub }},
		{func(s *TokenSigner) string { return string(s.SealOpen(nil, 77, 123456)) },
			func(s *TokenSigner, tok string) bool {
				a, b, ok := s.OpenOpen(tok)
				return ok && a == 77 && b == 123456
			}},
		{func(s *TokenSigner) string { return string(s.ClickKey(77).Seal(nil, 123456, 3)) },
			func(s *TokenSigner, tok string) bool {
				a, b, l, ok := s.OpenClick(tok)
				return ok && a == 77 && b == 123456 && l == 3
			}},
	} {
		tok := c.tok(s)
		if tok[0] != 'B' || !c.open(s, tok) {
			t.Fatalf("%q does not open", tok)
		}
		if c.open(other, tok) || c.open(s, c.tok(other)) {
			t.Errorf("%q opened under another key", tok)
		}
		for i := range len(tok) {
			if c.open(s, tok[:i]+flip(tok[i])+tok[i+1:]) || c.open(s, tok[:i]) || c.open(s, tok[:i]+tok[i+1:]) {
				t.Fatalf("%q changed or cut at %d opened", tok, i)
			}
		}
		for _, bad := range []string{tok + "A", tok + "=", tok + "\n", tok[:3] + "\r" + tok[3:]} {
			if c.open(s, bad) {
				t.Errorf("%q opened", bad)
			}
		}
	}
}
