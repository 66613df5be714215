package dkim

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/render"
)

var rsaKey = func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}()

var edKey = func() ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

// record is the DNS TXT record publishing signer's public key.
func record(t testing.TB, signer crypto.Signer) string {
	switch pub := signer.Public().(type) {
	case *rsa.PublicKey:
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der)
	case ed25519.PublicKey:
		return "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(pub)
	}
	t.Fatalf("key %T", signer)
	return ""
}

// message is a mail as the pipeline builds it, personalized and with
// non-ASCII text, sized like a real newsletter when big.
func message(t testing.TB, big bool) []byte {
	html := `<html><body><p>Hello ((first_name)), caf` + "\u00e9" + ` news.</p></body></html>`
	if big {
		html = `<html><body>` + strings.Repeat(`<p style="margin:0 0 12px">Hello ((first_name)), here is this week's news about our products and offers.</p>`+"\n", 200) + `</body></html>`
	}
	tp, err := render.Compile("Hi ((first_name)) \u2013 news", "This week", html)
	if err != nil {
		t.Fatal(err)
	}
	s := &mail.Sender{FromName: "Acme Shop", FromEmail: "news@Acme.example", ReplyTo: "help@acme.example"}
	r := &mail.Recipient{Email: "ann@example.com", FirstName: "Ann", Tokens: mail.Tokens{
		Unsubscribe: "tok", UnsubscribeURL: "https://m.example/unsubscribe/tok"}}
	var b render.Buffer
	tp.Render(&b, r, s)
	f := render.NewForm(tp, s, render.FormOptions{SendID: 3, UnsubscribeMailto: "unsubscribe@acme.example"})
	return f.Build(nil, &b, r, 77)
}

func verify(t *testing.T, signed []byte, signer crypto.Signer, selector string) error {
	t.Helper()
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(signed), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
		if name != selector+"._domainkey.acme.example" {
			return nil, errors.New("no record for " + name)
		}
		return []string{record(t, signer)}, nil
	}})
	if err != nil {
		return err
	}
	if len(vs) != 1 {
		t.Fatalf("%d signatures", len(vs))
	}
	return vs[0].Err
}

// A signed mail verifies with the published key, for RSA and Ed25519,
// and covers the headers a reader sees and RFC 8058 needs; a change to a
// signed header or to the body breaks it.
func TestSignVerifies(t *testing.T) {
	t.Parallel()
	for _, signer := range []crypto.Signer{rsaKey, edKey} {
		keys := &Keys{}
		keys.Add(NewKey("ACME.example", "s1", signer))
		k := keys.For("News@acme.EXAMPLE")
		if k == nil {
			t.Fatal("no key for the sender's domain")
		}
		msg := message(t, false)
		signed, err := k.Sign([]byte("keep:"), msg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(signed, []byte("keep:DKIM-Signature: ")) || !bytes.HasSuffix(signed, msg) {
			t.Fatalf("not dst + signature + message:\n%s", signed[:200])
		}
		signed = signed[len("keep:"):]
		if err := verify(t, signed, signer, "s1"); err != nil {
			t.Fatalf("%T: %v\n%s", signer, err, signed)
		}
		head := string(signed[:bytes.Index(signed, []byte("\r\n\r\n"))])
		hTag := regexpH(head)
		for _, h := range []string{"From", "Reply-To", "To", "Subject", "Date", "Message-ID", "MIME-Version", "Content-Type", "List-Unsubscribe", "List-Unsubscribe-Post"} {
			if !strings.Contains(":"+hTag+":", ":"+h+":") {
				t.Errorf("h= %q lacks %s", hTag, h)
			}
		}
		for _, change := range [][2]string{{"Subject: =?utf-8?b?", "Subject: =?UTF-8?b?"}, {" news.", " newz."}, {"To: ann@", "To: bob@"}} {
			tampered := bytes.Replace(signed, []byte(change[0]), []byte(change[1]), 1)
			if bytes.Equal(tampered, signed) {
				t.Fatalf("%q not in the mail", change[0])
			}
			if err := verify(t, tampered, signer, "s1"); err == nil {
				t.Errorf("%T: changing %q still verifies", signer, change[0])
			}
		}
	}
	if (&Keys{}).For("a@acme.example") != nil || (*Keys)(nil).For("a@acme.example") != nil {
		t.Error("a key out of nothing")
	}
}

// regexpH is the h= tag of a DKIM-Signature field, unfolded.
func regexpH(head string) string {
	head = strings.NewReplacer("\r\n ", "", "\r\n\t", "", " ", "").Replace(head)
	i := strings.Index(head, ";h=")
	if i < 0 {
		return ""
	}
	rest := head[i+3:]
	if j := strings.IndexByte(rest, ';'); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func pemOf(_ testing.TB, typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func TestParse(t *testing.T) {
	t.Parallel()
	pkcs8, err := x509.MarshalPKCS8PrivateKey(edKey)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/k/rsa.pem":  pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)),
		"/k/ed.pem":   pemOf(t, "PRIVATE KEY", pkcs8),
		"/k/cert.pem": pemOf(t, "CERTIFICATE", []byte{1, 2}),
		"/k/junk.pem": []byte("not pem"),
	}
	read := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, errors.New("no file " + p)
	}
	ks, err := Parse(" acme.example=s1:/k/rsa.pem , Other.Example=ed:/k/ed.pem,", read)
	if err != nil {
		t.Fatal(err)
	}
	if ks.Len() != 2 || ks.For("x@acme.example").Selector != "s1" || ks.For("x@other.example").Domain != "other.example" || ks.For("x@third.example") != nil {
		t.Fatalf("keys %+v", ks.byDomain)
	}
	// One RSA and one Ed25519 key of a domain: both sign, RSA first.
	dual, err := Parse("a.example=ed:/k/ed.pem, A.example=rs:/k/rsa.pem", read)
	if k := dual.For("x@a.example"); err != nil || dual.Len() != 1 || k.Selector != "rs" || k.next == nil || k.next.Selector != "ed" || k.next.next != nil {
		t.Fatalf("dual: %v %+v", err, k)
	}
	if ks, err := Parse("", read); err != nil || ks.Len() != 0 {
		t.Fatalf("empty: %v %v", ks, err)
	}
	for _, bad := range []string{"acme.example", "acme.example=s1", "=s1:/k/rsa.pem", "a=:/k/rsa.pem", "a=s:",
		"a=s:/k/none.pem", "a=s:/k/cert.pem", "a=s:/k/junk.pem", "a=s:/k/rsa.pem,A=t:/k/rsa.pem",
		"a=s:/k/ed.pem,A=t:/k/ed.pem", "a=s:/k/rsa.pem,a=t:/k/ed.pem,a=u:/k/ed.pem"} {
		if _, err := Parse(bad, read); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// The cost of signing a ~37 KB personalized mail: body hash, header hash
// and the signature itself.
func BenchmarkSign(b *testing.B) {
	for _, tc := range []struct {
		name   string
		signer crypto.Signer
	}{{"rsa2048", rsaKey}, {"ed25519", edKey}} {
		b.Run(tc.name, func(b *testing.B) {
			msg := message(b, true)
			k := NewKey("acme.example", "s1", tc.signer)
			var dst []byte
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = k.Sign(dst[:0], msg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mails/s")
		})
	}
}

// The signature alone, without go-msgauth: the floor of BenchmarkSign.
func BenchmarkRawSignature(b *testing.B) {
	digest := make([]byte, 32)
	for _, tc := range []struct {
		name   string
		signer crypto.Signer
		hash   crypto.Hash
	}{{"rsa2048", rsaKey, crypto.SHA256}, {"ed25519", edKey, 0}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := tc.signer.Sign(rand.Reader, digest, tc.hash); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A mail with UTF-8 addresses in its header (RFC 6532: a UTF-8 local
// part, the domains as A-labels) is signed by the key of its From domain,
// configured by its U-label, and verifies; a change to the UTF-8 To
// breaks it.
func TestSignVerifiesUTF8Header(t *testing.T) {
	t.Parallel()
	pkcs8, err := x509.MarshalPKCS8PrivateKey(edKey)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := Parse("Bücher.example=s1:/k/ed.pem", func(string) ([]byte, error) { return pemOf(t, "PRIVATE KEY", pkcs8), nil })
	if err != nil {
		t.Fatal(err)
	}
	tp, err := render.Compile("Grüße", "", "<p>Hallo</p>")
	if err != nil {
		t.Fatal(err)
	}
	s := &mail.Sender{FromName: "Bücher", FromEmail: "ü@bücher.example", ReplyTo: "h@bücher.example"}
	r := &mail.Recipient{Email: "ü-h@example.com"}
	var b render.Buffer
	msg := render.NewForm(tp, s, render.FormOptions{SendID: 1}).Build(nil, &b, r, 2)
	if !bytes.Contains(msg, []byte("\r\nTo: ü-h@example.com\r\n")) {
		t.Fatalf("no UTF-8 To in\n%s", msg)
	}
	k := ks.For(s.FromEmail.Wire())
	if k == nil || k.Domain != "xn--bcher-kva.example" {
		t.Fatalf("key %+v for %s", k, s.FromEmail.Wire())
	}
	signed, err := k.Sign(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	lookup := &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
		if name != "s1._domainkey.xn--bcher-kva.example" {
			return nil, errors.New("no record for " + name)
		}
		return []string{record(t, edKey)}, nil
	}}
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(signed), lookup)
	if err != nil || len(vs) != 1 || vs[0].Err != nil || vs[0].Domain != "xn--bcher-kva.example" {
		t.Fatalf("%v %+v\n%s", err, vs, signed)
	}
	tampered := bytes.Replace(signed, []byte("To: ü-h@"), []byte("To: ü-x@"), 1)
	if vs, err := dkim.VerifyWithOptions(bytes.NewReader(tampered), lookup); err == nil && len(vs) == 1 && vs[0].Err == nil {
		t.Fatal("a changed UTF-8 To still verifies")
	}
}
