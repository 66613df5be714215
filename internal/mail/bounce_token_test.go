package mail

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestBounceTokenRoundTrip(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	for _, ids := range [][2]int64{{1, 1}, {42, 1234567}, {9999, 1 << 40}, {math.MaxInt64, math.MaxInt64}} {
		tok := string(s.SealBounce(nil, ids[0], ids[1]))
		if len(tok) > MaxBounceTokenLen || len(VERPPrefix)+len(tok) > 64 {
			t.Errorf("token of %d characters: bounces+{token} must fit 64", len(tok))
		}
		if strings.Trim(tok, "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Errorf("token %q is not lower-case base32", tok)
		}
		for _, text := range []string{tok, strings.ToUpper(tok), strings.ToUpper(tok[:5]) + tok[5:]} {
			if send, id, ok := s.OpenBounce(text); !ok || send != ids[0] || id != ids[1] {
				t.Errorf("OpenBounce(%q) = %d, %d, %v; want %v", text, send, id, ok, ids)
			}
		}
	}
	if n := len(s.SealBounce(nil, math.MaxInt64, math.MaxInt64)); n != MaxBounceTokenLen {
		t.Errorf("longest token %d characters, MaxBounceTokenLen %d", n, MaxBounceTokenLen)
	}
}

// Any change to a token (other than case), another key, another kind of
// token or garbage opens nothing.
func TestBounceTokenRefused(t *testing.T) {
	t.Parallel()
	s := NewTokenSigner(testKey)
	tok := string(s.SealBounce(nil, 42, 1234567))
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	for i := range len(tok) {
		for _, step := range []int{1, 17} {
			changed := tok[:i] + string(alphabet[(strings.IndexByte(alphabet, tok[i])+step)%32]) + tok[i+1:]
			if send, id, ok := s.OpenBounce(changed); ok {
				t.Fatalf("changed at %d (%q) opened: %d, %d", i, changed, send, id)
			}
		}
	}
	other := NewTokenSigner(bytes.Repeat([]byte{8}, 32))
	open := string(s.SealOpen(nil, 42, 1234567))
	for _, bad := range []string{
		"", "a", tok[:len(tok)-1], tok[1:], tok + "a", tok + "=", tok[:5] + "\n" + tok[5:], tok + "\r\n",
		strings.Repeat("a", MaxBounceTokenLen+1), tok[:10] + "1" + tok[11:], tok[:10] + "-" + tok[11:],
		string(other.SealBounce(nil, 42, 1234567)),
		strings.ToLower(open), // another token kind over the same ids
		string(s.SealBounce(nil, 0, 5)), string(s.SealBounce(nil, 5, 0)),
	} {
		if send, id, ok := s.OpenBounce(bad); ok {
			t.Errorf("OpenBounce(%q) = %d, %d, want refused", bad, send, id)
		}
	}
}

func TestVERP(t *testing.T) {
	t.Parallel()
	v := VERP{Domain: "bounces.example.com", Signer: NewTokenSigner(testKey)}
	addr := v.Address(7, 99)
	if !strings.HasPrefix(addr, "bounces+") || !strings.HasSuffix(addr, "@bounces.example.com") {
		t.Fatalf("address %q", addr)
	}
	for _, a := range []string{addr, strings.ToUpper(addr), "<" + addr + ">", " " + addr} {
		if send, id, ok := v.Parse(a); !ok || send != 7 || id != 99 {
			t.Errorf("Parse(%q) = %d, %d, %v", a, send, id, ok)
		}
	}
	for _, a := range []string{
		strings.Replace(addr, "@bounces.example.com", "@other.example", 1),
		strings.Replace(addr, "bounces+", "bounce+", 1),
		strings.Replace(addr, "bounces+", "bounces-", 1),
		"bounces+@bounces.example.com", "bounces@bounces.example.com", "", "@",
	} {
		if _, _, ok := v.Parse(a); ok {
			t.Errorf("Parse(%q) accepted", a)
		}
	}
	if _, _, ok := (VERP{Signer: v.Signer}).Parse(addr); ok {
		t.Error("VERP off parsed an address")
	}
}

// The per-mail cost of VERP in the engine: one MAC and the address string.
func BenchmarkVERPAddress(b *testing.B) {
	v := VERP{Domain: "bounces.example.com", Signer: NewTokenSigner(testKey)}
	b.ReportAllocs()
	var n int
	for i := range b.N {
		n += len(v.Address(4242, int64(1_000_000+i)))
	}
	if n == 0 {
		b.Fatal("no address")
	}
}

func BenchmarkVERPParse(b *testing.B) {
	v := VERP{Domain: "bounces.example.com", Signer: NewTokenSigner(testKey)}
	addr := v.Address(4242, 1_000_000)
	b.ReportAllocs()
	for range b.N {
		if _, _, ok := v.Parse(addr); !ok {
			b.Fatal("not parsed")
		}
	}
}
