package mail

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"slices"
	"strings"
)

// A mail's Message-ID is <{token}.{random}@{domain}> (docs/bounces.md):
//   - token is lower-case base32 of a version byte, the send id and the
//     delivery id as varints, and a 128-bit tag: the AES-128 encryption of
//     the one block (delivery id, a constant) under a key derived by
//     HMAC-SHA256 from the signer's key, the send id and the domain (lower
//     case). Nobody without the key can make one, nor move one to another
//     send or domain: a report quoting it names its delivery as surely as
//     the return path does. AES on a single block is a pseudorandom
//     permutation, so the tag is a MAC as good as a truncated HMAC (the
//     click tokens' version-3 argument); the key is made once per send,
//     and a whole Message-ID, random part included, costs ~90 ns
//     (BenchmarkMessageID) where an HMAC a mail cost ~330;
//   - random is 64 bits from crypto/rand, new in every mail, so that two
//     installations (two keys, or one key restored into two databases)
//     sending for one domain never write the same Message-ID.

// messageIDVersion marks a Message-ID token (the return path's is 3).
const messageIDVersion = 4

// messageIDKeyLabel starts the HMAC input a Message-ID key is derived
// from; no other MAC the signer makes has an input starting with it.
const messageIDKeyLabel = "mailroom message-id key\x00"

// Sizes of a Message-ID.
const (
	messageIDTag    = 16            // AES block: the tag
	messageIDRandom = (8*8 + 4) / 5 // 8 random bytes in base32: 13 characters
	maxMessageIDRaw = 1 + 9 + 9 + messageIDTag
	// MaxMessageIDDomain is the longest domain a Message-ID is read at.
	MaxMessageIDDomain = 255
	// MaxMessageIDLen bounds a Message-ID: angle brackets, the token, a
	// dot, the random part, '@' and the domain.
	MaxMessageIDLen = 2 + (maxMessageIDRaw*8+4)/5 + 1 + messageIDRandom + 1 + MaxMessageIDDomain
)

// MessageIDKey makes the Message-IDs of one send from one domain. Safe
// for concurrent use.
type MessageIDKey struct {
	send   int64
	domain string
	block  cipher.Block
}

// MessageIDKey is the key of send sendID's Message-IDs at domain (an
// HMAC and an AES key schedule: make it once per send).
func (s *TokenSigner) MessageIDKey(sendID int64, domain string) MessageIDKey {
	p := append([]byte(messageIDKeyLabel), binary.AppendUvarint(nil, uint64(sendID))...)
	p = append(p, strings.ToLower(domain)...)
	b, err := aes.NewCipher(s.sum(nil, p)[:16])
	if err != nil {
		panic(err) // 16 bytes are an AES-128 key
	}
	return MessageIDKey{send: sendID, domain: domain, block: b}
}

// Append appends a new Message-ID of delivery id, angle brackets
// included. With room in dst it allocates nothing: the raw token is
// assembled in dst's spare capacity past the text (so the encoding never
// reads what it has written), and the random bytes too (AppendRandomID).
func (k MessageIDKey) Append(dst []byte, id int64) []byte {
	n := 1 + uvarintLen(uint64(k.send)) + uvarintLen(uint64(id)) + messageIDTag
	text := 1 + bounceEncoding.EncodedLen(n) + 1 + messageIDRandom + 1 + len(k.domain) + 1
	dst = slices.Grow(dst, text+n)
	at := len(dst)
	raw := dst[at+text : at+text : at+text+n]
	raw = append(raw, messageIDVersion)
	raw = binary.AppendUvarint(raw, uint64(k.send))
	raw = binary.AppendUvarint(raw, uint64(id))
	k.tag(raw[len(raw):len(raw)+messageIDTag], id)
	raw = raw[:n]

	dst = append(dst, '<')
	dst = bounceEncoding.AppendEncode(dst, raw)
	dst = append(dst, '.')
	dst = AppendRandomID(dst)
	dst = append(dst, '@')
	dst = append(dst, k.domain...)
	return append(dst, '>')
}

// tag writes delivery id's tag to t (16 bytes).
func (k MessageIDKey) tag(t []byte, id int64) {
	binary.LittleEndian.PutUint64(t[0:8], uint64(id))
	copy(t[8:16], "mrMsgID\x00")
	k.block.Encrypt(t, t)
}

// OpenMessageID reads a Message-ID made by a MessageIDKey of the same
// signer (angle brackets and surrounding space allowed, the token and the
// domain in any case): the send and delivery it was made for. Anything
// else (another key, another domain than the one it was made at, an older
// form, an altered token) is not ok.
func (s *TokenSigner) OpenMessageID(v string) (sendID, id int64, ok bool) {
	v = strings.TrimSpace(v)
	if len(v) > MaxMessageIDLen || len(v) < 2 || v[0] != '<' || v[len(v)-1] != '>' {
		return 0, 0, false
	}
	at := strings.LastIndexByte(v, '@')
	if at < 0 {
		return 0, 0, false
	}
	local, domain := v[1:at], v[at+1:len(v)-1]
	token, random, found := strings.Cut(local, ".")
	if !found || len(random) != messageIDRandom || domain == "" || len(domain) > MaxMessageIDDomain {
		return 0, 0, false
	}
	var raw [maxBase32Raw]byte
	n, ok := decodeBase32(raw[:], token)
	if !ok || n < 1+2+messageIDTag || raw[0] != messageIDVersion {
		return 0, 0, false
	}
	sendID, id, ok = readIDs(raw[1 : n-messageIDTag])
	if !ok {
		return 0, 0, false
	}
	var want [messageIDTag]byte
	s.MessageIDKey(sendID, domain).tag(want[:], id)
	if subtle.ConstantTimeCompare(want[:], raw[n-messageIDTag:n]) != 1 {
		return 0, 0, false
	}
	return sendID, id, true
}

// AppendRandomID appends 64 random bits (crypto/rand) in lower-case
// base32, 13 characters. With room in dst it allocates nothing (the bytes
// are drawn into its spare capacity).
func AppendRandomID(dst []byte) []byte {
	dst = slices.Grow(dst, messageIDRandom+8)
	r := dst[len(dst)+messageIDRandom : len(dst)+messageIDRandom+8]
	rand.Read(r) // never fails (crypto/rand since Go 1.24)
	return bounceEncoding.AppendEncode(dst, r)
}

// AppendMessageID appends a new Message-ID of delivery id of send sendID
// at domain: MessageIDKey, then Append (for one mail; a send makes its
// key once).
func (s *TokenSigner) AppendMessageID(dst []byte, sendID, id int64, domain string) []byte {
	return s.MessageIDKey(sendID, domain).Append(dst, id)
}
