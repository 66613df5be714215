// Package dnstest is a DNS server for tests (miekg/dns over UDP and TCP
// on loopback), answering from records a test publishes.
package dnstest

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// Zone is a running test DNS server; Addr is its host:port.
type Zone struct {
	mu   sync.Mutex
	rrs  map[string][]dns.RR // by lower-case fqdn
	Addr string
}

// New starts a Zone, stopped when the test ends.
func New(t testing.TB) *Zone {
	t.Helper()
	z := &Zone{rrs: map[string][]dns.RR{}}
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

// Add publishes a record in zone-file form (`name 300 IN MX 10 host.`).
func (z *Zone) Add(t testing.TB, s string) {
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

// TXT publishes a TXT record at name, its value split in strings of 255
// bytes as a long DKIM key is.
func (z *Zone) TXT(t testing.TB, name, value string) {
	t.Helper()
	var parts []string
	for len(value) > 255 {
		parts = append(parts, `"`+value[:255]+`"`)
		value = value[255:]
	}
	parts = append(parts, `"`+value+`"`)
	z.Add(t, dns.Fqdn(name)+" 300 IN TXT "+strings.Join(parts, " "))
}

// Clear takes every record at name down.
func (z *Zone) Clear(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	delete(z.rrs, strings.ToLower(dns.Fqdn(name)))
}
