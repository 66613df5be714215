//go:build !cgo

package dkim

import (
	"crypto"
	"crypto/rsa"
	"errors"
)

// fastRSA: a build without cgo cannot load libcrypto; Go signs.
func fastRSA(k *rsa.PrivateKey) (crypto.Signer, string, error) {
	return k, BackendGo, errors.New("built without cgo")
}
