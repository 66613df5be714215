package mail

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestMessageIDRoundTrip(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	for _, ids := range [][2]int64{{1, 1}, {42, 1234567}, {math.MaxInt64, math.MaxInt64}} {
		v := string(s.AppendMessageID(nil, ids[0], ids[1], "Mail.Example"))
		if !strings.HasPrefix(v, "<") || !strings.HasSuffix(v, "@Mail.Example>") || len(v) > MaxMessageIDLen {
			t.Fatalf("Message-ID %q", v)
		}
		for _, text := range []string{v, strings.ToUpper(v), " " + v + " ", strings.ToLower(v)} {
			if send, id, ok := s.OpenMessageID(text); !ok || send != ids[0] || id != ids[1] {
				t.Errorf("OpenMessageID(%q) = %d, %d, %v; want %v", text, send, id, ok, ids)
			}
		}
	}
}

// Two installations (two keys) make different Message-IDs for the same
// delivery, and so does one installation twice (the random part); the
// ids are not readable as numbers.
func TestMessageIDUnique(t *testing.T) {
	t.Parallel()
	a, b := NewTokenSigner(testKey), NewTokenSigner(bytes.Repeat([]byte{9}, 32))
	seen := map[string]bool{}
	for _, s := range []*TokenSigner{a, b, a, b} {
		v := string(s.AppendMessageID(nil, 52, 29, "acme.example"))
		if seen[v] {
			t.Fatalf("Message-ID %q made twice", v)
		}
		seen[v] = true
		if strings.Contains(v, "52") && strings.Contains(v, "29") {
			t.Errorf("Message-ID %q shows the ids", v)
		}
	}
	// The same key restored into two installations: the random part still
	// tells their mails apart.
	c := NewTokenSigner(testKey)
	x, y := string(a.AppendMessageID(nil, 52, 29, "acme.example")), string(c.AppendMessageID(nil, 52, 29, "acme.example"))
	if x == y {
		t.Errorf("two installations with one key wrote %q twice", x)
	}
}

// What an outsider can write opens nothing: the old sequential form,
// guessed tokens, another domain, another key, another token kind.
func TestMessageIDRefused(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	v := string(s.AppendMessageID(nil, 52, 29, "acme.example"))
	local, _, _ := strings.Cut(v[1:], "@")
	token, random, _ := strings.Cut(local, ".")
	other := NewTokenSigner(bytes.Repeat([]byte{8}, 32))
	bad := []string{
		"", "<>", "<52.29@acme.example>", "<52.29@spoofed.example>",
		"<" + local + "@spoofed.example>",   // moved to another domain
		"<" + local + "@acme.example.evil>", // a longer one
		"<" + token + "@acme.example>",      // no random part
		"<" + token + ".x@acme.example>",    // a short one
		"<" + local + ">",                   // no domain
		"<" + local + "@>",                  // an empty one
		v[1:], v[:len(v)-1],                 // brackets
		"<" + string(s.SealBounce(nil, 52, 29)) + "." + random + "@acme.example>", // a return path's token
		string(other.AppendMessageID(nil, 52, 29, "acme.example")),
		"<" + strings.Repeat("a", MaxMessageIDLen) + "." + random + "@acme.example>",
	}
	// The tag moved to another send or delivery (the ids re-encoded).
	raw, err := bounceEncoding.DecodeString(token)
	if err != nil || raw[1] != 52 || raw[2] != 29 {
		t.Fatalf("token %q: % x %v", token, raw, err)
	}
	for _, at := range []int{1, 2} {
		moved := bytes.Clone(raw)
		moved[at]++
		bad = append(bad, "<"+bounceEncoding.EncodeToString(moved)+"."+random+"@acme.example>")
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	for i := range len(token) {
		bad = append(bad, "<"+token[:i]+string(alphabet[(strings.IndexByte(alphabet, token[i])+1)%32])+token[i+1:]+"."+random+"@acme.example>")
	}
	for _, text := range bad {
		if send, id, ok := s.OpenMessageID(text); ok {
			t.Errorf("OpenMessageID(%q) = %d, %d, want refused", text, send, id)
		}
	}
}

// BenchmarkMessageID: one mail's Message-ID from its send's key.
func BenchmarkMessageID(b *testing.B) {
	k := NewTokenSigner(testKey).MessageIDKey(52, "acme.example")
	buf := make([]byte, 0, 2*MaxMessageIDLen)
	b.ReportAllocs()
	for i := range b.N {
		buf = k.Append(buf[:0], int64(i+1))
	}
}
