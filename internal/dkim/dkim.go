// Package dkim signs outgoing mails with the DKIM key of their sender's
// domain (RFC 6376). Keys are configured per
// domain (DKIM_KEYS); a mail whose From domain has no key goes unsigned.
// RSA signatures are made by the system's libcrypto when it can be loaded
// (golang-fips/openssl, dlopen at run time; a build with cgo), else by Go.
package dkim

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// signedHeaders are the header fields signed when present: what a reader
// sees and what RFC 8058 requires signed for one-click unsubscribe.
var signedHeaders = []string{"From", "Reply-To", "To", "Subject", "Date", "Message-ID", "MIME-Version",
	"Content-Type", "List-Unsubscribe", "List-Unsubscribe-Post"}

// Key signs for one domain. A domain may have two keys, RSA and Ed25519
// (RFC 8463): the second is next, and a mail gets both signatures.
type Key struct {
	Domain   string
	Selector string
	signer   crypto.Signer
	next     *Key
}

// Keys are the configured keys by domain (lower-case): DKIM_KEYS', for
// every account, and the accounts' authenticated sending domains', each
// for its account alone (SetAccountKeys). The zero value and nil sign
// nothing.
type Keys struct {
	byDomain map[string]*Key
	rsa      string // what signs the RSA keys: "" (none), BackendOpenSSL …, BackendGo
	rsaWhy   error  // why not libcrypto, when Go signs
	accounts atomic.Pointer[map[int64]map[string]*Key]
	pureGo   bool
}

// SetAccountKeys puts the accounts' sending domains' keys in force (by
// account, then domain), in place of the ones set before: a mail of an
// account from such a domain is signed with its account's key rather
// than DKIM_KEYS'.
func (ks *Keys) SetAccountKeys(keys map[int64]map[string]*Key) { ks.accounts.Store(&keys) }

// ForAccount is the key account signs address's mails with: its own key
// of the address's domain, else DKIM_KEYS' (For); nil when there is none.
func (ks *Keys) ForAccount(account int64, address string) *Key {
	if ks == nil {
		return nil
	}
	domain := keyDomain(address)
	if m := ks.accounts.Load(); m != nil {
		if k := (*m)[account][domain]; k != nil {
			return k
		}
	}
	return ks.byDomain[domain]
}

// keyDomain is the domain of address as keys are kept by (lower-case).
func keyDomain(address string) string {
	return strings.ToLower(strings.TrimSuffix(address[strings.LastIndexByte(address, '@')+1:], ">"))
}

// DomainKey is a sending domain's key from PKCS #8 DER: RSA (signed by
// libcrypto where the worker's RSA keys are), with its Ed25519 key
// chained when edDER is not nil (RFC 8463: a mail gets both signatures).
func (ks *Keys) DomainKey(domain, selector string, rsaDER []byte, edSelector string, edDER []byte) (*Key, error) {
	key, err := x509.ParsePKCS8PrivateKey(rsaDER)
	if err != nil {
		return nil, fmt.Errorf("key of %s: %w", domain, err)
	}
	r, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key of %s: %T is no RSA key", domain, key)
	}
	var signer crypto.Signer = r
	if !ks.pureGo {
		signer, _, _ = fastRSA(r)
	}
	k := NewKey(domain, selector, signer)
	if edDER != nil {
		e, err := x509.ParsePKCS8PrivateKey(edDER)
		if err != nil {
			return nil, fmt.Errorf("Ed25519 key of %s: %w", domain, err)
		}
		ed, ok := e.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("Ed25519 key of %s: %T", domain, e)
		}
		k.next = NewKey(domain, edSelector, ed)
	}
	return k, nil
}

// What makes RSA signatures.
const (
	BackendOpenSSL = "openssl" // the system's libcrypto
	BackendGo      = "go"      // crypto/rsa
)

// Option changes how Parse reads keys.
type Option func(*parseOptions)

type parseOptions struct{ pureGo bool }

// PureGo has Go make RSA signatures even where libcrypto could
// (DKIM_LIBCRYPTO=off).
func PureGo() Option { return func(o *parseOptions) { o.pureGo = true } }

// RSABackend says what signs the RSA keys ("" when there is none:
// BackendOpenSSL with libcrypto's version, or BackendGo) and, for Go, why
// not libcrypto.
func (ks *Keys) RSABackend() (string, error) {
	if ks == nil {
		return "", nil
	}
	return ks.rsa, ks.rsaWhy
}

// Parse reads DKIM_KEYS: comma-separated domain=selector:path entries,
// each path a PEM private key (RSA in PKCS #1 or #8, or Ed25519 in
// PKCS #8), read through read (os.ReadFile). An empty spec is no keys. An
// internationalized domain may be written either way (bücher.example or
// xn--bcher-kva.example): it is kept as its A-label, the form senders'
// addresses go out in and the one a DKIM signature's d= names (RFC 8616).
func Parse(spec string, read func(string) ([]byte, error), opts ...Option) (*Keys, error) {
	var o parseOptions
	for _, opt := range opts {
		opt(&o)
	}
	ks := &Keys{byDomain: map[string]*Key{}, pureGo: o.pureGo}
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		domain, rest, ok1 := strings.Cut(entry, "=")
		selector, path, ok2 := strings.Cut(rest, ":")
		domain, selector = strings.ToLower(strings.TrimSpace(domain)), strings.TrimSpace(selector)
		if !ok1 || !ok2 || domain == "" || selector == "" || strings.TrimSpace(path) == "" {
			return nil, fmt.Errorf("%q is not domain=selector:/path/to/key.pem", entry)
		}
		if a, ok := mail.DomainALabel(domain); ok {
			domain = a
		}
		pemBytes, err := read(strings.TrimSpace(path))
		if err != nil {
			return nil, fmt.Errorf("key of %s: %w", domain, err)
		}
		signer, err := ParseKey(pemBytes)
		if err != nil {
			return nil, fmt.Errorf("key of %s: %w", domain, err)
		}
		if k, ok := signer.(*rsa.PrivateKey); ok {
			if o.pureGo {
				ks.rsa, ks.rsaWhy = BackendGo, errors.New("DKIM_LIBCRYPTO=off")
			} else {
				signer, ks.rsa, ks.rsaWhy = fastRSA(k)
			}
		}
		k := &Key{Domain: domain, Selector: selector, signer: signer}
		switch prev := ks.byDomain[domain]; {
		case prev == nil:
			ks.byDomain[domain] = k
		case prev.next != nil || isEd25519(prev.signer) == isEd25519(signer):
			return nil, fmt.Errorf("domain %s has two keys of one kind (give one RSA and one Ed25519 key to sign with both)", domain)
		case isEd25519(prev.signer): // RSA first
			k.next, ks.byDomain[domain] = prev, k
		default:
			prev.next = k
		}
	}
	return ks, nil
}

func isEd25519(s crypto.Signer) bool {
	_, ok := s.(ed25519.PrivateKey)
	return ok
}

// ParseKey reads a PEM private key: RSA (at least 1024 bits; 2048 is the
// norm) or Ed25519 (RFC 8463).
func ParseKey(pemBytes []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, err
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if k.N.BitLen() < 1024 {
			return nil, errors.New("RSA key shorter than 1024 bits")
		}
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("unsupported key type %T", key)
}

// NewKey is a key for domain and selector.
func NewKey(domain, selector string, signer crypto.Signer) *Key {
	return &Key{Domain: strings.ToLower(domain), Selector: selector, signer: signer}
}

// Add adds k (tests and callers that load keys themselves).
func (ks *Keys) Add(k *Key) {
	if ks.byDomain == nil {
		ks.byDomain = map[string]*Key{}
	}
	ks.byDomain[k.Domain] = k
}

// For is the key of the domain of address (the part after the last @),
// nil when there is none; address is as it goes out (mail.Email.Wire),
// an internationalized domain as its A-label.
func (ks *Keys) For(address string) *Key {
	if ks == nil || len(ks.byDomain) == 0 {
		return nil
	}
	return ks.byDomain[keyDomain(address)]
}

// Len is the number of keys.
func (ks *Keys) Len() int {
	if ks == nil {
		return 0
	}
	return len(ks.byDomain)
}

// Sign appends to dst the DKIM-Signature header field for msg (a whole
// message, CRLF line ends) by k, and by its domain's second key if it has
// one, followed by msg: relaxed/simple canonicalization, SHA-256
// (sign.go).
func (k *Key) Sign(dst, msg []byte) ([]byte, error) {
	return k.sign(dst, msg, time.Now())
}

// SpecDomains are the domains a DKIM_KEYS spec names (as Parse keeps
// them: lower-case, A-label), without reading its keys: for the API,
// which tells a send whether its mails are signed.
func SpecDomains(spec string) []string {
	var out []string
	for _, entry := range strings.Split(spec, ",") {
		domain, _, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if domain = strings.ToLower(strings.TrimSpace(domain)); !ok || domain == "" {
			continue
		}
		if a, ok := mail.DomainALabel(domain); ok {
			domain = a
		}
		out = append(out, domain)
	}
	return out
}
