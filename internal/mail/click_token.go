package mail

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"strings"
)

// Click tokens (docs/tracking.md) name a send, a delivery of it and a link
// number in the send's link table. A mail carries one per tracked link, so
// they are made per link per mail: an HMAC-SHA256 each (~0.2 µs) would
// cost a mail of 50 links 10 µs. Instead each send has its own AES-128 key,
// derived once per send from the signer's key by HMAC-SHA256, and a
// token's 128-bit tag is that key's AES encryption of the one block
// (delivery id, link number): ~20 ns. AES is a pseudorandom permutation,
// so on single-block messages it is a MAC as good as a truncated HMAC
// (128 bits; the 2^64 birthday bound is far beyond any send), and the key
// derivation binds the tag to the send.

// clickVersion marks a click token.
const clickVersion = 3

// clickKeyLabel starts the HMAC input a send's click key is derived from.
// No token the signer writes has an HMAC of an input starting with it
// (theirs start with a version byte, 1 or 2), so a published tag never
// reveals a click key.
const clickKeyLabel = "mailroom click key\x00"

// Sizes of a click token.
const (
	clickTag = 16 // AES block: the tag
	// maxClickRaw is the longest raw token: the version byte, two ids of
	// up to 63 bits (9 varint bytes), a link number of 31 bits (5), the tag.
	maxClickRaw = 1 + 9 + 9 + 5 + clickTag
	// MaxClickTokenLen bounds the text of a click token (base64url).
	MaxClickTokenLen = (maxClickRaw*8 + 5) / 6
	// MaxLink is the highest link number a click token holds (the link
	// table's integer).
	MaxLink = 1<<31 - 1
)

// ClickPath is where tracked links point: {PUBLIC_URL}{ClickPath}{token}.
const ClickPath = "/t/c/"

// ClickKey seals and opens the click tokens of one send. Safe for
// concurrent use.
type ClickKey struct {
	send  int64
	block cipher.Block
}

// ClickKey is send sendID's click key (an HMAC and an AES key schedule:
// make it once per send).
func (s *TokenSigner) ClickKey(sendID int64) ClickKey {
	var buf [len(clickKeyLabel) + binary.MaxVarintLen64 + 32]byte
	p := append(buf[:0], clickKeyLabel...)
	p = binary.AppendUvarint(p, uint64(sendID))
	sum := s.sum(p[len(p):], p)
	b, err := aes.NewCipher(sum[:16])
	if err != nil {
		panic(err) // 16 bytes are an AES-128 key
	}
	return ClickKey{send: sendID, block: b}
}

// Seal appends the click token of link number link in the mail of
// delivery id: base64url (no padding) of a version byte, the send id, the
// delivery id and the link number as varints, and the 128-bit tag. It
// allocates nothing when dst has room for MaxClickTokenLen more bytes:
// the raw token is assembled in dst's spare capacity.
func (k ClickKey) Seal(dst []byte, id int64, link int) []byte {
	n := 1 + uvarintLen(uint64(k.send)) + uvarintLen(uint64(id)) + uvarintLen(uint64(link)) + clickTag
	enc := base64.RawURLEncoding.EncodedLen(n)
	dst = slices.Grow(dst, enc+n)
	at := len(dst)
	// The raw bytes go past the room the text takes, so the encoding
	// never reads what it has written.
	raw := dst[at+enc : at+enc : at+enc+n]
	raw = append(raw, clickVersion)
	raw = binary.AppendUvarint(raw, uint64(k.send))
	raw = binary.AppendUvarint(raw, uint64(id))
	raw = binary.AppendUvarint(raw, uint64(link))
	tag := raw[len(raw) : len(raw)+clickTag]
	binary.LittleEndian.PutUint64(tag[0:8], uint64(id))
	binary.LittleEndian.PutUint64(tag[8:16], uint64(link))
	k.block.Encrypt(tag, tag)
	raw = raw[:len(raw)+clickTag]
	base64.RawURLEncoding.Encode(dst[at:at+enc], raw)
	return dst[:at+enc]
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// OpenClick reads a click token made with the same key: its send id,
// delivery id and link number. It accepts only the exact text the signer
// writes for them (the tag is recomputed and the whole token compared),
// so a token has one spelling: no padding bits, no line ends, no
// overlong varint.
func (s *TokenSigner) OpenClick(text string) (sendID, id int64, link int, ok bool) {
	if len(text) > MaxClickTokenLen || !oneText(text) {
		return 0, 0, 0, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(text)
	if err != nil || len(raw) < 1+3+clickTag || raw[0] != clickVersion {
		return 0, 0, 0, false
	}
	p := raw[1 : len(raw)-clickTag]
	var v [3]uint64
	for i := range v {
		x, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, 0, 0, false
		}
		v[i], p = x, p[n:]
	}
	if len(p) != 0 || v[0] == 0 || v[1] == 0 || v[0] > 1<<63-1 || v[1] > 1<<63-1 || v[2] > MaxLink {
		return 0, 0, 0, false
	}
	var buf [MaxClickTokenLen + maxClickRaw]byte
	want := s.ClickKey(int64(v[0])).Seal(buf[:0], int64(v[1]), int(v[2]))
	if subtle.ConstantTimeCompare(want, []byte(text)) != 1 {
		return 0, 0, 0, false
	}
	return int64(v[0]), int64(v[1]), int(v[2]), true
}

// ClickLinks makes the tracked addresses of one send's links:
// {Base}{ClickPath}{token}. Safe for concurrent use.
type ClickLinks struct {
	prefix string
	key    ClickKey
}

// Clicks is send sendID's ClickLinks.
func (l Links) Clicks(sendID int64) ClickLinks {
	return ClickLinks{prefix: l.Base + ClickPath, key: l.Signer.ClickKey(sendID)}
}

// AppendClickURL appends the tracked address of link number link in the
// mail of delivery id: ClickPrefix, then AppendClickToken's.
func (c ClickLinks) AppendClickURL(dst []byte, id int64, link int) []byte {
	return c.AppendClickToken(append(dst, c.prefix...), id, link)
}

// ClickPrefix is what every tracked address of the send starts with:
// {Base}{ClickPath}.
func (c ClickLinks) ClickPrefix() string { return c.prefix }

// AppendClickToken appends the click token of link number link in the
// mail of delivery id (base64url). With room in dst it allocates nothing.
func (c ClickLinks) AppendClickToken(dst []byte, id int64, link int) []byte {
	return c.key.Seal(dst, id, link)
}

// Tracks reports whether a link to url may be rewritten to a tracked one:
// not when it already points at mailroom's own pages under Base (the
// unsubscribe and preferences page, an open pixel, a tracked link).
func (l Links) Tracks(url string) bool {
	for _, p := range []string{UnsubscribePath, OpenPath, ClickPath} {
		if hasPrefixFold(url, l.Base+p) {
			return false
		}
	}
	return true
}

func hasPrefixFold(s, p string) bool { return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) }
