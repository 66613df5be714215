// Package dkimtest verifies DKIM signatures with an outside verifier,
// Debian's python3-dkim, for tests.
package dkimtest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// dkimpy reads the signed message on standard input and the selectors'
// TXT records from DKIM_RECORDS (JSON, by selector), verifies every
// DKIM-Signature and prints one line per signature: ok, or fail and why.
const dkimpy = `
import os, sys, json, dkim
msg = sys.stdin.buffer.read()
recs = json.loads(os.environ["DKIM_RECORDS"])
def txt(name, timeout=5):
    return recs[name.decode().split(".")[0]].encode()
d = dkim.DKIM(msg)
n = len([h for h in d.headers if h[0].lower() == b"dkim-signature"])
for i in range(n):
    try:
        print("ok" if d.verify(idx=i, dnsfunc=txt) else "fail")
    except dkim.ValidationError as e:
        print("fail:", e)
`

// Verify has python3-dkim verify signed, records publishing each
// selector's key record ("v=DKIM1; k=rsa; p=…"): one line per signature,
// ok or fail. It skips the test, saying so, where the module is not
// installed (.ci/run installs it).
func Verify(t testing.TB, signed []byte, records map[string]string) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import dkim").Run(); err != nil {
		t.Skipf("no python3-dkim (%s -c 'import dkim': %v): the outside DKIM verification is skipped; apt-get install python3-dkim", py, err)
	}
	cmd := exec.Command(py, "-c", dkimpy)
	js, _ := json.Marshal(records)
	cmd.Env = append(os.Environ(), "DKIM_RECORDS="+string(js))
	cmd.Stdin = bytes.NewReader(signed)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3-dkim: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}
