package domains_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/domains"
	"github.com/mailroom/mailroom/internal/domains/dnstest"
	"github.com/mailroom/mailroom/internal/mail"
)

func TestRecordsLookedUp(t *testing.T) {
	t.Parallel()
	k, err := domains.NewKeys(true)
	if err != nil {
		t.Fatal(err)
	}
	if pub, err := base64.StdEncoding.DecodeString(k.RSAPublic); err != nil {
		t.Fatal(err)
	} else if key, err := x509.ParsePKIXPublicKey(pub); err != nil || key == nil {
		t.Fatalf("RSA public key: %v", err)
	}
	if pub, _ := base64.StdEncoding.DecodeString(k.Ed25519Public); len(pub) != 32 {
		t.Fatalf("Ed25519 public key of %d bytes", len(pub))
	}
	recs := domains.Records("shop.example", "mr1", k, domains.Setup{SPFInclude: "_spf.mailroom.test", BounceMX: "in.mailroom.test"})
	var purposes []string
	for _, r := range recs {
		purposes = append(purposes, r.Purpose+" "+r.Type+" "+r.Host)
	}
	if got := strings.Join(purposes, ", "); got != "dkim TXT mr1._domainkey.shop.example, dkim-ed25519 TXT mr1e._domainkey.shop.example, "+
		"spf TXT shop.example, dmarc TXT _dmarc.shop.example, return-path MX bounces.shop.example" {
		t.Fatalf("records: %s", got)
	}

	z := dnstest.New(t)
	res := domains.Resolver{Server: z.Addr, Timeout: 2 * time.Second}
	status := func() string {
		var s []string
		for _, r := range res.Check(context.Background(), recs) {
			s = append(s, r.Purpose+"="+r.Status)
		}
		return strings.Join(s, " ")
	}
	if got := status(); got != "dkim=missing dkim-ed25519=missing spf=missing dmarc=missing return-path=missing" {
		t.Fatalf("nothing published: %s", got)
	}
	// The RSA key split in 255-byte strings (TCP for the long answer is
	// not needed here: it fits), the Ed25519 key of another pair, an SPF
	// record without the include, a DMARC record, the bounce MX.
	z.TXT(t, "mr1._domainkey.shop.example", recs[0].Value)
	other, _ := domains.NewKeys(true)
	z.TXT(t, "mr1e._domainkey.shop.example", "v=DKIM1; k=ed25519; p="+other.Ed25519Public)
	z.TXT(t, "shop.example", "v=spf1 include:_spf.google.com ~all")
	z.TXT(t, "shop.example", "google-site-verification=abc")
	z.TXT(t, "_dmarc.shop.example", "v=DMARC1; p=quarantine")
	z.Add(t, "bounces.shop.example. 300 IN MX 10 in.mailroom.test.")
	checked := res.Check(context.Background(), recs)
	var got []string
	for _, r := range checked {
		got = append(got, r.Purpose+"="+r.Status)
	}
	if s := strings.Join(got, " "); s != "dkim=found dkim-ed25519=wrong spf=wrong dmarc=found return-path=found" {
		t.Fatalf("published: %s", s)
	}
	if f := checked[2].Found; len(f) != 1 || f[0] != "v=spf1 include:_spf.google.com ~all" {
		t.Fatalf("spf found %q (the site verification is no SPF record)", f)
	}
	// Two SPF records are an error to receivers (RFC 7208 3.2): wrong.
	z.TXT(t, "shop.example", "v=spf1 include:_spf.mailroom.test ~all")
	if s := res.Check(context.Background(), recs)[2].Status; s != mail.RecordWrong {
		t.Fatalf("two SPF records: %s", s)
	}
	// A server that does not answer: unknown, with the error.
	dead := domains.Resolver{Server: "127.0.0.1:1", Timeout: 300 * time.Millisecond}
	if r := dead.Check(context.Background(), recs[:1])[0]; r.Status != mail.RecordUnknown || len(r.Found) != 1 {
		t.Fatalf("no server: %+v", r)
	}
}

func TestSealer(t *testing.T) {
	t.Parallel()
	if _, err := domains.NewSealer(""); err != domains.ErrNoSecret {
		t.Fatalf("empty secret: %v", err)
	}
	if _, err := domains.NewSealer(base64.StdEncoding.EncodeToString(make([]byte, 16))); err == nil {
		t.Fatal("a 16-byte secret was taken")
	}
	s, err := domains.NewSealer(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte("private key bytes")
	sealed := s.Seal(plain, "shop.example")
	if bytes.Contains(sealed, plain) || bytes.Equal(sealed, s.Seal(plain, "shop.example")) {
		t.Fatal("sealed shows the key, or twice the same")
	}
	if got, err := s.Open(sealed, "shop.example"); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := s.Open(sealed, "other.example"); err == nil {
		t.Fatal("opened under another domain's label")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s.Open(sealed, "shop.example"); err == nil {
		t.Fatal("opened a tampered key")
	}
	if _, err := s.Open([]byte("short"), "shop.example"); err == nil {
		t.Fatal("opened a short one")
	}
}

func TestParseSendingDomain(t *testing.T) {
	for in, want := range map[string]string{" Shop.Example. ": "shop.example", "bücher.example": "xn--bcher-kva.example", "a-b.c0.io": "a-b.c0.io"} {
		if got, err := mail.ParseSendingDomain(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "localhost", "10.0.0.1", "a..b", "-a.example", "a.123", "a_b.example", "a b.example",
		strings.Repeat("a", 64) + ".example", strings.Repeat("abcdefghi.", 26) + "example", "exa mple.com", "<b>.example"} {
		if _, err := mail.ParseSendingDomain(bad); err == nil {
			t.Errorf("%q taken", bad)
		}
	}
}
