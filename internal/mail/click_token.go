package mail

import (
	"crypto/aes"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// Click tokens (docs/tracking.md) name a send, a delivery of it and a link
// number in the send's link table. A mail carries one per tracked link, so
// they are made per link per mail and must be cheap: a token is the
// AES-SIV sealing (siv) of the three ids as varints under the signer's
// click key, two AES blocks for the usual ids (up to 16 bytes of them),
// well under 100 ns with the encoding (BenchmarkClickURL). Nothing of the
// ids shows: the send, the delivery and the link number are all inside
// the ciphertext.
//
// The version-3 tokens mails sent before carry are still opened: base64url
// of the version, the three ids as varints in clear and a 128-bit tag, the
// AES encryption of the block (delivery id, link number) under the send's
// own AES-128 key, HMAC-SHA256(key, clickKeyLabel || uvarint(send))'s
// first half. (AES is a pseudorandom permutation, so on single-block
// messages it is a MAC as good as a truncated HMAC.)

// clickKeyLabel starts the HMAC input a version-3 token's send key is
// derived from. No token the signer writes has an HMAC of an input
// starting with it (theirs start with a version byte, 1 or 2), so a
// published tag never reveals a click key.
const clickKeyLabel = "mailroom click key\x00"

// Sizes of a click token.
const (
	clickTag = 16 // AES block: a version-3 token's tag
	// maxClickPlain is the most a click token holds: two ids of up to 63
	// bits (9 varint bytes) and a link number of 31 bits (5).
	maxClickPlain = 9 + 9 + 5
	// maxClickRaw is the longest raw token: the version byte, the ids and
	// the IV (in version 3, the tag).
	maxClickRaw = 1 + maxClickPlain + sivIV
	// MaxClickTokenLen bounds the text of a click token (base64url).
	MaxClickTokenLen = (maxClickRaw*8 + 5) / 6
	// MaxLink is the highest link number a click token holds (the link
	// table's integer).
	MaxLink = 1<<31 - 1
)

// ClickPath is where tracked links point: {PUBLIC_URL}{ClickPath}{token}.
const ClickPath = "/t/c/"

// ClickKey seals the click tokens of one send. Safe for concurrent use.
type ClickKey struct {
	send int64
	siv  *siv
}

// ClickKey is send sendID's click key (cheap: the AES keys are the
// signer's).
func (s *TokenSigner) ClickKey(sendID int64) ClickKey {
	return ClickKey{send: sendID, siv: s.click}
}

// Seal appends the click token of link number link in the mail of
// delivery id: base64url (no padding) of a version byte and the AES-SIV
// sealing of the send id, the delivery id and the link number as varints.
// It allocates nothing when dst has room for ClickRoom more bytes: the
// raw token is assembled in dst's spare capacity.
func (k ClickKey) Seal(dst []byte, id int64, link int) []byte {
	var buf [3 * binary.MaxVarintLen64]byte
	p := binary.AppendUvarint(buf[:0], uint64(k.send))
	p = binary.AppendUvarint(p, uint64(id))
	p = binary.AppendUvarint(p, uint64(link))
	return k.siv.appendToken(dst, clickSIVVersion, p)
}

// ClickRoom is the spare capacity in dst with which Seal (and
// AppendClickToken) allocates nothing: sealRoom(maxClickPlain), the text,
// the raw bytes and a block of scratch.
const ClickRoom = MaxClickTokenLen + maxClickRaw + 16

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// OpenClick reads a click token made with the same key (or a version-3
// one): its send id, delivery id and link number. It accepts only the
// exact text the signer writes for them, so a token has one spelling: no
// padding bits, no line ends, no overlong varint.
func (s *TokenSigner) OpenClick(text string) (sendID, id int64, link int, ok bool) {
	raw, ok := decodeToken(text, MaxClickTokenLen)
	if !ok {
		return 0, 0, 0, false
	}
	var p []byte
	ok = false // a version neither case names
	switch raw[0] {
	case clickSIVVersion:
		p, ok = s.click.openRaw(raw)
	case clickVersion:
		if len(raw) > 1+clickTag {
			p, ok = raw[1:len(raw)-clickTag], true // checked below
		}
	}
	if !ok {
		return 0, 0, 0, false
	}
	var v [3]uint64
	for i := range v {
		x, n := readUvarint(p)
		if n <= 0 {
			return 0, 0, 0, false
		}
		v[i], p = x, p[n:]
	}
	if len(p) != 0 || v[0] == 0 || v[1] == 0 || v[0] > 1<<63-1 || v[1] > 1<<63-1 || v[2] > MaxLink {
		return 0, 0, 0, false
	}
	if raw[0] == clickVersion {
		var buf [MaxClickTokenLen + maxClickRaw]byte
		want := s.clickV3(buf[:0], int64(v[0]), int64(v[1]), int(v[2]))
		if subtle.ConstantTimeCompare(want, []byte(text)) != 1 {
			return 0, 0, 0, false
		}
	}
	return int64(v[0]), int64(v[1]), int(v[2]), true
}

// clickV3 appends the version-3 click token of link number link in the
// mail of delivery id of send, the form OpenClick still checks: base64url
// of the version, the three ids as varints and the tag (see above).
func (s *TokenSigner) clickV3(dst []byte, send, id int64, link int) []byte {
	var kb [len(clickKeyLabel) + binary.MaxVarintLen64 + 32]byte
	kp := append(kb[:0], clickKeyLabel...)
	kp = binary.AppendUvarint(kp, uint64(send))
	sum := s.sum(kp[len(kp):], kp)
	block, err := aes.NewCipher(sum[:16])
	if err != nil {
		panic(err) // 16 bytes are an AES-128 key
	}
	raw := make([]byte, 0, maxClickRaw+binary.MaxVarintLen64)
	raw = append(raw, clickVersion)
	raw = binary.AppendUvarint(raw, uint64(send))
	raw = binary.AppendUvarint(raw, uint64(id))
	raw = binary.AppendUvarint(raw, uint64(link))
	tag := raw[len(raw) : len(raw)+clickTag]
	binary.LittleEndian.PutUint64(tag[0:8], uint64(id))
	binary.LittleEndian.PutUint64(tag[8:16], uint64(link))
	block.Encrypt(tag, tag)
	return base64.RawURLEncoding.AppendEncode(dst, raw[:len(raw)+clickTag])
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
