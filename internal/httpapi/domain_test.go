package httpapi_test

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/domains"
	"github.com/mailroom/mailroom/internal/domains/dnstest"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

// domainAnswer is the shape of a domain's answer.
type domainAnswer struct {
	Status  string `json:"status"`
	Message struct {
		Domain struct {
			ID         int64               `json:"id"`
			Domain     string              `json:"domain"`
			Selector   string              `json:"selector"`
			Ed25519    bool                `json:"ed25519"`
			Verified   bool                `json:"verified"`
			Records    []mail.DomainRecord `json:"records"`
			CheckedAt  *string             `json:"checked_at"`
			VerifiedAt *string             `json:"verified_at"`
		} `json:"domain"`
	} `json:"message"`
}

func TestSendingDomains(t *testing.T) {
	t.Parallel()
	// Without DKIM_KEY_SECRET no domain is added.
	plain := newAPI(t)
	acct0 := plain.account()
	plain.do(req{method: "POST", path: "/api/domains/save", acct: &acct0, body: url.Values{"domain": {"shop.example"}}}).expect(t, 409,
		`{"status":"failed","errors":"Sending domains need DKIM_KEY_SECRET set on the server (32 random bytes, base64)."}`)

	secret := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	sealer, err := domains.NewSealer(secret)
	if err != nil {
		t.Fatal(err)
	}
	z := dnstest.New(t)
	a := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20}, func(d *httpapi.Deps) {
		d.Domains = &domains.Service{Store: d.DB, Sealer: sealer, Resolver: domains.Resolver{Server: z.Addr, Timeout: 2 * time.Second},
			Setup: domains.Setup{SPFInclude: "_spf.mailroom.test", BounceMX: "in.mailroom.test"},
			Now:   func() time.Time { return time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC) }}
	})
	acct, other := a.account(), a.account()
	save := func(body any) response {
		return a.do(req{method: "POST", path: "/api/domains/save", acct: &acct, body: body})
	}
	r := save(url.Values{"domain": {" Shop.Example. "}, "ed25519": {"true"}})
	var got domainAnswer
	if r.code != 200 || json.Unmarshal([]byte(r.body), &got) != nil {
		t.Fatalf("save: %d %s", r.code, r.body)
	}
	dom := got.Message.Domain
	if dom.Domain != "shop.example" || dom.Selector != "mr202611" || !dom.Ed25519 || dom.Verified || dom.CheckedAt != nil || len(dom.Records) != 5 {
		t.Fatalf("saved: %s", r.body)
	}
	var hosts []string
	for _, rec := range dom.Records {
		hosts = append(hosts, rec.Purpose+" "+rec.Type+" "+rec.Host+" "+rec.Status)
	}
	if s := strings.Join(hosts, ", "); s != "dkim TXT mr202611._domainkey.shop.example pending, dkim-ed25519 TXT mr202611e._domainkey.shop.example pending, "+
		"spf TXT shop.example pending, dmarc TXT _dmarc.shop.example pending, return-path MX bounces.shop.example pending" {
		t.Fatalf("records: %s", s)
	}
	if v := dom.Records[2].Value + " | " + dom.Records[3].Value + " | " + dom.Records[4].Value; v !=
		"v=spf1 include:_spf.mailroom.test ~all | v=DMARC1; p=none; rua=mailto:dmarc-reports@shop.example | 10 in.mailroom.test." {
		t.Fatalf("values: %s", v)
	}
	if strings.Contains(r.body, "PRIVATE") || strings.Contains(r.body, "private") {
		t.Fatalf("a private key in the answer: %s", r.body)
	}
	// The private key is kept sealed: it opens with the secret, under the
	// domain, to the pair of the published public key.
	var sealed []byte
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT rsa_private FROM sending_domains WHERE id = $1", dom.ID).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	der, err := sealer.Open(sealed, "shop.example")
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.(*rsa.PrivateKey).PublicKey)
	if !strings.HasSuffix(dom.Records[0].Value, "p="+base64.StdEncoding.EncodeToString(pub)) || key.(*rsa.PrivateKey).N.BitLen() != 2048 {
		t.Fatal("the sealed key is not the published one's pair")
	}

	save(url.Values{"domain": {"SHOP.example"}}).expect(t, 422, `{"status":"failed","errors":{"domain":["The domain has already been taken."]}}`)
	save(url.Values{"domain": {"10.0.0.1"}}).expect(t, 422, `{"status":"failed","errors":{"domain":["The domain must be a valid domain name."]}}`)
	save(url.Values{}).expect(t, 422, `{"status":"failed","errors":{"domain":["The domain field is required."]}}`)
	save(url.Values{"domain": {"b.example"}, "ed25519": {"maybe"}}).expect(t, 422, `{"status":"failed","errors":{"ed25519":["The ed25519 field must be true or false."]}}`)

	details := fmt.Sprintf("/api/domains/details?id=%d", dom.ID)
	a.do(req{method: "GET", path: details, acct: &other}).expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	a.do(req{method: "POST", path: "/api/domains/verify", acct: &other, body: url.Values{"id": {fmt.Sprint(dom.ID)}}}).expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)

	verify := func() domainAnswer {
		t.Helper()
		r := a.do(req{method: "POST", path: "/api/domains/verify", acct: &acct, body: url.Values{"id": {fmt.Sprint(dom.ID)}}})
		var v domainAnswer
		if r.code != 200 || json.Unmarshal([]byte(r.body), &v) != nil {
			t.Fatalf("verify: %d %s", r.code, r.body)
		}
		return v
	}
	states := func(v domainAnswer) string {
		var s []string
		for _, rec := range v.Message.Domain.Records {
			s = append(s, rec.Purpose+"="+rec.Status)
		}
		return strings.Join(s, " ")
	}
	if v := verify(); states(v) != "dkim=missing dkim-ed25519=missing spf=missing dmarc=missing return-path=missing" ||
		v.Message.Domain.Verified || v.Message.Domain.CheckedAt == nil {
		t.Fatalf("nothing published: %s %+v", states(v), v.Message.Domain)
	}
	for _, rec := range dom.Records[:4] {
		z.TXT(t, rec.Host, rec.Value)
	}
	z.TXT(t, "shop.example", "v=spf1 include:_spf.other.example ~all") // a second SPF record
	z.Add(t, "bounces.shop.example. 300 IN MX 10 in.mailroom.test.")
	v := verify()
	if states(v) != "dkim=found dkim-ed25519=found spf=wrong dmarc=found return-path=found" || v.Message.Domain.Verified {
		t.Fatalf("two SPF records: %s", states(v))
	}
	if f := v.Message.Domain.Records[2].Found; len(f) != 2 {
		t.Fatalf("spf found %q", f)
	}
	// The owner removes the other SPF record and publishes the one asked.
	z.Clear("shop.example")
	z.TXT(t, "shop.example", dom.Records[2].Value)
	if v = verify(); states(v) != "dkim=found dkim-ed25519=found spf=found dmarc=found return-path=found" || !v.Message.Domain.Verified ||
		v.Message.Domain.VerifiedAt == nil {
		t.Fatalf("all published: %s %+v", states(v), v.Message.Domain)
	}
	// A record taken down later: no longer verified.
	z.Clear("_dmarc.shop.example")
	if v = verify(); states(v) != "dkim=found dkim-ed25519=found spf=found dmarc=missing return-path=found" || v.Message.Domain.Verified ||
		v.Message.Domain.VerifiedAt != nil {
		t.Fatalf("DMARC taken down: %s %+v", states(v), v.Message.Domain)
	}
	list := req{method: "GET", path: "/api/domains", acct: &acct}
	if r := a.do(list); r.code != 200 || !strings.Contains(r.body, `"domain":"shop.example"`) {
		t.Fatalf("list: %d %s", r.code, r.body)
	}
	a.do(req{method: "GET", path: "/api/domains", acct: &other}).expect(t, 200, `{"status":"success","message":{"domains":[]}}`)

	del := req{method: "DELETE", path: fmt.Sprintf("/api/domains/delete?id=%d", dom.ID), acct: &acct}
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/domains/delete?id=%d", dom.ID), acct: &other}).expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	a.do(del).expect(t, 200, deletedOK)
	a.do(del).expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	a.do(req{method: "GET", path: details, acct: &acct}).expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	if r := save(url.Values{"domain": {"shop.example"}}); r.code != 200 {
		t.Fatalf("saved again after the delete: %d %s", r.code, r.body)
	}
}

// A send's details warn when its sender's domain is not a verified
// sending domain of an account that has added domains; an account that
// has added none sees interface.md's fields alone.
func TestSendWarnings(t *testing.T) {
	t.Parallel()
	sealer, _ := domains.NewSealer(base64.StdEncoding.EncodeToString([]byte("abcdefghijklmnopqrstuvwxyz012345")))
	z := dnstest.New(t)
	a := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20}, func(d *httpapi.Deps) {
		d.Domains = &domains.Service{Store: d.DB, Sealer: sealer, Resolver: domains.Resolver{Server: z.Addr, Timeout: 2 * time.Second},
			Setup: domains.Setup{SPFInclude: "_spf.mailroom.test", BounceMX: "in.mailroom.test"}}
	})
	acct := a.account()
	sender, _ := seedSender(t, acct, true) // news@acme.example
	group, typ := seedGroup(t, a, acct, "News").ID, seedType(t, acct, "Customers")
	r := a.do(req{method: "POST", path: "/api/single/send/create", acct: &acct, body: url.Values{
		"template_id": {"2"}, "sender_id": {fmt.Sprint(sender)}, "unsubscribe_group_id": {fmt.Sprint(group)},
		"single_send_name": {"Weekly"}, "subject": {"Hello"}, "preheader": {"P"}, "recipient_id[0]": {fmt.Sprintf("contacts_%d", typ)},
		"schedule_type": {"1"}, "schedule_date": {"2031-01-01"}, "schedule_time": {"09:00"}}})
	m := utrRE.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	details := req{method: "GET", path: "/api/single-send/details?utr=" + m[1], acct: &acct}
	warning := `"warnings":["The sender's domain acme.example is not a verified sending domain of the account: its mails are not DKIM-signed by acme.example, and Gmail and Yahoo require that of bulk senders. Add it with POST /api/domains/save, publish its records and verify it."]`
	if r := a.do(details); r.code != 200 || strings.Contains(r.body, "warnings") {
		t.Fatalf("no domains added: %d %s", r.code, r.body)
	}
	r = a.do(req{method: "POST", path: "/api/domains/save", acct: &acct, body: url.Values{"domain": {"acme.example"}}})
	var got domainAnswer
	if r.code != 200 || json.Unmarshal([]byte(r.body), &got) != nil {
		t.Fatalf("save: %d %s", r.code, r.body)
	}
	if r := a.do(details); r.code != 200 || !strings.HasSuffix(r.body, warning+"}]}}") {
		t.Fatalf("domain not verified: %d %s", r.code, r.body)
	}
	for _, rec := range got.Message.Domain.Records {
		if rec.Type == "TXT" {
			z.TXT(t, rec.Host, rec.Value)
		} else {
			z.Add(t, rec.Host+". 300 IN MX "+rec.Value)
		}
	}
	a.do(req{method: "POST", path: "/api/domains/verify", acct: &acct, body: url.Values{"id": {fmt.Sprint(got.Message.Domain.ID)}}})
	if r := a.do(details); r.code != 200 || strings.Contains(r.body, "warnings") {
		t.Fatalf("domain verified: %d %s", r.code, r.body)
	}
}

func TestDomainWarmup(t *testing.T) {
	t.Parallel()
	sealer, _ := domains.NewSealer(base64.StdEncoding.EncodeToString([]byte("abcdefghijklmnopqrstuvwxyz543210")))
	a := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20}, func(d *httpapi.Deps) {
		d.Domains = &domains.Service{Store: d.DB, Sealer: sealer, Setup: domains.Setup{SPFInclude: "_spf.m.test", BounceMX: "in.m.test"}}
	})
	acct, other := a.account(), a.account()
	r := a.do(req{method: "POST", path: "/api/domains/save", acct: &acct, body: url.Values{"domain": {"warm.example"}}})
	var got domainAnswer
	if r.code != 200 || json.Unmarshal([]byte(r.body), &got) != nil || !strings.Contains(r.body, `"warmup":null`) {
		t.Fatalf("save: %d %s", r.code, r.body)
	}
	id := fmt.Sprint(got.Message.Domain.ID)
	warm := func(acct account, v url.Values) response {
		return a.do(req{method: "POST", path: "/api/domains/warmup", acct: &acct, body: v})
	}
	today := time.Now().UTC().Format(time.DateOnly)
	if r := warm(acct, url.Values{"id": {id}, "warmup": {"true"}}); r.code != 200 ||
		!strings.Contains(r.body, `"warmup":{"from":"`+today+`","schedule":[50,100,500,1000,5000,10000,20000],"today":50}`) {
		t.Fatalf("warm-up on: %d %s", r.code, r.body)
	}
	if r := warm(acct, url.Values{"id": {id}, "warmup": {"1"}, "schedule": {" 10, 20,20 "}}); r.code != 200 ||
		!strings.Contains(r.body, `"warmup":{"from":"`+today+`","schedule":[10,20,20],"today":10}`) {
		t.Fatalf("a schedule of its own: %d %s", r.code, r.body)
	}
	bad := `{"status":"failed","errors":{"schedule":["The schedule must be day-by-day mail counts, comma-separated, each from 1 to 1000000000 and none below the one before."]}}`
	for _, s := range []string{"10,5", "abc", "0", "1,,2", "1000000001", "-5"} {
		warm(acct, url.Values{"id": {id}, "warmup": {"true"}, "schedule": {s}}).expect(t, 422, bad)
	}
	warm(acct, url.Values{"id": {id}, "warmup": {"true"}, "schedule": {strings.Repeat("1,", 60) + "1"}}).expect(t, 422,
		`{"status":"failed","errors":{"schedule":["The schedule may not have more than 60 days."]}}`)
	warm(acct, url.Values{"id": {id}}).expect(t, 422, `{"status":"failed","errors":{"warmup":["The warmup field is required."]}}`)
	warm(acct, url.Values{"warmup": {"yes"}}).expect(t, 422,
		`{"status":"failed","errors":{"id":["The id field is required."],"warmup":["The warmup field must be true or false."]}}`)
	warm(other, url.Values{"id": {id}, "warmup": {"true"}}).expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	if r := warm(acct, url.Values{"id": {id}, "warmup": {"false"}}); r.code != 200 || !strings.Contains(r.body, `"warmup":null`) {
		t.Fatalf("warm-up off: %d %s", r.code, r.body)
	}
}
