package mail

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
)

// siv is AES-SIV (RFC 5297) with AES-128 and one associated-data string
// fixed when it is made: the deterministic authenticated encryption the
// tokens put into mails are made of (docs/tracking.md, "The tokens").
//
// Sealing plaintext P computes a synthetic IV, V = S2V(K1, AD, P), a
// CMAC-based pseudorandom function of the associated data and P, then
// encrypts C = P xor AES-CTR(K2, V with two bits cleared). The token
// holds V and C. Opening decrypts C under V and recomputes V from the
// plaintext: a different V refuses the token. Why it is sound:
//   - confidentiality: C is P under a CTR keystream; an IV repeats only
//     when the plaintext repeats (V is a PRF of P), so the one thing the
//     tokens show is which tokens are equal (one spelling per value, the
//     point of a deterministic scheme) and their length;
//   - integrity: V is a 128-bit PRF output over P under a key no token
//     reveals, so a token not made with the key opens with chance 2^-128
//     per try; any change to V or C changes the plaintext the check runs
//     on;
//   - no nonce to manage: unlike AES-GCM with random 96-bit nonces,
//     nothing wears out at 2^32 tokens a key; SIV's bound is the 2^64
//     birthday bound of its 128-bit IV.
//
// RFC 5297's test vector pins the construction (TestSIVVector). Costs:
// a plaintext of up to 16 bytes takes two AES blocks, a longer one two per
// 16 bytes.
//
// The block cipher is reached through the cipher.Block interface, to
// which Go's escape analysis hands any slice as escaping: the blocks it
// works on (v and scratch) are the caller's heap memory, so a token made
// in the spare capacity of a caller's buffer costs no allocation.
type siv struct {
	mac    cipher.Block // K1: S2V's CMAC
	ctr    cipher.Block // K2: the keystream
	k1, k2 [16]byte     // CMAC's subkeys of K1
	dd     [16]byte     // dbl(D), D being S2V's state after the AD
	ddk1   [16]byte     // dbl(D) xor k1: a short plaintext's whole block
	d      [16]byte     // D = dbl(CMAC(K1, 0^128)) xor CMAC(K1, AD)
}

// newSIV is AES-SIV under key (32 bytes: K1 then K2) with associated data
// ad.
func newSIV(key, ad []byte) *siv {
	if len(key) != 32 {
		panic("mail: an AES-SIV key is 32 bytes")
	}
	mac, err := aes.NewCipher(key[:16])
	if err != nil {
		panic(err)
	}
	ctr, err := aes.NewCipher(key[16:])
	if err != nil {
		panic(err)
	}
	k := &siv{mac: mac, ctr: ctr}
	l := make([]byte, 16)
	mac.Encrypt(l, l)
	k.k1 = dbl([16]byte(l))
	k.k2 = dbl(k.k1)
	zero := k.cmac(make([]byte, 16))
	k.d = xor16(dbl(zero), k.cmac(ad))
	k.dd = dbl(k.d)
	k.ddk1 = xor16(k.dd, k.k1)
	return k
}

// cmac is AES-CMAC of msg under K1 (RFC 4493), for setup: it allocates.
func (k *siv) cmac(msg []byte) [16]byte {
	v := make([]byte, 16)
	k.cmacTo(v, msg, nil)
	return [16]byte(v)
}

// cmacTo writes AES-CMAC under K1 of msg, with end xored into its last
// len(end) bytes (S2V's "xorend"), to v (16 bytes, heap: see siv).
func (k *siv) cmacTo(v, msg []byte, end *[16]byte) {
	n := len(msg)
	at := n - 16 // where end starts
	b := func(i int) byte {
		c := msg[i]
		if end != nil && i >= at {
			c ^= end[i-at]
		}
		return c
	}
	clear(v[:16])
	last := 0 // start of the last block
	if n > 0 {
		last = (n - 1) / 16 * 16
	}
	for off := 0; off < last; off += 16 {
		for i := range 16 {
			v[i] ^= b(off + i)
		}
		k.mac.Encrypt(v, v)
	}
	m := n - last // 0..16 bytes in the last block
	sub := &k.k2
	if m == 16 {
		sub = &k.k1
	}
	for i := range 16 {
		c := sub[i]
		if i < m {
			c ^= b(last + i)
		} else if i == m {
			c ^= 0x80
		}
		v[i] ^= c
	}
	k.mac.Encrypt(v, v)
}

// s2v writes the synthetic IV of p to v (16 bytes, heap).
func (k *siv) s2v(v, p []byte) {
	if len(p) >= 16 {
		k.cmacTo(v, p, &k.d) // T = P xorend D
		return
	}
	// T = dbl(D) xor pad(P), one whole block: CMAC(T) = E(T xor K1's
	// subkey). Two 64-bit words rather than 16 bytes: this is the click
	// token's path.
	var t [16]byte
	copy(t[:], p)
	t[len(p)] = 0x80
	xorWords(v[:16], t[:], k.ddk1[:])
	k.mac.Encrypt(v[:16], v[:16])
}

// xorKeyStream writes src xor the CTR keystream of IV v to dst (which may
// be src itself); ks is 16 bytes of heap scratch.
func (k *siv) xorKeyStream(dst, src, v, ks []byte) {
	var q [16]byte
	copy(q[:], v[:16])
	q[8] &= 0x7f  // RFC 5297 2.5: bits 63 and 31 cleared, so a 32-bit
	q[12] &= 0x7f // counter never carries (plaintexts here are short)
	ctr := binary.BigEndian.Uint32(q[12:])
	for off := 0; off < len(src); off += 16 {
		copy(ks[:16], q[:])
		binary.BigEndian.PutUint32(ks[12:16], ctr)
		ctr++
		k.ctr.Encrypt(ks[:16], ks[:16])
		var b [16]byte
		n := copy(b[:], src[off:])
		xorWords(b[:], b[:], ks[:16])
		copy(dst[off:off+n], b[:n])
	}
}

// xorWords sets the 16 bytes of dst to a xor b, as two 64-bit words.
func xorWords(dst, a, b []byte) {
	le := binary.LittleEndian
	le.PutUint64(dst[0:8], le.Uint64(a[0:8])^le.Uint64(b[0:8]))
	le.PutUint64(dst[8:16], le.Uint64(a[8:16])^le.Uint64(b[8:16]))
}

// seal writes p's synthetic IV to v (16 bytes) and p's encryption to c
// (len(p) bytes; c may be p). v and scratch (16 bytes) are heap memory.
func (k *siv) seal(v, c, p, scratch []byte) {
	k.s2v(v, p)
	if len(p) > 16 {
		k.xorKeyStream(c, p, v, scratch)
		return
	}
	// One keystream block, whose counter is V's own: the click token's
	// path, spelled out.
	ks := scratch[:16]
	copy(ks, v[:16])
	ks[8] &= 0x7f
	ks[12] &= 0x7f
	k.ctr.Encrypt(ks, ks)
	c = c[:len(p)]
	for i := range c {
		c[i] = p[i] ^ ks[i]
	}
}

// open decrypts c under v to p (len(c) bytes; p may be c) and reports
// whether v is the plaintext's synthetic IV; on false p holds nothing to
// use. scratch is 32 bytes of heap memory.
func (k *siv) open(p, v, c, scratch []byte) bool {
	k.xorKeyStream(p, c, v, scratch[:16])
	k.s2v(scratch[16:32], p)
	return subtle.ConstantTimeCompare(scratch[16:32], v[:16]) == 1
}

// dbl is multiplication by x in GF(2^128) (RFC 5297 2.3).
func dbl(b [16]byte) [16]byte {
	var out [16]byte
	carry := b[0] >> 7
	for i := range 15 {
		out[i] = b[i]<<1 | b[i+1]>>7
	}
	out[15] = b[15]<<1 ^ 0x87*carry
	return out
}

func xor16(a, b [16]byte) [16]byte {
	for i := range a {
		a[i] ^= b[i]
	}
	return a
}
