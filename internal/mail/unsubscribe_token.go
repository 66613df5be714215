package mail

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"slices"
	"strings"
	"sync"
)

// UnsubscribeToken is what a mail's unsubscribe and preferences links
// carry: who the mail went to and what it came from. It is encrypted and
// authenticated, so a link shows none of it and cannot be forged or
// altered to reach another address or account, and self-contained, so it
// still works after the contact or the delivery row is gone.
type UnsubscribeToken struct {
	UserID       int64
	Email        Email
	GroupID      int64 // the mail's unsubscribe group; 0 none
	SendID       int64 // the single send the mail belongs to; 0 none
	AutomationID int64 // the automation the mail belongs to; 0 none
}

// Token versions, the first byte of every token. The tokens of versions
// 1, 2 and 3 (the address and ids in clear under a MAC) are no longer
// made but still opened: links in mails already sent keep working.
const (
	tokenVersion       = 1 // unsubscribe, in clear
	openVersion        = 2 // open pixel, in clear
	clickVersion       = 3 // click, in clear
	unsubscribeVersion = 4 // unsubscribe, sealed
	openSIVVersion     = 5 // open pixel, sealed
	clickSIVVersion    = 6 // click, sealed
)

// Sizes of a token: the MAC of the old versions, the synthetic IV of the
// sealed ones, and the longest encoded token of either.
const (
	tokenMAC = 16 // bytes of HMAC-SHA256 kept: 128 bits
	sivIV    = 16 // AES-SIV's synthetic IV, which is also its tag
	// maxUnsubscribePlain is the longest content of an unsubscribe token:
	// four full varints and an address of 254 bytes; maxUnsubscribeRaw
	// adds the version and the IV (or, in version 1, the MAC).
	maxUnsubscribePlain = 4*binary.MaxVarintLen64 + 254
	maxUnsubscribeRaw   = 1 + maxUnsubscribePlain + sivIV
	// MaxTokenLen bounds the text of a token (base64url).
	MaxTokenLen = (maxUnsubscribeRaw+2)/3*4 + 4
	// maxOpenTokenLen bounds the text of an open-pixel token.
	maxOpenTokenLen = 64
)

// sivKeyLabel starts the HMAC input each sealed token kind's AES-SIV key
// is derived from, followed by the kind's name. No other HMAC input under
// the signer's key starts with it (the old tokens' start with their
// version byte, 1 to 3, a click key's with clickKeyLabel), so no MAC a
// link shows reveals a key.
const sivKeyLabel = "mailroom token key\x00"

// TokenSigner seals and opens the tokens of mails' links (unsubscribe,
// open pixel, click) and return paths with one secret key. Safe for
// concurrent use.
type TokenSigner struct {
	macs    sync.Pool
	scratch sync.Pool // *macScratch (bounce tokens)
	unsub   *siv
	open    *siv
	click   *siv
}

// NewTokenSigner signs with key (32 random bytes; the database keeps it).
// It derives one AES-SIV key per kind of sealed token, so a token of one
// kind never opens as another.
func NewTokenSigner(key []byte) *TokenSigner {
	k := append([]byte(nil), key...)
	s := &TokenSigner{}
	s.macs.New = func() any { return hmac.New(sha256.New, k) }
	s.unsub = s.sivKey("unsubscribe", unsubscribeVersion)
	s.open = s.sivKey("open", openSIVVersion)
	s.click = s.sivKey("click", clickSIVVersion)
	return s
}

// sivKey is the AES-SIV key of one kind of token: HMAC-SHA256(key,
// sivKeyLabel || name), its version byte as associated data.
func (s *TokenSigner) sivKey(name string, version byte) *siv {
	return newSIV(s.sum(nil, []byte(sivKeyLabel+name)), []byte{version})
}

// Seal appends t's token to dst: base64url (no padding) of a version
// byte and the AES-SIV sealing (a 128-bit synthetic IV, then the
// ciphertext) of the ids as varints followed by the address.
func (s *TokenSigner) Seal(dst []byte, t UnsubscribeToken) []byte {
	var buf [4*binary.MaxVarintLen64 + 320]byte
	p := binary.AppendUvarint(buf[:0], uint64(t.UserID))
	p = binary.AppendUvarint(p, uint64(t.GroupID))
	p = binary.AppendUvarint(p, uint64(t.SendID))
	p = binary.AppendUvarint(p, uint64(t.AutomationID))
	p = append(p, t.Email...)
	return s.unsub.appendToken(dst, unsubscribeVersion, p)
}

// sum appends the HMAC of msg to dst.
func (s *TokenSigner) sum(dst, msg []byte) []byte {
	m := s.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(msg)
	dst = m.Sum(dst)
	s.macs.Put(m)
	return dst
}

// Open reads a token made by Seal with the same key, or by its version-1
// predecessor (the same fields in clear under an HMAC); ok is false for
// anything else (altered, cut, another key, another kind).
func (s *TokenSigner) Open(text string) (t UnsubscribeToken, ok bool) {
	raw, ok := decodeToken(text, MaxTokenLen)
	if !ok {
		return t, false
	}
	var p []byte
	ok = false // a version neither case names
	switch raw[0] {
	case unsubscribeVersion:
		p, ok = s.unsub.openRaw(raw)
	case tokenVersion:
		p, ok = s.checkMAC(raw)
	}
	if !ok {
		return t, false
	}
	var ids [4]int64
	for i := range ids {
		v, n := readUvarint(p)
		if n <= 0 || v > 1<<63-1 {
			return t, false
		}
		ids[i], p = int64(v), p[n:]
	}
	if len(p) == 0 || ids[0] <= 0 {
		return t, false
	}
	return UnsubscribeToken{UserID: ids[0], GroupID: ids[1], SendID: ids[2], AutomationID: ids[3], Email: Email(p)}, true
}

// checkMAC checks an old token's raw bytes (version, body, 128-bit
// HMAC-SHA256 of version and body) and answers its body.
func (s *TokenSigner) checkMAC(raw []byte) ([]byte, bool) {
	if len(raw) < 1+tokenMAC {
		return nil, false
	}
	body, mac := raw[:len(raw)-tokenMAC], raw[len(raw)-tokenMAC:]
	var sum [sha256.Size]byte
	if !hmac.Equal(s.sum(sum[:0], body)[:tokenMAC], mac) {
		return nil, false
	}
	return body[1:], true
}

// strictB64 is the one encoding of every token's text.
var strictB64 = base64.RawURLEncoding.Strict()

// decodeToken is the raw bytes of a token's text: refused when longer
// than max (checked before decoding), empty, with a CR or LF, or not
// strict base64url.
func decodeToken(text string, max int) ([]byte, bool) {
	if len(text) > max || !oneText(text) {
		return nil, false
	}
	raw, err := strictB64.DecodeString(text)
	if err != nil || len(raw) == 0 {
		return nil, false
	}
	return raw, true
}

// oneText refuses a CR or LF, which base64's decoder skips even in Strict
// mode: with them a token had endless texts ("…%0A…" in a link opened the
// same token). Strict decoding refuses the other ambiguity, padding bits.
func oneText(text string) bool { return !strings.ContainsAny(text, "\r\n") }

// appendToken appends a sealed token's text to dst: base64url (no
// padding) of version, then p's synthetic IV and encryption. The raw
// bytes and the cipher's scratch are made in dst's spare capacity past
// the text (so the encoding never reads what it has written): with room
// for sealRoom(len(p)) more bytes it allocates nothing.
func (k *siv) appendToken(dst []byte, version byte, p []byte) []byte {
	n := 1 + sivIV + len(p)
	enc := base64.RawURLEncoding.EncodedLen(n)
	dst = slices.Grow(dst, sealRoom(len(p)))
	at := len(dst)
	raw := dst[at+enc : at+enc+n+16]
	raw[0] = version
	k.seal(raw[1:1+sivIV], raw[1+sivIV:n], p, raw[n:])
	base64.RawURLEncoding.Encode(dst[at:at+enc], raw[:n])
	return dst[:at+enc]
}

// sealRoom is the room appendToken takes past dst's end for a plaintext
// of n bytes: the text, the raw bytes and a block of scratch.
func sealRoom(n int) int {
	raw := 1 + sivIV + n
	return base64.RawURLEncoding.EncodedLen(raw) + raw + 16
}

// openRaw opens a sealed token's raw bytes (version, IV, ciphertext) in
// place and answers the plaintext.
func (k *siv) openRaw(raw []byte) ([]byte, bool) {
	if len(raw) < 1+sivIV+1 {
		return nil, false
	}
	p := raw[1+sivIV:]
	if !k.open(p, raw[1:1+sivIV], p, make([]byte, 32)) {
		return nil, false
	}
	return p, true
}

// readUvarint reads a varint as binary.AppendUvarint writes it: n <= 0 for
// a cut, an overflow or an overlong spelling (a token has one text).
func readUvarint(p []byte) (v uint64, n int) {
	v, n = binary.Uvarint(p)
	if n > 0 && n != uvarintLen(v) {
		return 0, -1
	}
	return v, n
}

// Links makes a recipient's per-mail links from its token.
type Links struct {
	Base   string // PUBLIC_URL, no trailing slash
	Signer *TokenSigner
}

// UnsubscribePath is where a token's page lives: GET shows the
// preferences page, POST of List-Unsubscribe=One-Click unsubscribes.
const UnsubscribePath = "/unsubscribe/"

// Fill sets r's unsubscribe token and the URLs made of it. The
// List-Unsubscribe URL and the preferences page are one address: only a
// one-click POST to it changes anything.
func (l Links) Fill(r *Recipient, t UnsubscribeToken) {
	b := make([]byte, 0, len(l.Base)+len(UnsubscribePath)+sealRoom(maxUnsubscribePlain))
	b = append(b, l.Base...)
	b = append(b, UnsubscribePath...)
	at := len(b)
	b = l.Signer.Seal(b, t)
	u := string(b)
	r.Tokens.Unsubscribe = u[at:]
	r.Tokens.UnsubscribeURL = u
	r.Tokens.PreferencesURL = u
}

// SealOpen appends the open-pixel token of delivery id of send sendID:
// base64url of a version byte and the AES-SIV sealing of the two ids as
// varints.
func (s *TokenSigner) SealOpen(dst []byte, sendID, id int64) []byte {
	var buf [2 * binary.MaxVarintLen64]byte
	p := binary.AppendUvarint(buf[:0], uint64(sendID))
	p = binary.AppendUvarint(p, uint64(id))
	return s.open.appendToken(dst, openSIVVersion, p)
}

// OpenOpen reads a token made by SealOpen with the same key, or by its
// version-2 predecessor (the ids in clear under an HMAC).
func (s *TokenSigner) OpenOpen(text string) (sendID, id int64, ok bool) {
	raw, ok := decodeToken(text, maxOpenTokenLen)
	if !ok {
		return 0, 0, false
	}
	var p []byte
	ok = false // a version neither case names
	switch raw[0] {
	case openSIVVersion:
		p, ok = s.open.openRaw(raw)
	case openVersion:
		p, ok = s.checkMAC(raw)
	}
	if !ok {
		return 0, 0, false
	}
	return readIDs(p)
}

// OpenPath is where open pixels live: {OpenPath}{list token}/{token}.
const OpenPath = "/o/"

// Pixel appends the open-pixel URL of delivery id of send sendID, from
// list listToken (the send's unique_open_token of the delivery's list).
func (l Links) Pixel(dst []byte, listToken string, sendID, id int64) []byte {
	dst = append(dst, l.Base...)
	dst = append(dst, OpenPath...)
	dst = append(dst, listToken...)
	dst = append(dst, '/')
	return l.Signer.SealOpen(dst, sendID, id)
}
