package mail

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"strings"
	"sync"
)

// UnsubscribeToken is what a mail's unsubscribe and preferences links
// carry: who the mail went to and what it came from. It is signed, so a
// link cannot be forged or altered to reach another address or account,
// and self-contained, so it still works after the contact or the delivery
// row is gone.
type UnsubscribeToken struct {
	UserID       int64
	Email        Email
	GroupID      int64 // the mail's unsubscribe group; 0 none
	SendID       int64 // the single send the mail belongs to; 0 none
	AutomationID int64 // the automation the mail belongs to; 0 none
}

// Sizes of a token: version byte, MAC, and the longest encoded one.
const (
	tokenVersion = 1
	tokenMAC     = 16 // bytes of HMAC-SHA256 kept: 128 bits
	// MaxTokenLen bounds the text of a token (an address of 254
	// characters and four full varints, base64url).
	MaxTokenLen = (1+4*binary.MaxVarintLen64+254+tokenMAC+2)/3*4 + 4
)

// TokenSigner seals and opens UnsubscribeTokens with one secret key.
// Safe for concurrent use.
type TokenSigner struct {
	macs    sync.Pool
	scratch sync.Pool // *macScratch (bounce tokens)
}

// NewTokenSigner signs with key (32 random bytes; the database keeps it).
func NewTokenSigner(key []byte) *TokenSigner {
	k := append([]byte(nil), key...)
	s := &TokenSigner{}
	s.macs.New = func() any { return hmac.New(sha256.New, k) }
	return s
}

// Seal appends t's token to dst: base64url (no padding) of a version byte,
// the ids as varints, the address and a 128-bit HMAC-SHA256 of all that.
func (s *TokenSigner) Seal(dst []byte, t UnsubscribeToken) []byte {
	var buf [1 + 4*binary.MaxVarintLen64 + 320 + sha256.Size]byte
	p := append(buf[:0], tokenVersion)
	p = binary.AppendUvarint(p, uint64(t.UserID))
	p = binary.AppendUvarint(p, uint64(t.GroupID))
	p = binary.AppendUvarint(p, uint64(t.SendID))
	p = binary.AppendUvarint(p, uint64(t.AutomationID))
	p = append(p, t.Email...)
	p = s.sum(p, p)
	return base64.RawURLEncoding.AppendEncode(dst, p[:len(p)-sha256.Size+tokenMAC])
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

// Open reads a token made by Seal with the same key; ok is false for
// anything else (altered, cut, another key, another version).
func (s *TokenSigner) Open(text string) (t UnsubscribeToken, ok bool) {
	if len(text) > MaxTokenLen || !oneText(text) {
		return t, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(text)
	if err != nil || len(raw) < 1+4+tokenMAC || raw[0] != tokenVersion {
		return t, false
	}
	body, mac := raw[:len(raw)-tokenMAC], raw[len(raw)-tokenMAC:]
	var sum [sha256.Size]byte
	if !hmac.Equal(s.sum(sum[:0], body)[:tokenMAC], mac) {
		return t, false
	}
	p := body[1:]
	var ids [4]int64
	for i := range ids {
		v, n := binary.Uvarint(p)
		if n <= 0 || v > 1<<63-1 {
			return UnsubscribeToken{}, false
		}
		ids[i], p = int64(v), p[n:]
	}
	if len(p) == 0 || ids[0] <= 0 {
		return UnsubscribeToken{}, false
	}
	return UnsubscribeToken{UserID: ids[0], GroupID: ids[1], SendID: ids[2], AutomationID: ids[3], Email: Email(p)}, true
}

// oneText refuses a CR or LF, which base64's decoder skips even in Strict
// mode: with them a token had endless texts ("…%0A…" in a link opened the
// same token). Strict decoding refuses the other ambiguity, padding bits.
func oneText(text string) bool { return !strings.ContainsAny(text, "\r\n") }

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
	b := make([]byte, 0, len(l.Base)+len(UnsubscribePath)+MaxTokenLen)
	b = append(b, l.Base...)
	b = append(b, UnsubscribePath...)
	at := len(b)
	b = l.Signer.Seal(b, t)
	u := string(b)
	r.Tokens.Unsubscribe = u[at:]
	r.Tokens.UnsubscribeURL = u
	r.Tokens.PreferencesURL = u
}

// openVersion marks an open-pixel token: a send id and a delivery id.
const openVersion = 2

// SealOpen appends the open-pixel token of delivery id of send sendID:
// base64url of a version byte, the two ids as varints and a 128-bit MAC.
func (s *TokenSigner) SealOpen(dst []byte, sendID, id int64) []byte {
	var buf [1 + 2*binary.MaxVarintLen64 + sha256.Size]byte
	p := append(buf[:0], openVersion)
	p = binary.AppendUvarint(p, uint64(sendID))
	p = binary.AppendUvarint(p, uint64(id))
	p = s.sum(p, p)
	return base64.RawURLEncoding.AppendEncode(dst, p[:len(p)-sha256.Size+tokenMAC])
}

// OpenOpen reads a token made by SealOpen with the same key.
func (s *TokenSigner) OpenOpen(text string) (sendID, id int64, ok bool) {
	if len(text) > 64 || !oneText(text) {
		return 0, 0, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(text)
	if err != nil || len(raw) < 1+2+tokenMAC || raw[0] != openVersion {
		return 0, 0, false
	}
	body, mac := raw[:len(raw)-tokenMAC], raw[len(raw)-tokenMAC:]
	var sum [sha256.Size]byte
	if !hmac.Equal(s.sum(sum[:0], body)[:tokenMAC], mac) {
		return 0, 0, false
	}
	p := body[1:]
	a, n := binary.Uvarint(p)
	if n <= 0 {
		return 0, 0, false
	}
	b, m := binary.Uvarint(p[n:])
	if m <= 0 || n+m != len(p) || a == 0 || b == 0 || a > 1<<63-1 || b > 1<<63-1 {
		return 0, 0, false
	}
	return int64(a), int64(b), true
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
