// Package domains is what mailroom does for an account's sending domains
// (docs/deliverability.md): their DKIM key pairs, sealed at rest with a
// key from the environment; the DNS records a sender publishes for them;
// and the lookup that says, per record, whether it is found, missing or
// wrong.
package domains

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
)

// Keys are a domain's new DKIM key pairs: private keys as PKCS#8 DER,
// public keys as a DKIM record's p= value.
type Keys struct {
	RSAPrivate, Ed25519Private []byte // Ed25519Private nil: none made
	RSAPublic, Ed25519Public   string
}

// NewKeys makes an RSA-2048 key pair, and an Ed25519 one (RFC 8463) when
// withEd25519.
func NewKeys(withEd25519 bool) (Keys, error) {
	var k Keys
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return k, err
	}
	if k.RSAPrivate, err = x509.MarshalPKCS8PrivateKey(r); err != nil {
		return k, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&r.PublicKey)
	if err != nil {
		return k, err
	}
	k.RSAPublic = base64.StdEncoding.EncodeToString(pub)
	if withEd25519 {
		epub, epriv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return k, err
		}
		if k.Ed25519Private, err = x509.MarshalPKCS8PrivateKey(epriv); err != nil {
			return k, err
		}
		k.Ed25519Public = base64.StdEncoding.EncodeToString(epub) // RFC 8463: the raw 32 bytes
	}
	return k, nil
}

// Sealer seals private keys at rest with AES-256-GCM under a key from the
// environment (DKIM_KEY_SECRET): a copy of the database alone opens none.
type Sealer struct{ aead cipher.AEAD }

// ErrNoSecret is NewSealer's answer for an empty secret.
var ErrNoSecret = errors.New("domains: DKIM_KEY_SECRET is not set")

// NewSealer is a Sealer under secret, 32 bytes in standard or URL-safe
// base64.
func NewSealer(secret string) (*Sealer, error) {
	if secret == "" {
		return nil, ErrNoSecret
	}
	key, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		if key, err = base64.RawURLEncoding.DecodeString(secret); err != nil {
			return nil, fmt.Errorf("domains: DKIM_KEY_SECRET is not base64: %w", err)
		}
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("domains: DKIM_KEY_SECRET holds %d bytes, want 32", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal is plain sealed: a random nonce, then the ciphertext and its tag.
// label binds it to its row (the domain), so a sealed key moved to
// another row does not open.
func (s *Sealer) Seal(plain []byte, label string) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail
	}
	return s.aead.Seal(nonce, nonce, plain, []byte(label))
}

// Open is what Seal sealed under the same label.
func (s *Sealer) Open(sealed []byte, label string) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, errors.New("domains: sealed key too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], []byte(label))
}
