package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != "postgres://postgres@127.0.0.1:5432/mailer?sslmode=disable" ||
		c.RedisURL != "redis://127.0.0.1:6379/0" || c.HTTPAddr != ":8080" ||
		c.PublicURL != "http://localhost:8080" || c.SMTPURL != "" || c.AllowUnverifiedSenders ||
		c.ShutdownTimeout != 30*time.Second || c.WorkerShutdownTimeout != 2*time.Minute || c.MaxBodyBytes != 10<<20 || c.MaxMailBytes != 10<<20 || c.MailMemoryBudget != 256<<20 ||
		c.NotifyFrom != "mailroom <notifications@localhost>" || c.UnsubscribeMailto != "unsubscribe@localhost" || c.DKIMKeys != "" ||
		!c.APIMetrics || c.WorkerMetricsAddr != "127.0.0.1:9091" || c.MetricsUser != "" ||
		c.WebhookConcurrency != 4 || c.WebhookTimeout != 10*time.Second || c.WebhookRetryMin != 30*time.Second ||
		c.WebhookRetryMax != time.Hour || c.WebhookRetryFor != 24*time.Hour || c.WebhookAllowPrivate {
		t.Fatalf("defaults: %+v", c)
	}
	// Unset, the worker's listener moves up from 9091 when another worker
	// on the host has it, then takes any free port.
	if a := c.WorkerMetricsAddrs; len(a) != 10 || a[0] != "127.0.0.1:9091" || a[8] != "127.0.0.1:9099" || a[9] != "127.0.0.1:0" {
		t.Fatalf("metrics addresses %q", a)
	}
}

func TestValues(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{
		"ALLOW_UNVERIFIED_SENDERS": "true",
		"MAX_UPLOAD_BYTES":         "512MB",
		"MAX_MAIL_BYTES":           "25MB",
		"MAIL_MEMORY_BUDGET":       "1GB",
		"PUBLIC_URL":               "https://mail.example.com/",
		"SMTP_URL":                 "smtps://u:p@smtp.example.com:465",
		"SHUTDOWN_TIMEOUT":         "90s",
		"WORKER_SHUTDOWN_TIMEOUT":  "5m",
		"NOTIFY_FROM":              "Acme <ops@acme.example>",
		"DKIM_KEYS":                "acme.example=s1:/etc/dkim/acme.pem",
		"API_METRICS":              "false",
		"WORKER_METRICS_ADDR":      ":9100",
		"METRICS_USER":             "prom",
		"METRICS_PASSWORD":         "scrape",
		"WEBHOOK_CONCURRENCY":      "8",
		"WEBHOOK_TIMEOUT":          "3s",
		"WEBHOOK_RETRY_MIN":        "1s",
		"WEBHOOK_RETRY_MAX":        "10m",
		"WEBHOOK_RETRY_FOR":        "72h",
		"WEBHOOK_ALLOW_PRIVATE":    "true",
		"TRUSTED_PROXIES":          "10.0.0.0/8, 192.168.1.7,::1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.TrustedProxies) != "[10.0.0.0/8 192.168.1.7/32 ::1/128]" {
		t.Fatalf("trusted proxies %v", c.TrustedProxies)
	}
	if c.WebhookConcurrency != 8 || c.WebhookTimeout != 3*time.Second || c.WebhookRetryMin != time.Second ||
		c.WebhookRetryMax != 10*time.Minute || c.WebhookRetryFor != 72*time.Hour || !c.WebhookAllowPrivate {
		t.Fatalf("webhooks: %+v", c)
	}
	if !c.AllowUnverifiedSenders || c.MaxUploadBytes != 512<<20 || c.MaxMailBytes != 25<<20 || c.MailMemoryBudget != 1<<30 || c.PublicURL != "https://mail.example.com" || c.ShutdownTimeout != 90*time.Second ||
		c.WorkerShutdownTimeout != 5*time.Minute || c.NotifyFrom != "Acme <ops@acme.example>" ||
		c.UnsubscribeMailto != "unsubscribe@mail.example.com" || c.DKIMKeys != "acme.example=s1:/etc/dkim/acme.pem" ||
		c.APIMetrics || c.WorkerMetricsAddr != ":9100" || c.MetricsUser != "prom" || c.MetricsPassword != "scrape" {
		t.Fatalf("%+v", c)
	}
	for v, want := range map[string]string{"off": "", "OFF": "", "127.0.0.1:0": "127.0.0.1:0", "[::1]:9091": "[::1]:9091"} {
		c, err := Load(env(map[string]string{"WORKER_METRICS_ADDR": v}))
		if err != nil || c.WorkerMetricsAddr != want || want == "" && c.WorkerMetricsAddrs != nil ||
			want != "" && !slices.Equal(c.WorkerMetricsAddrs, []string{want}) {
			t.Errorf("WORKER_METRICS_ADDR=%s: %q %q %v", v, c.WorkerMetricsAddr, c.WorkerMetricsAddrs, err)
		}
	}
	for v, want := range map[string]string{"none": "", "NONE": "", "leave@acme.example": "leave@acme.example"} {
		c, err := Load(env(map[string]string{"UNSUBSCRIBE_MAILTO": v}))
		if err != nil || c.UnsubscribeMailto != want {
			t.Errorf("UNSUBSCRIBE_MAILTO=%s: %q %v", v, c.UnsubscribeMailto, err)
		}
	}
}

// Every bad value is reported at once, each on a line naming its variable,
// and a password never appears.
func TestBadValues(t *testing.T) {
	t.Parallel()
	_, err := Load(env(map[string]string{
		"DATABASE_URL":             "mysql://root:hunter2@db/x",
		"REDIS_URL":                "localhost",
		"HTTP_ADDR":                "8080",
		"ALLOW_UNVERIFIED_SENDERS": "maybe",
		"MAX_BODY_BYTES":           "lots",
		"SMTP_URL":                 "http://x",
		"MONITORING_USER":          "admin",
		"WORKER_CONCURRENCY":       "0",
		"SHUTDOWN_TIMEOUT":         "soon",
		"WORKER_SHUTDOWN_TIMEOUT":  "-1s",
		"NOTIFY_FROM":              "not an address <",
		"LOG_LEVEL":                "loud",
		"UNSUBSCRIBE_MAILTO":       "Leave <leave@acme.example>",
		"API_METRICS":              "sometimes",
		"WORKER_METRICS_ADDR":      "9091",
		"METRICS_PASSWORD":         "hunter2",
		"WEBHOOK_RETRY_MIN":        "2h",
		"TRUSTED_PROXIES":          "10.0.0.0/8,nginx",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, name := range []string{"DATABASE_URL", "REDIS_URL", "HTTP_ADDR", "ALLOW_UNVERIFIED_SENDERS", "MAX_BODY_BYTES",
		"SMTP_URL", "MONITORING_USER", "WORKER_CONCURRENCY", "SHUTDOWN_TIMEOUT", "WORKER_SHUTDOWN_TIMEOUT", "NOTIFY_FROM", "LOG_LEVEL", "UNSUBSCRIBE_MAILTO",
		"API_METRICS", "WORKER_METRICS_ADDR", "METRICS_USER", "WEBHOOK_RETRY_MIN", "TRUSTED_PROXIES"} {
		if !strings.Contains(msg, name+":") && !strings.Contains(msg, name+" and") {
			t.Errorf("%s not reported in:\n%s", name, msg)
		}
	}
	if strings.Contains(msg, "hunter2") {
		t.Errorf("password leaked: %s", msg)
	}
	if n := strings.Count(msg, "\n") + 1; n != 18 {
		t.Errorf("%d lines, want 18:\n%s", n, msg)
	}
	for _, v := range []string{"localhost", ":http", "127.0.0.1:70000", "127.0.0.1:-1"} {
		if _, err := Load(env(map[string]string{"WORKER_METRICS_ADDR": v})); err == nil || !strings.Contains(err.Error(), "WORKER_METRICS_ADDR:") {
			t.Errorf("WORKER_METRICS_ADDR=%s: %v", v, err)
		}
	}
}

// DOMAIN_LIMITS: unset, the built-in limits of the big providers; off,
// none; entries change them; a bad entry is one line naming the variable.
// The holds' backoff bounds are read beside it.
func TestDomainLimits(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	limited := map[string]int{}
	for _, l := range c.DomainLimits {
		for _, d := range l.Domains {
			limited[d] = l.Rate
		}
	}
	for _, d := range []string{"gmail.com", "googlemail.com", "outlook.com", "hotmail.com", "live.com", "yahoo.com", "aol.com", "icloud.com"} {
		if limited[d] == 0 {
			t.Errorf("%s has no built-in limit", d)
		}
	}
	if c.DomainHoldMin != 30*time.Second || c.DomainHoldMax != 15*time.Minute {
		t.Errorf("holds %v to %v", c.DomainHoldMin, c.DomainHoldMax)
	}

	c, err = Load(env(map[string]string{"DOMAIN_LIMITS": "off"}))
	if err != nil || c.DomainLimits != nil {
		t.Errorf("off: %v %v", c.DomainLimits, err)
	}
	c, err = Load(env(map[string]string{"DOMAIN_LIMITS": "defaults=off;gmail.com=rate:50,conc:10;example.com=rate:5",
		"DOMAIN_HOLD_MIN": "1s", "DOMAIN_HOLD_MAX": "1m"}))
	if err != nil || len(c.DomainLimits) != 2 || c.DomainLimits[0].String() != "gmail.com=rate:50/s,burst:50,conc:10" ||
		c.DomainLimits[1].String() != "example.com=rate:5/s,burst:5" || c.DomainHoldMin != time.Second || c.DomainHoldMax != time.Minute {
		t.Errorf("%v %v %v %v", c.DomainLimits, c.DomainHoldMin, c.DomainHoldMax, err)
	}

	_, err = Load(env(map[string]string{"DOMAIN_LIMITS": "gmail.com=rate:fast;yahoo.com", "DOMAIN_HOLD_MIN": "10m", "DOMAIN_HOLD_MAX": "1m"}))
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "DOMAIN_LIMITS: ") || !strings.Contains(lines[0], `"gmail.com=rate:fast"`) ||
		!strings.Contains(lines[0], `"yahoo.com"`) || !strings.HasPrefix(lines[1], "DOMAIN_HOLD_MAX: ") {
		t.Errorf("%s", err)
	}
}

// Bounce intake: VERP and the inbound listener are off unless set; bad
// values are reported with their variable.
func TestBounceIntake(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil || c.BounceDomain != "" || c.InboundSMTPAddr != "" || c.InboundMaxBytes != 4<<20 || c.InboundMaxConns != 1000 ||
		c.InboundMaxConnsPerIP != 10 || c.InboundGreetingTimeout != 5*time.Second || c.InboundTimeout != time.Minute {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = Load(env(map[string]string{"BOUNCE_DOMAIN": "Bounces.Example.COM.", "INBOUND_SMTP_ADDR": ":2525", "INBOUND_MAX_BYTES": "1MB",
		"INBOUND_MAX_CONNS": "50", "INBOUND_MAX_CONNS_PER_IP": "50", "INBOUND_GREETING_TIMEOUT": "2s", "INBOUND_TIMEOUT": "5m"}))
	if err != nil || c.BounceDomain != "bounces.example.com" || c.InboundSMTPAddr != ":2525" || c.InboundMaxBytes != 1<<20 ||
		c.InboundMaxConns != 50 || c.InboundMaxConnsPerIP != 50 || c.InboundGreetingTimeout != 2*time.Second || c.InboundTimeout != 5*time.Minute {
		t.Fatalf("values: %+v %v", c, err)
	}
	for _, bad := range []struct {
		name string
		env  map[string]string
	}{
		{"BOUNCE_DOMAIN", map[string]string{"BOUNCE_DOMAIN": "localhost"}},
		{"BOUNCE_DOMAIN", map[string]string{"BOUNCE_DOMAIN": "bad_domain.example"}},
		{"BOUNCE_DOMAIN", map[string]string{"BOUNCE_DOMAIN": "-a.example"}},
		{"INBOUND_SMTP_ADDR", map[string]string{"INBOUND_SMTP_ADDR": "2525"}},
		// nothing to receive: neither bounces nor the mailto
		{"INBOUND_SMTP_ADDR", map[string]string{"INBOUND_SMTP_ADDR": ":2525", "UNSUBSCRIBE_MAILTO": "none"}},
		{"INBOUND_MAX_BYTES", map[string]string{"INBOUND_MAX_BYTES": "big"}},
		{"INBOUND_MAX_CONNS", map[string]string{"INBOUND_MAX_CONNS": "0"}},
		{"INBOUND_MAX_CONNS_PER_IP", map[string]string{"INBOUND_MAX_CONNS_PER_IP": "-1"}},
		{"INBOUND_MAX_CONNS_PER_IP", map[string]string{"INBOUND_SMTP_ADDR": ":2525", "INBOUND_MAX_CONNS": "5", "INBOUND_MAX_CONNS_PER_IP": "6"}},
		{"INBOUND_GREETING_TIMEOUT", map[string]string{"INBOUND_GREETING_TIMEOUT": "5"}},
		{"INBOUND_TIMEOUT", map[string]string{"INBOUND_TIMEOUT": "-1m"}},
		{"MAX_MAIL_BYTES", map[string]string{"MAX_MAIL_BYTES": "0"}},
		{"MAIL_MEMORY_BUDGET", map[string]string{"MAIL_MEMORY_BUDGET": "lots"}},
		{"MAIL_MEMORY_BUDGET", map[string]string{"MAIL_MEMORY_BUDGET": "-1"}},
	} {
		if _, err := Load(env(bad.env)); err == nil || !strings.Contains(err.Error(), bad.name+":") {
			t.Errorf("%v: %v", bad.env, err)
		}
	}
}

// CLICK_TRACKING is on unless turned off; anything but on or off (or
// true, false, 1, 0) is refused.
func TestClickTracking(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"": true, "on": true, "ON": true, "true": true, "1": true, " off ": false, "Off": false, "false": false, "0": false} {
		c, err := Load(env(map[string]string{"CLICK_TRACKING": v}))
		if err != nil || c.ClickTracking != want {
			t.Errorf("CLICK_TRACKING=%q: %v, %v; want %v", v, c.ClickTracking, err, want)
		}
	}
	if _, err := Load(env(map[string]string{"CLICK_TRACKING": "sometimes"})); err == nil || !strings.Contains(err.Error(), "CLICK_TRACKING:") {
		t.Errorf("CLICK_TRACKING=sometimes: %v", err)
	}
}

// The design editor's image store: MEDIA_DIR by default; with
// MEDIA_S3_ENDPOINT the bucket, which needs its name, a bare host[:port]
// and both keys or neither.
func TestMedia(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil || c.Media.Dir != "./var/media" || c.Media.S3Endpoint != "" {
		t.Fatalf("defaults: %+v %v", c.Media, err)
	}
	c, err = Load(env(map[string]string{"MEDIA_DIR": "/srv/media", "MEDIA_S3_ENDPOINT": "s3.example.com:9000", "MEDIA_S3_BUCKET": "mails",
		"MEDIA_S3_ACCESS_KEY": "AK", "MEDIA_S3_SECRET_KEY": "SK", "MEDIA_S3_REGION": "eu-1", "MEDIA_S3_USE_SSL": "true", "MEDIA_S3_PREFIX": "media/"}))
	if m := c.Media; err != nil || m.Dir != "/srv/media" || m.S3Endpoint != "s3.example.com:9000" || m.S3Bucket != "mails" ||
		m.S3AccessKey != "AK" || m.S3SecretKey != "SK" || m.S3Region != "eu-1" || !m.S3UseSSL || m.S3Prefix != "media/" {
		t.Fatalf("values: %+v %v", c.Media, err)
	}
	_, err = Load(env(map[string]string{"MEDIA_S3_ENDPOINT": "https://s3.example.com", "MEDIA_S3_ACCESS_KEY": "AK", "MEDIA_S3_USE_SSL": "yes please"}))
	for _, want := range []string{"MEDIA_S3_ENDPOINT:", "MEDIA_S3_BUCKET:", "MEDIA_S3_ACCESS_KEY and MEDIA_S3_SECRET_KEY:", "MEDIA_S3_USE_SSL:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s not reported: %v", want, err)
		}
	}
}

// SMTP_URL may name several relays; what is wrong with one is reported
// with its place, never with its password.
func TestRelays(t *testing.T) {
	t.Parallel()
	cfg, err := Load(env(map[string]string{
		"SMTP_URL": "smtp://u:hunter2@mx1.relay.example:587?starttls=true&weight=3 smtp://mx2.relay.example?name=backup&weight=0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.RelayNames(), " "); got != "mx1 backup" || cfg.Relays[0].Weight != 3 || cfg.Relays[0].Password != "hunter2" {
		t.Fatalf("relays %q: %+v", got, cfg.Relays)
	}
	if cfg, err := Load(env(map[string]string{})); err != nil || cfg.RelayNames() != nil {
		t.Fatalf("without SMTP_URL: %v %v", cfg.RelayNames(), err)
	}
	for raw, want := range map[string]string{
		"smtp://u:hunter2@a.example smtp://u:hunter2@a.example": `SMTP_URL relay 2: the name "a" is taken by another relay (set name=)`,
		"smtp://u:hunter2@a.example ftp://u:hunter2@b.example":  `SMTP_URL: "ftp://u:xxxxx@b.example" is not an smtp:// or smtps:// URL`,
		"smtp://u:hunter2@a.example?providers=aol":              `SMTP_URL: providers="aol": "aol" is not one of gmail, microsoft, yahoo, apple, others`,
	} {
		_, err := Load(env(map[string]string{"SMTP_URL": raw}))
		if err == nil || err.Error() != want {
			t.Errorf("SMTP_URL=%s: %v\nwant %s", raw, err, want)
		}
	}
}

// A URL that does not parse, or whose password holds /, ? or #, never
// shows its password in an error; one whose password's digits would read
// as a port with a path is refused.
func TestURLPasswordsNeverShown(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"smtp://u:hunter2@host:badport", "smtp://u:hunter2@[::1", "smtp://u:hunter2@%zz", "smtp://u:hunter2%zz@a.example",
		"smtp://u:hunter2@a.example\x00", "smtp://u:hun#ter2@a.example", "smtp://u:hun/ter2@a.example", "smtp://u:hun?ter2@a.example",
		"smtp://u:hunter2 @a.example", "smtp://u:12345/hunter2@a.example", "smtp://a.example:99999 smtp://u:hunter2@b.example:0",
	} {
		_, err := Load(env(map[string]string{"SMTP_URL": raw}))
		if err == nil {
			t.Errorf("SMTP_URL=%q: no error", raw)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "12345") || strings.Contains(err.Error(), "ter2") {
			t.Errorf("SMTP_URL=%q: the password shows: %v", raw, err)
		}
	}
	for _, v := range []map[string]string{
		{"DATABASE_URL": "postgres://u:hunter2@[::1/x"}, {"DATABASE_URL": "postgres://u:hun/ter2@db/x"},
		{"REDIS_URL": "redis://u:hunter2@[::1"}, {"REDIS_URL": "redis://:hun#ter2@r:6379/0"},
	} {
		_, err := Load(env(v))
		if err != nil && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "ter2")) {
			t.Errorf("%v: the password shows: %v", v, err)
		}
	}
}
