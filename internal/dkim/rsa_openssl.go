//go:build cgo

package dkim

import (
	"crypto"
	"crypto/rsa"
	"errors"
	"io"
	"math/big"
	"sync"

	"github.com/golang-fips/openssl/v2"
	"github.com/golang-fips/openssl/v2/bbig"
)

// libcrypto is the system's OpenSSL, loaded at run time (dlopen: no
// headers at build time, nothing when it is missing); its RSA signatures
// take a quarter of Go's time here (docs/dkim.md).
var libcrypto struct {
	once    sync.Once
	err     error
	version string
}

// libcryptoNames are the shared libraries tried, newest first.
var libcryptoNames = []string{"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"}

func loadLibcrypto() error {
	libcrypto.once.Do(func() {
		for _, name := range libcryptoNames {
			if ok, _ := openssl.CheckVersion(name); !ok {
				continue
			}
			if libcrypto.err = openssl.Init(name); libcrypto.err == nil {
				libcrypto.version = openssl.VersionText()
				return
			}
		}
		if libcrypto.err == nil {
			libcrypto.err = errors.New("no libcrypto.so.3, libcrypto.so.1.1 or libcrypto.so on this host")
		}
	})
	return libcrypto.err
}

// fastRSA is k signing through libcrypto, and the backend's name; k
// itself and why not when libcrypto cannot be loaded or take the key.
func fastRSA(k *rsa.PrivateKey) (crypto.Signer, string, error) {
	if err := loadLibcrypto(); err != nil {
		return k, BackendGo, err
	}
	if len(k.Primes) != 2 {
		return k, BackendGo, errors.New("a multi-prime RSA key")
	}
	p := k.Precomputed
	ok, err := openssl.NewPrivateKeyRSA(bbig.Enc(k.N), bbig.Enc(big.NewInt(int64(k.E))), bbig.Enc(k.D), bbig.Enc(k.Primes[0]),
		bbig.Enc(k.Primes[1]), bbig.Enc(p.Dp), bbig.Enc(p.Dq), bbig.Enc(p.Qinv))
	if err != nil {
		return k, BackendGo, err
	}
	return &opensslRSA{key: ok, pub: &k.PublicKey}, BackendOpenSSL + " (" + libcrypto.version + ")", nil
}

// opensslRSA is a crypto.Signer of PKCS #1 v1.5 signatures by libcrypto.
type opensslRSA struct {
	key *openssl.PrivateKeyRSA
	pub *rsa.PublicKey
}

func (s *opensslRSA) Public() crypto.PublicKey { return s.pub }

func (s *opensslRSA) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if _, pss := opts.(*rsa.PSSOptions); pss {
		return nil, errors.New("dkim: PSS is not a DKIM signature")
	}
	return openssl.SignRSAPKCS1v15(s.key, opts.HashFunc(), digest)
}
