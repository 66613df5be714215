package dkim

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// dkimpy is Debian's python3-dkim, an outside DKIM verifier: it reads the
// signed message on standard input, the selector's TXT record from
// DKIM_RECORD, verifies every DKIM-Signature and prints one line per
// signature: ok, or fail and why.
const dkimpy = `
import os, sys, dkim
msg = sys.stdin.buffer.read()
rec = os.environ["DKIM_RECORD"].encode()
def txt(name, timeout=5):
    return rec
d = dkim.DKIM(msg)
n = len([h for h in d.headers if h[0].lower() == b"dkim-signature"])
for i in range(n):
    try:
        print("ok" if d.verify(idx=i, dnsfunc=txt) else "fail")
    except dkim.ValidationError as e:
        print("fail:", e)
`

// outsideVerify has python3-dkim verify signed with the public key of
// signer published as its record; it skips, saying so, where the module
// is not installed (.ci/run installs it).
func outsideVerify(t *testing.T, signed []byte, signer crypto.Signer) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import dkim").Run(); err != nil {
		t.Skipf("no python3-dkim (%s -c 'import dkim': %v): the outside DKIM verification is skipped; apt-get install python3-dkim", py, err)
	}
	cmd := exec.Command(py, "-c", dkimpy)
	cmd.Env = append(os.Environ(), "DKIM_RECORD="+record(t, signer))
	cmd.Stdin = bytes.NewReader(signed)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3-dkim: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// Mails signed with RSA (by libcrypto where it loads, as the worker does)
// and with Ed25519 verify with python3-dkim; a changed body does not.
func TestOutsideVerifier(t *testing.T) {
	rsaKeys, err := Parse("acme.example=s1:/k/rsa.pem", func(string) ([]byte, error) {
		return pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	backend, why := rsaKeys.RSABackend()
	t.Logf("RSA signatures by %s (%v)", backend, why)
	for _, tc := range []struct {
		name string
		key  *Key
		pub  crypto.Signer
	}{
		{"rsa-" + strings.Fields(backend)[0], rsaKeys.For("news@acme.example"), rsaKey},
		{"ed25519", NewKey("acme.example", "ed", edKey), edKey},
	} {
		signed, err := tc.key.Sign(nil, message(t, true))
		if err != nil {
			t.Fatal(err)
		}
		if got := outsideVerify(t, signed, tc.pub); got != "ok" {
			t.Errorf("%s: python3-dkim says %q", tc.name, got)
		}
		tampered := bytes.Replace(signed, []byte("this week's news"), []byte("this week's NEWS"), 1)
		if got := outsideVerify(t, tampered, tc.pub); !strings.HasPrefix(got, "fail: body hash mismatch") {
			t.Errorf("%s: a changed body: python3-dkim says %q", tc.name, got)
		}
	}
}
