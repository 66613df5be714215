package dkim

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/dkim/dkimtest"
)

// outsideVerify has python3-dkim verify signed, each selector's record
// publishing its signer's public key (dkimtest.Verify).
func outsideVerify(t *testing.T, signed []byte, signers map[string]crypto.Signer) string {
	t.Helper()
	recs := map[string]string{}
	for sel, signer := range signers {
		recs[sel] = record(t, signer)
	}
	return dkimtest.Verify(t, signed, recs)
}

// Mails signed with RSA (by libcrypto where it loads, as the worker does),
// with Ed25519, and with both (a domain with one key of each) verify with
// python3-dkim, every signature; a changed body or Subject breaks each.
func TestOutsideVerifier(t *testing.T) {
	pkcs8, err := x509.MarshalPKCS8PrivateKey(edKey)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"/k/rsa.pem": pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)),
		"/k/ed.pem": pemOf(t, "PRIVATE KEY", pkcs8)}
	read := func(p string) ([]byte, error) { return files[p], nil }
	signers := map[string]crypto.Signer{"s1": rsaKey, "ed": edKey}
	for _, tc := range []struct {
		spec string
		want string
	}{
		{"acme.example=s1:/k/rsa.pem", "ok"},
		{"acme.example=ed:/k/ed.pem", "ok"},
		{"acme.example=ed:/k/ed.pem,acme.example=s1:/k/rsa.pem", "ok\nok"},
	} {
		ks, err := Parse(tc.spec, read)
		if err != nil {
			t.Fatal(err)
		}
		backend, why := ks.RSABackend()
		signed, err := ks.For("news@acme.example").Sign(nil, message(t, true))
		if err != nil {
			t.Fatal(err)
		}
		if got := outsideVerify(t, signed, signers); got != tc.want {
			t.Errorf("%s (RSA by %q %v): python3-dkim says %q\n%.1200s", tc.spec, backend, why, got, signed)
		}
		for _, change := range [][2]string{{"this week's news", "this week's NEWS"}, {"Subject: =?utf-8?b?", "Subject: =?UTF-8?b?"}} {
			tampered := bytes.Replace(signed, []byte(change[0]), []byte(change[1]), 1)
			for _, line := range strings.Split(outsideVerify(t, tampered, signers), "\n") {
				if !strings.HasPrefix(line, "fail") {
					t.Errorf("%s: %q changed, python3-dkim says %q", tc.spec, change[1], line)
				}
			}
		}
	}
}
