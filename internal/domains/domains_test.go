package domains_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/mailroom/mailroom/internal/domains"
	"github.com/mailroom/mailroom/internal/mail"
)

// zone is a DNS server in the test process (miekg/dns over UDP and TCP
// on loopback) answering from records set by the test.
type zone struct {
	mu   sync.Mutex
	rrs  map[string][]dns.RR // by lower-case fqdn
	Addr string
}

func newZone(t *testing.T) *zone {
	t.Helper()
	z := &zone{rrs: map[string][]dns.RR{}}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z.Addr = pc.LocalAddr().String()
	l, err := net.Listen("tcp", z.Addr)
	if err != nil {
		t.Fatal(err)
	}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		z.mu.Lock()
		rrs, known := z.rrs[strings.ToLower(q.Name)]
		for _, rr := range rrs {
			if rr.Header().Rrtype == q.Qtype {
				m.Answer = append(m.Answer, rr)
			}
		}
		z.mu.Unlock()
		if !known {
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})
	udp, tcp := &dns.Server{PacketConn: pc, Handler: h}, &dns.Server{Listener: l, Handler: h}
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	t.Cleanup(func() { udp.Shutdown(); tcp.Shutdown() })
	return z
}

// add publishes a record in zone-file form ("name 300 IN TXT \"…\"").
func (z *zone) add(t *testing.T, s string) {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	name := strings.ToLower(rr.Header().Name)
	z.rrs[name] = append(z.rrs[name], rr)
}

// txt is a TXT record of value split in strings of 255 bytes, as a
// long DKIM key is published.
func txt(name, value string) string {
	var parts []string
	for len(value) > 255 {
		parts = append(parts, `"`+value[:255]+`"`)
		value = value[255:]
	}
	parts = append(parts, `"`+value+`"`)
	return name + " 300 IN TXT " + strings.Join(parts, " ")
}

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

	z := newZone(t)
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
	z.add(t, txt("mr1._domainkey.shop.example.", recs[0].Value))
	other, _ := domains.NewKeys(true)
	z.add(t, txt("mr1e._domainkey.shop.example.", "v=DKIM1; k=ed25519; p="+other.Ed25519Public))
	z.add(t, txt("shop.example.", "v=spf1 include:_spf.google.com ~all"))
	z.add(t, txt("shop.example.", "google-site-verification=abc"))
	z.add(t, txt("_dmarc.shop.example.", "v=DMARC1; p=quarantine"))
	z.add(t, "bounces.shop.example. 300 IN MX 10 in.mailroom.test.")
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
	z.add(t, txt("shop.example.", "v=spf1 include:_spf.mailroom.test ~all"))
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
