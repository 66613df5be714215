package mail

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"
)

// Account is a customer of mailroom: every record belongs to one.
type Account struct {
	ID         int64      `json:"user_id"`
	Name       string     `json:"name"`
	PublicKey  string     `json:"public_key"`
	DisabledAt *time.Time `json:"disabled_at"` // set by accounts disable: the keys are refused
	CreatedAt  time.Time  `json:"created_at"`
}

// Keys are an account's credentials. Secret is shown once, at creation;
// only SecretHash is stored.
type Keys struct {
	Public string
	Secret string
}

// NewKeys returns fresh random keys: 32 random bytes each, URL-safe base64,
// with a prefix that tells them apart.
func NewKeys() Keys {
	return Keys{Public: "pk_" + RandomToken(32), Secret: "sk_" + RandomToken(32)}
}

// SecretHash is what is stored of a secret key. The secret has 256 bits of
// entropy, so one SHA-256 is enough (no password stretching needed).
func SecretHash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// ParseAccountName validates an account's name.
func ParseAccountName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", Invalid("name", RequiredMessage("name"))
	}
	return s, nil
}

// RandomToken is n random bytes, URL-safe base64 without padding: keys,
// session and CSRF tokens, CSP nonces.
func RandomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
