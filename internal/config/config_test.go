package config

import (
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
		c.ShutdownTimeout != 30*time.Second || c.WorkerShutdownTimeout != 2*time.Minute || c.MaxBodyBytes != 10<<20 ||
		c.NotifyFrom != "mailroom <notifications@localhost>" || c.UnsubscribeMailto != "unsubscribe@localhost" || c.DKIMKeys != "" ||
		!c.APIMetrics || c.WorkerMetricsAddr != "127.0.0.1:9091" || c.MetricsUser != "" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestValues(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{
		"ALLOW_UNVERIFIED_SENDERS": "true",
		"MAX_UPLOAD_BYTES":         "512MB",
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
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.AllowUnverifiedSenders || c.MaxUploadBytes != 512<<20 || c.PublicURL != "https://mail.example.com" || c.ShutdownTimeout != 90*time.Second ||
		c.WorkerShutdownTimeout != 5*time.Minute || c.NotifyFrom != "Acme <ops@acme.example>" ||
		c.UnsubscribeMailto != "unsubscribe@mail.example.com" || c.DKIMKeys != "acme.example=s1:/etc/dkim/acme.pem" ||
		c.APIMetrics || c.WorkerMetricsAddr != ":9100" || c.MetricsUser != "prom" || c.MetricsPassword != "scrape" {
		t.Fatalf("%+v", c)
	}
	for v, want := range map[string]string{"off": "", "OFF": "", "127.0.0.1:0": "127.0.0.1:0", "[::1]:9091": "[::1]:9091"} {
		c, err := Load(env(map[string]string{"WORKER_METRICS_ADDR": v}))
		if err != nil || c.WorkerMetricsAddr != want {
			t.Errorf("WORKER_METRICS_ADDR=%s: %q %v", v, c.WorkerMetricsAddr, err)
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
	}))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, name := range []string{"DATABASE_URL", "REDIS_URL", "HTTP_ADDR", "ALLOW_UNVERIFIED_SENDERS", "MAX_BODY_BYTES",
		"SMTP_URL", "MONITORING_USER", "WORKER_CONCURRENCY", "SHUTDOWN_TIMEOUT", "WORKER_SHUTDOWN_TIMEOUT", "NOTIFY_FROM", "LOG_LEVEL", "UNSUBSCRIBE_MAILTO",
		"API_METRICS", "WORKER_METRICS_ADDR", "METRICS_USER"} {
		if !strings.Contains(msg, name+":") && !strings.Contains(msg, name+" and") {
			t.Errorf("%s not reported in:\n%s", name, msg)
		}
	}
	if strings.Contains(msg, "hunter2") {
		t.Errorf("password leaked: %s", msg)
	}
	if n := strings.Count(msg, "\n") + 1; n != 16 {
		t.Errorf("%d lines, want 16:\n%s", n, msg)
	}
	for _, v := range []string{"localhost", ":http", "127.0.0.1:70000", "127.0.0.1:-1"} {
		if _, err := Load(env(map[string]string{"WORKER_METRICS_ADDR": v})); err == nil || !strings.Contains(err.Error(), "WORKER_METRICS_ADDR:") {
			t.Errorf("WORKER_METRICS_ADDR=%s: %v", v, err)
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
