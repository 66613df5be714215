package mail

import (
	"crypto/rand"
	"strings"
)

// A mail's Message-ID is <{token}.{random}@{domain}> (docs/bounces.md):
//   - token names the send and the delivery, under a 128-bit MAC that also
//     covers the domain (lower case), so that nobody without the key can
//     make one, nor move one to another domain: a report quoting it names
//     its delivery as surely as the return path does;
//   - random is 64 bits from crypto/rand, new in every mail, so that two
//     installations (two keys, or one key restored into two databases)
//     sending for one domain never write the same Message-ID.

// messageIDVersion marks a Message-ID token; the version byte is under the
// MAC, so a return path's token (the same ids, version 3) is no
// Message-ID's and the other way round.
const messageIDVersion = 4

// messageIDRandom is the length of the random part: 8 bytes in base32.
const messageIDRandom = (8*8 + 4) / 5

// MaxMessageIDLen bounds a Message-ID: angle brackets, the token, a dot,
// the random part, '@' and a domain of 255 bytes.
const MaxMessageIDLen = 2 + MaxBounceTokenLen + 1 + messageIDRandom + 1 + 255

// AppendMessageID appends a new Message-ID for delivery id of send sendID
// sent from domain (no angle brackets, no spaces: the caller cleans it),
// angle brackets included: one MAC and eight random bytes.
func (s *TokenSigner) AppendMessageID(dst []byte, sendID, id int64, domain string) []byte {
	dst = append(dst, '<')
	dst = s.sealIDs(dst, messageIDVersion, sendID, id, strings.ToLower(domain))
	dst = append(dst, '.')
	dst = AppendRandomID(dst)
	dst = append(dst, '@')
	dst = append(dst, domain...)
	return append(dst, '>')
}

// AppendRandomID appends 64 random bits (crypto/rand) in lower-case base32,
// 13 characters.
func AppendRandomID(dst []byte) []byte {
	var r [8]byte
	rand.Read(r[:]) // never fails (crypto/rand since Go 1.24)
	return bounceEncoding.AppendEncode(dst, r[:])
}

// OpenMessageID reads a Message-ID made by AppendMessageID with the same
// key (angle brackets and surrounding space allowed, the token and the
// domain in any case): the send and delivery it was made for. Anything
// else (another key, another domain than the one sealed, an older form,
// an altered token) is not ok.
func (s *TokenSigner) OpenMessageID(v string) (sendID, id int64, ok bool) {
	v = strings.TrimSpace(v)
	if len(v) > MaxMessageIDLen || len(v) < 2 || v[0] != '<' || v[len(v)-1] != '>' {
		return 0, 0, false
	}
	at := strings.LastIndexByte(v, '@')
	if at < 0 || len(v)-at-2 > maxBound {
		return 0, 0, false
	}
	local, domain := v[1:at], v[at+1:len(v)-1]
	token, random, found := strings.Cut(local, ".")
	if !found || len(random) != messageIDRandom || domain == "" {
		return 0, 0, false
	}
	return s.openIDs(token, messageIDVersion, strings.ToLower(domain))
}
