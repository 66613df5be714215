//go:build cgo

package dkim

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"
)

// With cgo and the system's libcrypto, RSA keys sign through libcrypto,
// and its PKCS #1 v1.5 signatures are Go's, byte for byte (the scheme is
// deterministic); DKIM_LIBCRYPTO=off (PureGo) keeps Go's.
func TestRSAByLibcrypto(t *testing.T) {
	read := func(string) ([]byte, error) {
		return pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), nil
	}
	fast, err := Parse("acme.example=s1:/k/rsa.pem", read)
	if err != nil {
		t.Fatal(err)
	}
	backend, why := fast.RSABackend()
	if why != nil {
		t.Skipf("libcrypto did not load (%v): Go signs, as the fallback must", why)
	}
	if !strings.HasPrefix(backend, BackendOpenSSL+" (OpenSSL ") {
		t.Fatalf("backend %q", backend)
	}
	slow, err := Parse("acme.example=s1:/k/rsa.pem", read, PureGo())
	if err != nil {
		t.Fatal(err)
	}
	if b, why := slow.RSABackend(); b != BackendGo || why == nil {
		t.Fatalf("PureGo: %q %v", b, why)
	}
	msg := message(t, false)
	a, err := fast.For("x@acme.example").Sign(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := slow.For("x@acme.example").Sign(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("libcrypto and Go signed differently:\n%.600s\n%.600s", a, b)
	}
	if err := verify(t, a, rsaKey, "s1"); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRSASign is one mail's signature by each backend:
//
//	go test ./internal/dkim -run '^$' -bench RSASign
func BenchmarkRSASign(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"libcrypto", nil}, {"go", []Option{PureGo()}}} {
		b.Run(tc.name, func(b *testing.B) {
			ks, err := Parse("acme.example=s1:/k/rsa.pem", func(string) ([]byte, error) {
				return pemOf(b, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), nil
			}, tc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			k, msg := ks.For("x@acme.example"), message(b, true)
			var dst []byte
			for b.Loop() {
				if dst, err = k.Sign(dst[:0], msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
