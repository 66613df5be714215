package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/testdb"
)

const webhookList = "/api/webhooks"

func webhookRow(id, userID int64, u string, events string) string {
	return fmt.Sprintf(`{"id":%d,"user_id":%d,"url":%q,"events":%s,"created_at":"<timestamp>","updated_at":"<timestamp>","deleted_at":null}`,
		id, userID, u, events)
}

const allEvents = `["delivered","deferred","bounce","dropped","open","click","unsubscribe","complaint","send.paused"]`

var secretRE = regexp.MustCompile(`^\{"status":"success","message":\{"id":(\d+),"secret":"(whsec_[A-Za-z0-9_-]{43})"\}\}$`)

// saveWebhook saves a webhook and answers its id and secret.
func saveWebhook(t *testing.T, a *api, acct account, body any) (int64, string) {
	t.Helper()
	r := a.do(req{method: "POST", path: "/api/webhooks/save", acct: &acct, body: body})
	m := secretRE.FindStringSubmatch(r.body)
	if r.code != 200 || m == nil {
		t.Fatalf("save: %d %s", r.code, r.body)
	}
	var id int64
	fmt.Sscan(m[1], &id)
	return id, m[2]
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	list := req{method: "GET", path: webhookList, acct: &acct}
	a.do(list).expect(t, 200, `{"status":"success","message":{"webhooks":[]}}`)

	id1, secret1 := saveWebhook(t, a, acct, url.Values{"url": {" https://hooks.example.com/mailroom "}})
	id2, secret2 := saveWebhook(t, a, acct, multipartBody{"url": "http://hooks.example.com:8080/b?x=1", "events[0]": "bounce", "events[1]": "delivered"})
	id3, _ := saveWebhook(t, a, acct, jsonBody(`{"url":"https://other.example/c","events":["click","open","click"]}`))
	if !(id1 < id2 && id2 < id3) || secret1 == secret2 {
		t.Fatalf("ids %d %d %d, secrets %s %s", id1, id2, id3, secret1, secret2)
	}
	rows := []string{
		webhookRow(id1, acct.id, "https://hooks.example.com/mailroom", allEvents),
		webhookRow(id2, acct.id, "http://hooks.example.com:8080/b?x=1", `["delivered","bounce"]`),
		webhookRow(id3, acct.id, "https://other.example/c", `["open","click"]`),
	}
	a.do(list).expectNormalized(t, 200, listOf("webhooks", "", rows...))
	a.do(req{method: "GET", path: webhookList + "?page=2&per_page=2", acct: &acct}).expectNormalized(t, 200,
		listOf("webhooks", `,"pagination":{"page":2,"per_page":2,"total":3}`, rows[2]))

	// The secret is stored as shown: it is what signs.
	var stored string
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT secret FROM webhooks WHERE id = $1", id1).Scan(&stored); err != nil || stored != secret1 {
		t.Fatalf("stored secret %q (%v), shown %q", stored, err, secret1)
	}

	// An update replaces the URL and the events (all when absent); the
	// secret stays.
	a.do(req{method: "POST", path: "/api/webhooks/update", acct: &acct,
		body: url.Values{"id": {fmt.Sprint(id2)}, "url": {"https://hooks.example.com/b2"}, "events[]": {"unsubscribe", "dropped"}}}).expect(t, 200, updatedOK)
	a.do(req{method: "POST", path: "/api/webhooks/update", acct: &acct,
		body: jsonBody(fmt.Sprintf(`{"id":%d,"url":"https://other.example/c"}`, id3))}).expect(t, 200, updatedOK)
	rows[1] = webhookRow(id2, acct.id, "https://hooks.example.com/b2", `["dropped","unsubscribe"]`)
	rows[2] = webhookRow(id3, acct.id, "https://other.example/c", allEvents)
	a.do(list).expectNormalized(t, 200, listOf("webhooks", "", rows...))
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT secret FROM webhooks WHERE id = $1", id2).Scan(&stored); err != nil || stored != secret2 {
		t.Fatalf("the update changed the secret: %q (%v)", stored, err)
	}

	// A URL the account has already is refused, on save and update.
	a.do(req{method: "POST", path: "/api/webhooks/save", acct: &acct, body: url.Values{"url": {"https://other.example/c"}}}).expect(t, 422,
		`{"status":"failed","errors":{"url":["The url has already been taken."]}}`)
	a.do(req{method: "POST", path: "/api/webhooks/update", acct: &acct,
		body: url.Values{"id": {fmt.Sprint(id1)}, "url": {"https://other.example/c"}}}).expect(t, 422,
		`{"status":"failed","errors":{"url":["The url has already been taken."]}}`)

	// Attempts: none yet.
	a.do(req{method: "GET", path: fmt.Sprintf("/api/webhooks/deliveries?id=%d", id1), acct: &acct}).expect(t, 200,
		`{"status":"success","message":{"deliveries":[]}}`)

	del := req{method: "DELETE", path: fmt.Sprintf("/api/webhooks/delete?id=%d", id1), acct: &acct}
	a.do(del).expect(t, 200, deletedOK)
	a.do(del).expect(t, 404, notFound)
	a.do(list).expectNormalized(t, 200, listOf("webhooks", "", rows[1:]...))
	a.do(req{method: "GET", path: fmt.Sprintf("/api/webhooks/deliveries?id=%d", id1), acct: &acct}).expect(t, 404, notFound)
	a.do(req{method: "POST", path: "/api/webhooks/update", acct: &acct,
		body: url.Values{"id": {fmt.Sprint(id1)}, "url": {"https://x.example/"}}}).expect(t, 404, notFound)
	// Its URL is free again.
	saveWebhook(t, a, acct, url.Values{"url": {"https://hooks.example.com/mailroom"}})
}

func TestWebhookLimit(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	for i := range 10 {
		saveWebhook(t, a, acct, url.Values{"url": {fmt.Sprintf("https://hooks.example.com/%d", i)}})
	}
	a.do(req{method: "POST", path: "/api/webhooks/save", acct: &acct, body: url.Values{"url": {"https://hooks.example.com/10"}}}).expect(t, 409,
		`{"status":"failed","errors":"An account may have at most 10 webhooks."}`)
	ids := listIDs(t, a.do(req{method: "GET", path: webhookList, acct: &acct}), "webhooks")
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/webhooks/delete?id=%d", ids[0]), acct: &acct}).expect(t, 200, deletedOK)
	saveWebhook(t, a, acct, url.Values{"url": {"https://hooks.example.com/10"}})
}

func TestWebhookValidation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	id, _ := saveWebhook(t, a, acct, url.Values{"url": {"https://hooks.example.com/x"}})
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		code   int
		want   string
	}{
		{"save nothing", "POST", "/api/webhooks/save", url.Values{}, 422, `{"url":["The url field is required."]}`},
		{"save not a URL", "POST", "/api/webhooks/save", url.Values{"url": {"hooks.example.com/x"}}, 422,
			`{"url":["The url must be a valid http or https URL."]}`},
		{"save ftp", "POST", "/api/webhooks/save", jsonBody(`{"url":"ftp://hooks.example.com/"}`), 422,
			`{"url":["The url must be a valid http or https URL."]}`},
		{"save too long", "POST", "/api/webhooks/save", url.Values{"url": {"https://hooks.example.com/" + strings.Repeat("x", 2030)}}, 422,
			`{"url":["The url may not be greater than 2048 characters."]}`},
		{"save loopback", "POST", "/api/webhooks/save", url.Values{"url": {"http://127.0.0.1:8080/hook"}}, 422,
			`{"url":["The url may not point to a private or loopback address."]}`},
		{"save private", "POST", "/api/webhooks/save", url.Values{"url": {"https://10.1.2.3/hook"}}, 422,
			`{"url":["The url may not point to a private or loopback address."]}`},
		{"save localhost", "POST", "/api/webhooks/save", url.Values{"url": {"http://localhost/hook"}}, 422,
			`{"url":["The url may not point to a private or loopback address."]}`},
		{"save unknown event", "POST", "/api/webhooks/save", jsonBody(`{"url":"https://h.example/","events":["open","sent"]}`), 422,
			`{"events":["The selected events is invalid."]}`},
		{"save url as array", "POST", "/api/webhooks/save", jsonBody(`{"url":["https://h.example/"]}`), 422,
			`{"url":["The url must be a string."]}`},
		{"update nothing", "POST", "/api/webhooks/update", url.Values{}, 422,
			`{"id":["The id field is required."],"url":["The url field is required."]}`},
		{"update bad id", "POST", "/api/webhooks/update", url.Values{"id": {"x"}, "url": {"https://h.example/"}}, 422,
			`{"id":["The id must be an integer."]}`},
		{"delete without id", "DELETE", "/api/webhooks/delete", nil, 422, `{"id":["The id field is required."]}`},
		{"deliveries without id", "GET", "/api/webhooks/deliveries", nil, 422, `{"id":["The id field is required."]}`},
		{"list bad page", "GET", webhookList + "?page=0", nil, 422, `{"page":["The page must be at least 1."]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.do(req{method: tt.method, path: tt.path, acct: &acct, body: tt.body}).
				expect(t, tt.code, `{"status":"failed","errors":`+tt.want+`}`)
		})
	}
	a.do(req{method: "DELETE", path: "/api/webhooks/delete?id=999999999", acct: &acct}).expect(t, 404, notFound)
	a.do(req{method: "GET", path: "/api/webhooks/deliveries?id=999999999", acct: &acct}).expect(t, 404, notFound)
	a.do(req{method: "GET", path: webhookList, acct: &acct}).expectNormalized(t, 200,
		listOf("webhooks", "", webhookRow(id, acct.id, "https://hooks.example.com/x", allEvents)))

	// WEBHOOK_ALLOW_PRIVATE: loopback and private targets are taken.
	open := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 1 << 20, AllowPrivateWebhooks: true})
	saveWebhook(t, open, acct, url.Values{"url": {"http://127.0.0.1:8080/hook"}})
	saveWebhook(t, open, acct, url.Values{"url": {"http://localhost/hook"}})
}

// Hosts spelt so they read as no private address but dial one (every
// IPv4 spelling inet_aton takes, IPv6 with a zone, IPv4 inside IPv6,
// IDNA full stops and digits, trailing dots) are refused at save and at
// update with the private-address message; public names, literals and
// IDN hosts are still taken, and WEBHOOK_ALLOW_PRIVATE takes the odd
// spellings too.
func TestWebhookOddHosts(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	id, _ := saveWebhook(t, a, acct, url.Values{"url": {"https://hooks.example.com/odd"}})
	const private = `{"status":"failed","errors":{"url":["The url may not point to a private or loopback address."]}}`
	odd := []string{
		"http://2130706433/", "http://0x7f000001/", "http://0177.0.0.1/", "http://127.1/", "http://0x7f.1/", "http://0/",
		"http://0.0.0.0/", "http://[::1%25lo]/", "http://[fe80::1%25lo]/", "http://[fe80::1]/", "http://[::ffff:127.0.0.1]/",
		"http://[::127.0.0.1]/", "http://[64:ff9b::7f00:1]/", "http://[64:ff9b::a00:1]/", "http://[2002:c0a8:101::1]/",
		"http://127。0。0。1/", "http://127．0．0．1/", "http://127｡0｡0｡1/", "http://１２７.0.0.1/", "http://①②⑦.0.0.1/",
		"http://localhost../", "http://LocalHost./", "http://api.localhost/", "http://ｌｏｃａｌｈｏｓｔ/", "http://localhost｡/",
		"http://255.255.255.255/", "http://240.1.2.3/", "http://224.0.0.1/", "http://[ff02::1]/", "http://[::]/",
		"http://169.254.169.254/latest/meta-data/", "http://0xa9fea9fe/", "http://10.1/", "http://127.0.0.1./",
	}
	for _, u := range odd {
		a.do(req{method: "POST", path: "/api/webhooks/save", acct: &acct, body: url.Values{"url": {u}}}).expect(t, 422, private)
		a.do(req{method: "POST", path: "/api/webhooks/update", acct: &acct,
			body: url.Values{"id": {fmt.Sprint(id)}, "url": {u}}}).expect(t, 422, private)
	}
	a.do(req{method: "POST", path: "/api/webhooks/save", acct: &acct, body: url.Values{"url": {"http://a..example/"}}}).expect(t, 422,
		`{"status":"failed","errors":{"url":["The url must be a valid http or https URL."]}}`)
	for _, u := range []string{"https://hooks.example.com./x", "http://8.8.8.8/x", "http://[2606:4700:4700::1111]/x",
		"https://bücher.example/x", "http://[64:ff9b::808:808]/x", "http://134744072/x", "https://0x.example/x"} {
		saveWebhook(t, a, acct, url.Values{"url": {u}})
	}
	open := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 1 << 20, AllowPrivateWebhooks: true})
	local := open.account()
	for _, u := range []string{"http://2130706433/", "http://[fe80::1%25lo]/", "http://127。0。0。1/"} {
		saveWebhook(t, open, local, url.Values{"url": {u}})
	}
}

func TestWebhookIsolation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	owner, intruder := a.account(), a.account()
	id, _ := saveWebhook(t, a, owner, url.Values{"url": {"https://hooks.example.com/x"}})
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/webhooks/delete?id=%d", id), acct: &intruder}).expect(t, 404, notFound)
	a.do(req{method: "POST", path: "/api/webhooks/update", acct: &intruder,
		body: url.Values{"id": {fmt.Sprint(id)}, "url": {"https://evil.example/"}}}).expect(t, 404, notFound)
	a.do(req{method: "GET", path: fmt.Sprintf("/api/webhooks/deliveries?id=%d", id), acct: &intruder}).expect(t, 404, notFound)
	a.do(req{method: "GET", path: webhookList, acct: &intruder}).expect(t, 200, `{"status":"success","message":{"webhooks":[]}}`)
	// The same URL is B's own webhook.
	saveWebhook(t, a, intruder, url.Values{"url": {"https://hooks.example.com/x"}})
	var got struct {
		Message struct{ Webhooks []json.RawMessage }
	}
	if err := json.Unmarshal([]byte(a.do(req{method: "GET", path: webhookList, acct: &owner}).body), &got); err != nil || len(got.Message.Webhooks) != 1 {
		t.Fatalf("owner's list: %v %s", err, got.Message.Webhooks)
	}
}

// testHosts is the DNS of the APIs under test (Deps.LookupHost, set by
// newAPIWith): the names below, and no such host for any other.
var testHosts = map[string][]netip.Addr{
	"loopback.hooks.example":      {netip.MustParseAddr("127.0.0.1")},
	"mapped.hooks.example":        {netip.MustParseAddr("::ffff:127.0.0.1")}, // as Go's resolver answers /etc/hosts
	"v6.hooks.example":            {netip.MustParseAddr("::1")},
	"imds.hooks.example":          {netip.MustParseAddr("169.254.169.254")},
	"nat64.hooks.example":         {netip.MustParseAddr("64:ff9b::a9fe:a9fe")},
	"lan.hooks.example":           {netip.MustParseAddr("192.168.1.20")},
	"mixed.hooks.example":         {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.5")},
	"mixed6.hooks.example":        {netip.MustParseAddr("2606:2800:21f:cb07:6820:80da:af6b:8b2c"), netip.MustParseAddr("fd00::5")},
	"xn--bcher-kva.hooks.example": {netip.MustParseAddr("127.0.0.1")}, // bücher.hooks.example, resolved by its A-label
	"public.hooks.example":        {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("2606:2800:21f:cb07:6820:80da:af6b:8b2c")},
}

// lookupTestHost answers from testHosts; slow.hooks.example times out. A
// lookup without a deadline of at most two seconds gets an error, so a
// name that should be refused is taken and the test says so.
func lookupTestHost(ctx context.Context, host string) ([]netip.Addr, error) {
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > 2*time.Second {
		return nil, fmt.Errorf("lookup %s: no deadline of at most 2 s", host)
	}
	if host == "slow.hooks.example" {
		return nil, &net.DNSError{Err: "i/o timeout", Name: host, IsTimeout: true}
	}
	if a, ok := testHosts[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Names only a resolver inside the network answers (one label, as vm
// and runsc in /etc/hosts or the metadata service's metadata; names under
// the private-use suffixes; cloud metadata names), names resolving to
// any inside address, and invalid IDNs are refused at save and at update;
// a public name, and a name that does not resolve or times out, are taken;
// WEBHOOK_ALLOW_PRIVATE takes all but the invalid IDNs.
func TestWebhookResolvedHosts(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	id, _ := saveWebhook(t, a, acct, url.Values{"url": {"https://hooks.example.com/kept"}})
	const (
		private = `{"status":"failed","errors":{"url":["The url may not point to a private or loopback address."]}}`
		invalid = `{"status":"failed","errors":{"url":["The url must be a valid http or https URL."]}}`
	)
	inside := []string{
		// By name.
		"http://vm:18999/", "http://runsc/", "http://VM./hook", "http://ｖｍ/", "http://metadata/computeMetadata/v1/",
		"http://instance-data/latest/meta-data/", "http://ip6-localhost/", "http://4294967296/", "http://receiver:8080/",
		"http://metadata.google.internal/computeMetadata/v1/", "http://Metadata.Google.Internal./", "http://metadata.goog/",
		"http://instance-data.ec2.internal/", "http://ip-10-0-0-1.ec2.internal/", "http://printer.local/",
		"http://api.default.svc.cluster.local/", "http://nas.home.arpa/", "http://router.lan/", "http://wiki.corp/",
		"http://files.intranet/", "http://box.home/", "http://db.private/",
		// By what the name resolves to.
		"http://loopback.hooks.example/", "https://LOOPBACK.hooks.example./x", "http://mapped.hooks.example/",
		"http://v6.hooks.example/", "http://imds.hooks.example/latest/meta-data/", "http://nat64.hooks.example/",
		"http://lan.hooks.example/", "http://mixed.hooks.example/", "http://mixed6.hooks.example/",
		"http://bücher.hooks.example/",
	}
	badIDN := []string{"http://loca\u200dlhost/", "http://hooks\u200d.example.com/", "http://xn--localhost-.example.com/"}
	refused := func(urls []string, want string) {
		for _, u := range urls {
			t.Run(u, func(t *testing.T) {
				a.do(req{method: "POST", path: "/api/webhooks/save", acct: &acct, body: url.Values{"url": {u}}}).expect(t, 422, want)
				a.do(req{method: "POST", path: "/api/webhooks/update", acct: &acct,
					body: url.Values{"id": {fmt.Sprint(id)}, "url": {u}}}).expect(t, 422, want)
			})
		}
	}
	refused(inside, private)
	refused(badIDN, invalid)
	// A refused name with a bad event: both fields, url first.
	a.do(req{method: "POST", path: "/api/webhooks/save", acct: &acct, body: url.Values{"url": {"http://mixed.hooks.example/"}, "events[0]": {"sent"}}}).
		expect(t, 422, `{"status":"failed","errors":{"url":["The url may not point to a private or loopback address."],"events":["The selected events is invalid."]}}`)
	a.do(req{method: "GET", path: webhookList, acct: &acct}).expectNormalized(t, 200,
		listOf("webhooks", "", webhookRow(id, acct.id, "https://hooks.example.com/kept", allEvents)))

	taken := []string{"https://public.hooks.example/x", "https://nowhere.hooks.example/x", "https://slow.hooks.example/x",
		"https://internal.example.com/x", "https://metadata.goog.example/x", "https://my_host.example.com/x"}
	for _, u := range taken {
		id, _ := saveWebhook(t, a, acct, url.Values{"url": {u}})
		a.do(req{method: "DELETE", path: fmt.Sprintf("/api/webhooks/delete?id=%d", id), acct: &acct}).expect(t, 200, deletedOK)
	}
	a.do(req{method: "POST", path: "/api/webhooks/update", acct: &acct,
		body: url.Values{"id": {fmt.Sprint(id)}, "url": {"https://public.hooks.example/y"}}}).
		expect(t, 200, `{"status":"success","message":"Updated Successfully"}`)

	open := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 1 << 20, AllowPrivateWebhooks: true})
	local := open.account()
	for i, u := range inside {
		id, _ := saveWebhook(t, open, local, url.Values{"url": {u}})
		if i%2 == 0 { // an account has at most 10
			open.do(req{method: "POST", path: "/api/webhooks/update", acct: &local,
				body: url.Values{"id": {fmt.Sprint(id)}, "url": {inside[len(inside)-1-i]}}}).
				expect(t, 200, `{"status":"success","message":"Updated Successfully"}`)
		}
		open.do(req{method: "DELETE", path: fmt.Sprintf("/api/webhooks/delete?id=%d", id), acct: &local}).expect(t, 200, deletedOK)
	}
	for _, u := range badIDN {
		open.do(req{method: "POST", path: "/api/webhooks/save", acct: &local, body: url.Values{"url": {u}}}).expect(t, 422, invalid)
	}
}
