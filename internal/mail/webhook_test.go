package mail

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseWebhook(t *testing.T) {
	tests := []struct {
		name         string
		url          string
		events       []string
		allowPrivate bool
		want         WebhookInput
		fields       map[string][]string
	}{
		{"all events when none given", " https://hooks.example.com/mailroom ", nil, false,
			WebhookInput{URL: "https://hooks.example.com/mailroom", Events: HookAll}, nil},
		{"some events", "http://hooks.example.com:8080/x?a=1", []string{"delivered", " Bounce ", "click", "delivered"}, false,
			WebhookInput{URL: "http://hooks.example.com:8080/x?a=1", Events: HookDelivered | HookBounce | HookClick}, nil},
		{"missing url", "  ", []string{"open"}, false, WebhookInput{Events: HookOpen},
			map[string][]string{"url": {"The url field is required."}}},
		{"not http", "ftp://example.com/x", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url must be a valid http or https URL."}}},
		{"relative", "/hooks", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url must be a valid http or https URL."}}},
		{"space inside", "https://example.com/a b", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url must be a valid http or https URL."}}},
		{"fragment", "https://example.com/a#b", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url must be a valid http or https URL."}}},
		{"bad port", "https://example.com:99999999/", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url must be a valid http or https URL."}}},
		{"too long", "https://example.com/" + strings.Repeat("a", 2048), nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url may not be greater than 2048 characters."}}},
		{"loopback", "http://127.0.0.1:9000/hook", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url may not point to a private or loopback address."}}},
		{"localhost", "http://LOCALHOST./hook", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url may not point to a private or loopback address."}}},
		{"private v6", "http://[fd00::1]/hook", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url may not point to a private or loopback address."}}},
		{"shared space", "http://100.64.1.2/hook", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url may not point to a private or loopback address."}}},
		{"one label", "http://vm:18999/hook", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url may not point to a private or loopback address."}}},
		{"metadata name", "http://metadata.google.internal/computeMetadata/v1/", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url may not point to a private or loopback address."}}},
		{"invalid IDN", "http://loca\u200dlhost/hook", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url must be a valid http or https URL."}}},
		{"invalid IDN allowed private", "http://loca\u200dlhost/hook", nil, true, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url must be a valid http or https URL."}}},
		{"invalid A-label", "http://xn--localhost-.example.com/hook", nil, false, WebhookInput{Events: HookAll},
			map[string][]string{"url": {"The url must be a valid http or https URL."}}},
		{"valid A-label", "http://xn--bcher-kva.example/hook", nil, false,
			WebhookInput{URL: "http://xn--bcher-kva.example/hook", Events: HookAll}, nil},
		{"one label allowed", "http://receiver:8080/hook", nil, true,
			WebhookInput{URL: "http://receiver:8080/hook", Events: HookAll}, nil},
		{"underscore", "https://my_host.example.com/hook", nil, false,
			WebhookInput{URL: "https://my_host.example.com/hook", Events: HookAll}, nil},
		{"loopback allowed", "http://127.0.0.1:9000/hook", nil, true,
			WebhookInput{URL: "http://127.0.0.1:9000/hook", Events: HookAll}, nil},
		{"unknown event", "https://example.com/h", []string{"open", "sent"}, false, WebhookInput{URL: "https://example.com/h", Events: HookOpen},
			map[string][]string{"events": {"The selected events is invalid."}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseWebhook(tt.url, tt.events, tt.allowPrivate)
			var fields map[string][]string
			if e, ok := err.(*Error); ok {
				fields = e.Fields
			} else if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fields, tt.fields) {
				t.Errorf("fields %v, want %v", fields, tt.fields)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestHookKindNames(t *testing.T) {
	if got := strings.Join(HookAll.Names(), ","); got != "delivered,deferred,bounce,dropped,open,click,unsubscribe,complaint,send.paused" {
		t.Errorf("names %s", got)
	}
	if got := (HookBounce | HookOpen).Names(); !reflect.DeepEqual(got, []string{"bounce", "open"}) {
		t.Errorf("names %v", got)
	}
	if HookAll.Name() != "" || HookComplaint.Name() != "complaint" || HookSendPaused.Name() != "send.paused" {
		t.Error("Name")
	}
	if s := NewWebhookSecret(); !strings.HasPrefix(s, "whsec_") || len(s) != 49 || s == NewWebhookSecret() {
		t.Errorf("secret %q", s)
	}
}

// The hand-written encoder says what encoding/json would (HTML left
// unescaped), for any text.
func TestAppendWebhookEvents(t *testing.T) {
	events := []WebhookEvent{
		{Email: "ann@example.com", Timestamp: 1700000000, Event: "delivered", SingleSendUTR: "6f1c1a7e-0000-4000-8000-000000000000", DeliveryID: 42},
		{Email: "b\"o\\b@example.com", Timestamp: 1, Event: "bounce", AutomationUTR: "u", Type: "blocked",
			Reason: "550 5.7.1 <tab>\there\r\n\x00\x1f bad \xff\xfe utf8 \u2028 é 日本"},
		{Email: "c@example.com", Event: "click", URL: "https://shop.example/?a=1&b=<2>", GroupID: 7},
	}
	got := AppendWebhookEvents(nil, events)
	type ev struct {
		Email         string `json:"email"`
		Timestamp     int64  `json:"timestamp"`
		Event         string `json:"event"`
		SingleSendUTR string `json:"single_send_utr,omitempty"`
		AutomationUTR string `json:"automation_utr,omitempty"`
		DeliveryID    int64  `json:"delivery_id,omitempty"`
		Type          string `json:"type,omitempty"`
		Reason        string `json:"reason,omitempty"`
		URL           string `json:"url,omitempty"`
		GroupID       int64  `json:"unsubscribe_group_id,omitempty"`
	}
	want := make([]ev, len(events))
	for i, e := range events {
		want[i] = ev(e)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(want)
	wantJSON := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if string(got) != string(wantJSON) {
		t.Errorf("got\n%s\nwant\n%s", got, wantJSON)
	}
	if string(AppendWebhookEvents(nil, nil)) != "[]" {
		t.Error("empty")
	}
}

// The signature is the documented one (a vector computed with openssl
// dgst -sha256 -hmac), and the verifier takes exactly it: not another
// secret, body or digest, nor a time past the tolerance.
func TestWebhookSignature(t *testing.T) {
	body := []byte(`[{"email":"a@b.example","event":"delivered"}]`)
	at := time.Unix(1700000000, 0)
	const want = "t=1700000000,v1=5ec3bddb4034601ffbdb07172854341684d06e4d0210c631f77164f22987d6e5"
	if got := WebhookSignature("whsec_test", at, body); got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
	for _, tt := range []struct {
		name, secret, header string
		body                 []byte
		now                  time.Time
		ok                   bool
	}{
		{"as signed", "whsec_test", want, body, at, true},
		{"four minutes later", "whsec_test", want, body, at.Add(4 * time.Minute), true},
		{"six minutes later", "whsec_test", want, body, at.Add(6 * time.Minute), false},
		{"another secret", "whsec_other", want, body, at, false},
		{"another body", "whsec_test", want, append([]byte(" "), body...), at, false},
		{"another time", "whsec_test", strings.Replace(want, "t=1700000000", "t=1700000001", 1), body, at, false},
		{"no time", "whsec_test", want[strings.IndexByte(want, ',')+1:], body, at, false},
		{"no digest", "whsec_test", "t=1700000000", body, at, false},
		{"empty", "whsec_test", "", body, at, false},
	} {
		if got := VerifyWebhookSignature(tt.secret, tt.header, tt.body, tt.now, 5*time.Minute); got != tt.ok {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.ok)
		}
	}
}

// WebhookHost reads a URL's host as the webhook dialer will (an IP in
// every spelling a resolver takes, IDNA-mapped names), and PrivateHost,
// the judge the save check and the dialer share, refuses what reaches
// inside.
func TestWebhookHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host    string
		name    string // the name read, when no IP
		ip      string // the IP read
		private bool
	}{
		// IPv4 as inet_aton reads it.
		{"127.0.0.1", "", "127.0.0.1", true},
		{"2130706433", "", "127.0.0.1", true},
		{"0x7f000001", "", "127.0.0.1", true},
		{"0X7F000001", "", "127.0.0.1", true},
		{"0177.0.0.1", "", "127.0.0.1", true},
		{"0177.0.0.01", "", "127.0.0.1", true},
		{"127.1", "", "127.0.0.1", true},
		{"0x7f.1", "", "127.0.0.1", true},
		{"127.0.1", "", "127.0.0.1", true},
		{"0", "", "0.0.0.0", true},
		{"00", "", "0.0.0.0", true},
		{"10.1", "", "10.0.0.1", true},
		{"0xa9fea9fe", "", "169.254.169.254", true},
		{"127.0.0.1.", "", "127.0.0.1", true},
		{"127.1..", "", "127.0.0.1", true},
		{"134744072", "", "8.8.8.8", false},
		{"8.8.8.8", "", "8.8.8.8", false},
		{"255.255.255.255", "", "255.255.255.255", true},
		{"240.0.0.1", "", "240.0.0.1", true},
		{"224.0.0.251", "", "224.0.0.251", true},
		{"100.64.0.1", "", "100.64.0.1", true},
		{"198.18.0.1", "", "198.18.0.1", true},
		{"192.0.2.1", "", "192.0.2.1", true},
		// Not inet_aton: names, judged on what they resolve to.
		{"1.2.3.4.5", "1.2.3.4.5", "", false},
		{"256.1.1.1", "256.1.1.1", "", false},
		{"1.2.65536", "1.2.65536", "", false},
		{"127.16777216", "127.16777216", "", false},
		{"4294967296", "4294967296", "", true}, // a name, of one label
		{"0x", "0x", "", true},
		{"08", "08", "", true},
		{"0x1g", "0x1g", "", true},
		{"1..2", "1..2", "", false},
		{"0x.example", "0x.example", "", false},
		// IPv6: zones, IPv4 inside.
		{"::1", "", "::1", true},
		{"::", "", "::", true},
		{"::1%lo", "", "::1%lo", true},
		{"fe80::1%lo", "", "fe80::1%lo", true},
		{"2606:4700:4700::1111%eth0", "", "2606:4700:4700::1111%eth0", true},
		{"fe80::1", "", "fe80::1", true},
		{"fd00::1", "", "fd00::1", true},
		{"fec0::1", "", "fec0::1", true},
		{"ff02::1", "", "ff02::1", true},
		{"::ffff:127.0.0.1", "", "::ffff:127.0.0.1", true},
		{"::ffff:7f00:1", "", "::ffff:127.0.0.1", true},
		{"::ffff:8.8.8.8", "", "::ffff:8.8.8.8", false},
		{"::127.0.0.1", "", "::7f00:1", true},
		{"::8.8.8.8", "", "::808:808", true}, // IPv4-compatible: deprecated, never reachable
		{"64:ff9b::7f00:1", "", "64:ff9b::7f00:1", true},
		{"64:ff9b::10.0.0.1", "", "64:ff9b::a00:1", true},
		{"64:ff9b::8.8.8.8", "", "64:ff9b::808:808", false},
		{"64:ff9b:1::8.8.8.8", "", "64:ff9b:1::808:808", true},
		{"2002:7f00:1::1", "", "2002:7f00:1::1", true},
		{"2002:0808:0808::1", "", "2002:808:808::1", false},
		{"2001:db8::1", "", "2001:db8::1", true},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "", "2001:0:4136:e378:8000:63bf:3fff:fdd2", true}, // Teredo
		{"2606:4700:4700::1111", "", "2606:4700:4700::1111", false},
		// Names: IDNA full stops and digits, case, trailing dots.
		{"127。0。0。1", "", "127.0.0.1", true},
		{"127．0．0．1", "", "127.0.0.1", true},
		{"127｡0｡0｡1", "", "127.0.0.1", true},
		{"１２７.０.０.１", "", "127.0.0.1", true},
		{"①②⑦.0.0.1", "", "127.0.0.1", true},
		{"𝟏𝟐𝟕.𝟏", "", "127.0.0.1", true},
		{"localhost", "localhost", "", true},
		{"LocalHost.", "localhost", "", true},
		{"localhost..", "localhost", "", true},
		{"localhost｡", "localhost", "", true},
		{"ｌｏｃａｌｈｏｓｔ", "localhost", "", true},
		{"api.localhost", "api.localhost", "", true},
		{"notlocalhost.example", "notlocalhost.example", "", false},
		{"Hooks.Example.COM.", "hooks.example.com", "", false},
		{"bücher.example", "xn--bcher-kva.example", "", false},
		// Names only a resolver inside the network answers.
		{"notlocalhost", "notlocalhost", "", true},
		{"vm", "vm", "", true},
		{"VM.", "vm", "", true},
		{"ｖｍ", "vm", "", true},
		{"metadata", "metadata", "", true},
		{"instance-data", "instance-data", "", true},
		{"ip6-localhost", "ip6-localhost", "", true},
		{"metadata.google.internal", "metadata.google.internal", "", true},
		{"Metadata.Google.Internal.", "metadata.google.internal", "", true},
		{"instance-data.ec2.internal", "instance-data.ec2.internal", "", true},
		{"metadata.goog", "metadata.goog", "", true},
		{"internal", "internal", "", true},
		{"printer.local", "printer.local", "", true},
		{"api.default.svc.cluster.local", "api.default.svc.cluster.local", "", true},
		{"nas.home.arpa", "nas.home.arpa", "", true},
		{"router.lan", "router.lan", "", true},
		{"wiki.corp", "wiki.corp", "", true},
		{"files.intranet", "files.intranet", "", true},
		{"localhost.localdomain", "localhost.localdomain", "", true},
		{"nas.LocalDomain.", "nas.localdomain", "", true},
		{"box.home", "box.home", "", true},
		{"db.private", "db.private", "", true},
		{"internal.example.com", "internal.example.com", "", false},
		{"local.example.com", "local.example.com", "", false},
		{"lan.example", "lan.example", "", false},
		{"metadata.goog.example", "metadata.goog.example", "", false},
		{"example.homes", "example.homes", "", false},
		{"printer.localnet", "printer.localnet", "", false},
		{"arpa.example", "arpa.example", "", false},
	}
	for _, tt := range tests {
		name, ip := WebhookHost(tt.host)
		gotIP := ""
		if ip.IsValid() {
			gotIP = ip.String()
		}
		if name != tt.name || gotIP != tt.ip {
			t.Errorf("WebhookHost(%q) = %q, %q; want %q, %q", tt.host, name, gotIP, tt.name, tt.ip)
		}
		if got := PrivateHost(tt.host); got != tt.private {
			t.Errorf("PrivateHost(%q) = %v, want %v", tt.host, got, tt.private)
		}
	}
}

// WebhookURLName is the name the API resolves at save: the A-label,
// lower case, without trailing dots; none for an IP address.
func TestWebhookURLName(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://Hooks.Example.COM./x": "hooks.example.com",
		"https://Bücher.Example:8443/": "xn--bcher-kva.example",
		"http://127.1/":                "",
		"http://2130706433:80/":        "",
		"http://[::1]/":                "",
		"http://[fe80::1%25lo]/":       "",
		"http://127。0。0。1/":            "",
	} {
		if got := WebhookURLName(raw); got != want {
			t.Errorf("WebhookURLName(%q) = %q, want %q", raw, got, want)
		}
	}
}
