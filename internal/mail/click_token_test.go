package mail

import (
	"bytes"
	"crypto/aes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

func TestClickToken(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	for _, c := range []struct {
		send, id int64
		link     int
	}{{1, 1, 0}, {42, 1234567, 3}, {7, 300, 200}, {math.MaxInt64, math.MaxInt64, MaxLink}} {
		tok := string(s.ClickKey(c.send).Seal(nil, c.id, c.link))
		if len(tok) > MaxClickTokenLen || strings.Trim(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			t.Fatalf("token %q: not base64url of at most %d characters", tok, MaxClickTokenLen)
		}
		send, id, link, ok := s.OpenClick(tok)
		if !ok || send != c.send || id != c.id || link != c.link {
			t.Fatalf("OpenClick(Seal(%+v)) = %d %d %d %v", c, send, id, link, ok)
		}
		// Every byte changed, every cut, line ends: refused.
		for i := range len(tok) {
			b := []byte(tok)
			b[i] ^= 1
			if _, _, _, ok := s.OpenClick(string(b)); ok {
				t.Fatalf("%q changed at %d opened", tok, i)
			}
			if _, _, _, ok := s.OpenClick(tok[:i]); ok {
				t.Fatalf("%q cut at %d opened", tok, i)
			}
		}
		for _, bad := range []string{tok + "A", tok + "\n", "\r\n" + tok, tok[:3] + "\r" + tok[3:]} {
			if _, _, _, ok := s.OpenClick(bad); ok {
				t.Fatalf("%q opened", bad)
			}
		}
		if _, _, ok := s.OpenOpen(tok); ok {
			t.Fatal("a click token opened as an open-pixel token")
		}
		if _, ok := s.Open(tok); ok {
			t.Fatal("a click token opened as an unsubscribe token")
		}
	}
	// Another send's key, another delivery, another link: another tag.
	tok := string(s.ClickKey(5).Seal(nil, 9, 2))
	for _, other := range []string{string(s.ClickKey(6).Seal(nil, 9, 2)), string(s.ClickKey(5).Seal(nil, 10, 2)), string(s.ClickKey(5).Seal(nil, 9, 3))} {
		if other[len(other)-22:] == tok[len(tok)-22:] {
			t.Fatalf("%q and %q share a tag", tok, other)
		}
	}
	// A changed IV under this token's ciphertext; a token of another key;
	// ids out of range; the open-pixel and unsubscribe tokens.
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	otherRaw, _ := base64.RawURLEncoding.DecodeString(string(s.ClickKey(5).Seal(nil, 10, 2)))
	swapped := append(append([]byte{raw[0]}, otherRaw[1:17]...), raw[17:]...)
	for _, bad := range []string{
		"", "A", base64.RawURLEncoding.EncodeToString(swapped),
		string(NewTokenSigner(bytes.Repeat([]byte{8}, 32)).ClickKey(5).Seal(nil, 9, 2)),
		string(s.ClickKey(0).Seal(nil, 9, 2)), string(s.ClickKey(5).Seal(nil, 0, 2)),
		string(s.ClickKey(5).Seal(nil, -1, 2)), string(s.ClickKey(5).Seal(nil, 9, -1)), string(s.ClickKey(5).Seal(nil, 9, MaxLink+1)),
		string(s.clickV3(nil, 0, 9, 2)), string(s.clickV3(nil, 5, 9, MaxLink+1)),
		string(s.SealOpen(nil, 5, 9)), string(s.Seal(nil, UnsubscribeToken{UserID: 5, Email: "a@b.example"})),
		strings.Repeat("A", MaxClickTokenLen+1),
	} {
		if send, id, link, ok := s.OpenClick(bad); ok {
			t.Errorf("OpenClick(%q) = %d %d %d, want refused", bad, send, id, link)
		}
	}
	// In a version-3 token an overlong varint spells the same ids:
	// refused, as its tag covers the ids and not their bytes.
	raw3, _ := base64.RawURLEncoding.DecodeString(string(s.clickV3(nil, 5, 9, 2)))
	long := []byte{clickVersion, 5 | 0x80, 0}
	long = append(long, raw3[2:]...)
	if _, _, _, ok := s.OpenClick(base64.RawURLEncoding.EncodeToString(long)); ok {
		t.Error("an overlong varint opened")
	}
}

// The version-3 token, still opened, is what docs/tracking.md writes
// down: the send's AES-128 key is the first half of HMAC-SHA256(key,
// "mailroom click key\x00" || uvarint(send)), the tag that key's
// encryption of (delivery id, link number) as two little-endian 64-bit
// words.
func TestClickTokenV3Format(t *testing.T) {
	t.Parallel()
	m := hmac.New(sha256.New, testKey)
	m.Write(append([]byte("mailroom click key\x00"), binary.AppendUvarint(nil, 77)...))
	block, err := aes.NewCipher(m.Sum(nil)[:16])
	if err != nil {
		t.Fatal(err)
	}
	var tag [16]byte
	binary.LittleEndian.PutUint64(tag[:8], 1234)
	binary.LittleEndian.PutUint64(tag[8:], 5)
	block.Encrypt(tag[:], tag[:])
	want := append([]byte{3, 77}, binary.AppendUvarint(nil, 1234)...)
	want = append(append(want, 5), tag[:]...)
	s := NewTokenSigner(testKey)
	tok := base64.RawURLEncoding.EncodeToString(want)
	if got := string(s.clickV3(nil, 77, 1234, 5)); got != tok {
		t.Fatalf("token %q, want %q", got, tok)
	}
	if send, id, link, ok := s.OpenClick(tok); !ok || send != 77 || id != 1234 || link != 5 {
		t.Fatalf("OpenClick(%q) = %d %d %d %v", tok, send, id, link, ok)
	}
}

func TestClickLinks(t *testing.T) {
	l := Links{Base: "https://m.example", Signer: NewTokenSigner(testKey)}
	c := l.Clicks(12)
	u := string(c.AppendClickURL([]byte("x"), 34, 5))
	tok, ok := strings.CutPrefix(u, "xhttps://m.example/t/c/")
	if !ok {
		t.Fatalf("URL %q", u)
	}
	if send, id, link, ok := l.Signer.OpenClick(tok); !ok || send != 12 || id != 34 || link != 5 {
		t.Fatalf("OpenClick = %d %d %d %v", send, id, link, ok)
	}
	dst := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { dst = c.AppendClickURL(dst[:0], 1<<40, 77) }); n != 0 {
		t.Errorf("%v allocations per URL", n)
	}
	for u, want := range map[string]bool{
		"https://shop.example/a":          true,
		"https://m.example/about":         true,
		"https://m.example/unsubscribe/x": false,
		"HTTPS://M.EXAMPLE/o/l/t":         false,
		"https://m.example/t/c/abc":       false,
	} {
		if l.Tracks(u) != want {
			t.Errorf("Tracks(%q) = %v", u, !want)
		}
	}
}

// BenchmarkClickURL is a tracked link's cost per mail; BenchmarkOpenToken
// an HMAC-sealed token's, for comparison (docs/tracking.md).
func BenchmarkClickURL(b *testing.B) {
	c := Links{Base: "https://mail.example", Signer: NewTokenSigner(testKey)}.Clicks(12345)
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	id := int64(1_000_000)
	for b.Loop() {
		id++
		dst = c.AppendClickURL(dst[:0], id, 7)
	}
}

func BenchmarkOpenToken(b *testing.B) {
	s := NewTokenSigner(testKey)
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	id := int64(1_000_000)
	for b.Loop() {
		id++
		dst = s.SealOpen(dst[:0], 12345, id)
	}
}

func BenchmarkOpenClick(b *testing.B) {
	s := NewTokenSigner(testKey)
	tok := string(s.ClickKey(12345).Seal(nil, 1_000_000, 7))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, ok := s.OpenClick(tok); !ok {
			b.Fatal("refused")
		}
	}
}
