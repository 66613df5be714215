package mail

import (
	"encoding/hex"
	"testing"
)

// TestSIVVector pins siv to AES-SIV as RFC 5297 defines it: the RFC's
// deterministic example (A.1), and plaintexts of every shape S2V and CTR
// treat apart (under a block, one block, a block and a byte, several
// blocks) as the cryptography package for Python (OpenSSL) seals them
// with the associated data 0x06.
func TestSIVVector(t *testing.T) {
	t.Parallel()
	key := unhex(t, "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
	for _, c := range []struct{ ad, p, want string }{
		{"101112131415161718191a1b1c1d1e1f2021222324252627", "112233445566778899aabbccddee",
			"85632d07c6e8f37f950acd320a2ecc9340c02b9690c4dc04daef7f6afe5c"},
		{"06", "00", "bfd27549cad46cb5a4c204244cad848ebd"},
		{"06", seq(15), "6e2fd6b52ea95668121135c019e468b71c83eeae1ab468db02e8667521b7de"},
		{"06", seq(16), "170f3b50e82d1b03858d730c083ffd327be6cce98381082dc33131e85c0927fd"},
		{"06", seq(17), "c8ce98578484dab6bd66de84e3ecc334a4731a0a32db295f754abf36201c0b61e8"},
		{"06", seq(32), "80e6b222d5ab5a2c8800de2e93e79853d8ae0395dc72f55f6cc3c91d5f94a3d1cc83731cf9f322faab8cf66a7b1a6a73"},
		{"06", seq(33), "d79171e3c6c7cb54378fd770356cda48a7ac8ebaea1b859e32a242d9b9aab185ee9f06c18031b2ca2def08174c6a63c3fd"},
		{"06", seq(100), "01c1a2ccada879809acea6573bd5f31e1b501e8c9ce4bbda95d859188a6b941bf0db9aecc8cef25fac3e338a4e243463eb1a8890f960201ce28b761d15ee3b5c711f8f3be8f686041d21a7d9bf5f561aac5f16c0f566b7cda6e251fde7e5cdd66b2bcc3d86e67b69401ff5d1104a982f17a61135"},
	} {
		k := newSIV(key, unhex(t, c.ad))
		p := unhex(t, c.p)
		out := make([]byte, 16+len(p))
		k.seal(out[:16], out[16:], p, make([]byte, 16))
		if got := hex.EncodeToString(out); got != c.want {
			t.Errorf("seal(%s, %s) = %s, want %s", c.ad, c.p, got, c.want)
		}
		back := make([]byte, len(p))
		if !k.open(back, out[:16], out[16:], make([]byte, 32)) || string(back) != string(p) {
			t.Errorf("open(%s) = %x", c.want, back)
		}
		for i := range out {
			bad := append([]byte(nil), out...)
			bad[i] ^= 0x40
			if k.open(back, bad[:16], bad[16:], make([]byte, 32)) {
				t.Fatalf("%x, changed at %d, opened", bad, i)
			}
		}
		// Another associated data: another key in effect.
		if newSIV(key, []byte{7}).open(back, out[:16], out[16:], make([]byte, 32)) {
			t.Errorf("%s opened under another associated data", c.want)
		}
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seq is the hex of the bytes 0, 1, … n-1.
func seq(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return hex.EncodeToString(b)
}
