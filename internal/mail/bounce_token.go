package mail

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"strings"
)

// bounceVersion marks a bounce (VERP) token: a send id and a delivery id.
// The version byte is under the MAC, so an open-pixel token (the same ids,
// version 2) never passes for a bounce token.
const bounceVersion = 3

// bounceEncoding is lower-case base32 without padding: a token survives an
// MTA that changes the case of a local part (Open lower-cases first), and
// holds only letters and digits, valid in any local part.
var bounceEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// VERPPrefix starts the local part of every return path: bounces+{token}.
const VERPPrefix = "bounces+"

// MaxBounceTokenLen is the longest bounce token: a version byte, two ids
// of 63 bits (9 varint bytes each) and the 128-bit MAC, 35 bytes in 56
// base32 characters, so that bounces+{token} fits the 64 characters a
// local part may have (RFC 5321 4.5.3.1.1).
const MaxBounceTokenLen = (1 + 2*9 + tokenMAC) * 8 / 5

// SealBounce appends the bounce token of delivery id of send sendID:
// lower-case base32 of a version byte, the two ids as varints and a
// 128-bit HMAC-SHA256 of them.
// The MAC and its input live in a pooled scratch: an engine worker seals
// one per mail, and nothing of it is allocated.
func (s *TokenSigner) SealBounce(dst []byte, sendID, id int64) []byte {
	sc, _ := s.scratch.Get().(*macScratch)
	if sc == nil {
		sc = &macScratch{}
	}
	p := append(sc.buf[:0], bounceVersion)
	p = binary.AppendUvarint(p, uint64(sendID))
	p = binary.AppendUvarint(p, uint64(id))
	p = s.sum(p, p)
	dst = bounceEncoding.AppendEncode(dst, p[:len(p)-sha256.Size+tokenMAC])
	s.scratch.Put(sc)
	return dst
}

// macScratch is room for a bounce token's bytes and their MAC.
type macScratch struct {
	buf [1 + 2*binary.MaxVarintLen64 + sha256.Size]byte
}

// OpenBounce reads a token made by SealBounce with the same key, in any
// case.
func (s *TokenSigner) OpenBounce(text string) (sendID, id int64, ok bool) {
	var raw [maxBase32Raw]byte
	n, ok := decodeBase32(raw[:], text)
	if !ok || n < 1+2+tokenMAC || raw[0] != bounceVersion {
		return 0, 0, false
	}
	body, mac := raw[:n-tokenMAC], raw[n-tokenMAC:n]
	var sum [sha256.Size]byte
	if !hmac.Equal(s.sum(sum[:0], body)[:tokenMAC], mac) {
		return 0, 0, false
	}
	return readIDs(body[1:])
}

// maxBase32Raw is room for the bytes of the longest lower-case base32
// token (a return path's, a Message-ID's).
const maxBase32Raw = MaxBounceTokenLen * 5 / 8

// decodeBase32 decodes text, lower-case base32 in any case, into raw
// (maxBase32Raw bytes): ok only for the one text the encoder writes for
// its bytes (no line ends, which the decoder skips; no set padding bits).
func decodeBase32(raw []byte, text string) (n int, ok bool) {
	if len(text) > MaxBounceTokenLen || len(text) < 8 {
		return 0, false
	}
	var low [MaxBounceTokenLen]byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if !('a' <= c && c <= 'z' || '2' <= c && c <= '7') { // also refuses CR and LF, which the decoder skips
			return 0, false
		}
		low[i] = c
	}
	n, err := bounceEncoding.Decode(raw[:maxBase32Raw], low[:len(text)])
	if err != nil {
		return 0, false
	}
	// One text per token: base32 has no strict mode, so the bits past the
	// last whole byte must be zero (the encoder writes them so).
	if bits := len(text) * 5 % 8; bits > 0 && decodeChar(low[len(text)-1])&(1<<bits-1) != 0 {
		return 0, false
	}
	return n, true
}

// readIDs reads exactly two positive 63-bit varints, each in the one
// spelling binary.AppendUvarint writes (readUvarint), a send id and a
// delivery id.
func readIDs(p []byte) (sendID, id int64, ok bool) {
	a, i := readUvarint(p)
	if i <= 0 {
		return 0, 0, false
	}
	b, j := readUvarint(p[i:])
	if j <= 0 || i+j != len(p) || a == 0 || b == 0 || a > 1<<63-1 || b > 1<<63-1 {
		return 0, 0, false
	}
	return int64(a), int64(b), true
}

// decodeChar is the 5-bit value of a lower-case base32 character.
func decodeChar(c byte) byte {
	if c >= 'a' {
		return c - 'a'
	}
	return c - '2' + 26
}

// VERP makes and reads the per-delivery return paths
// bounces+{token}@{Domain} (variable envelope return path): a bounce or a
// feedback report sent back to one names the delivery it is about.
type VERP struct {
	Domain string // BOUNCE_DOMAIN; empty: VERP is off
	Signer *TokenSigner
}

// On reports whether return paths are made.
func (v VERP) On() bool { return v.Domain != "" && v.Signer != nil }

// Address is the return path of delivery id of send sendID (one MAC and
// one allocation).
func (v VERP) Address(sendID, id int64) string {
	var buf [len(VERPPrefix) + MaxBounceTokenLen + 1 + 255]byte
	b := append(buf[:0], VERPPrefix...)
	b = v.Signer.SealBounce(b, sendID, id)
	b = append(b, '@')
	b = append(b, v.Domain...)
	return string(b)
}

// Parse reads a return path Address made (any case, angle brackets
// allowed): ok only for a valid token at Domain.
func (v VERP) Parse(addr string) (sendID, id int64, ok bool) {
	if !v.On() {
		return 0, 0, false
	}
	local, domain, found := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(addr), "<"), ">"), "@")
	if !found || !strings.EqualFold(domain, v.Domain) || len(local) <= len(VERPPrefix) ||
		!strings.EqualFold(local[:len(VERPPrefix)], VERPPrefix) {
		return 0, 0, false
	}
	return v.Signer.OpenBounce(local[len(VERPPrefix):])
}
