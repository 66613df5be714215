package httpapi_test

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/metrics/metricstest"
)

// withMetrics registers the request series in a fresh registry and serves
// it at /metrics, behind basic auth when user is set.
func withMetrics(user, password string) func(*httpapi.Deps) {
	return func(d *httpapi.Deps) {
		reg := metrics.NewRegistry()
		d.Metrics, d.MetricsHandler = reg, metrics.Handler(reg, d.Log, user, password)
	}
}

// expectCode asserts the status alone.
func (r response) expectCode(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("got %d %.300s, want %d", r.code, r.body, code)
	}
}

// /metrics holds the requests answered so far by route pattern, method
// and status, each with its latency histogram; paths no route matches and
// made-up methods are one series each, never the path or the method the
// client sent, so a scan of random URLs cannot grow the label set.
func TestRequestMetrics(t *testing.T) {
	t.Parallel()
	a := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20}, withMetrics("", ""))
	acct := a.account()
	for range 3 {
		a.do(req{method: "GET", path: "/api/contacts-type", acct: &acct}).expectCode(t, 200)
	}
	a.do(req{method: "GET", path: "/api/contacts-type"}).expectCode(t, 401)
	verify := a.do(req{method: "GET", path: "/senders/verify/tok-one"}).code
	a.do(req{method: "GET", path: "/senders/verify/tok-two"}).expectCode(t, verify)
	a.do(req{method: "GET", path: "/no/such/path-1"}).expectCode(t, 404)
	a.do(req{method: "POST", path: "/no/such/path-2"}).expectCode(t, 404)
	a.do(req{method: "BREW", path: "/healthz"}).expectCode(t, 404)

	f := metricstest.Scrape(t, a.h)
	const requests, duration = "mailroom_http_requests_total", "mailroom_http_request_duration_seconds"
	for _, c := range []struct {
		route, method, status string
		n                     float64
	}{
		{"/api/contacts-type", "GET", "200", 3},
		{"/api/contacts-type", "GET", "401", 1},
		{"/senders/verify/:token", "GET", fmt.Sprint(verify), 2},
		{"unmatched", "GET", "404", 1},
		{"unmatched", "POST", "404", 1},
		{"unmatched", "other", "404", 1},
	} {
		if got := f.Value(requests, "route", c.route, "method", c.method, "status", c.status); got != c.n {
			t.Errorf("%s %s %s: %v requests, want %v", c.method, c.route, c.status, got, c.n)
		}
	}
	if got := f.Value(duration, "route", "/api/contacts-type", "method", "GET"); got != 4 {
		t.Errorf("latency histogram of GET /api/contacts-type counts %v, want 4", got)
	}
	if m := f.Metric(duration, "route", "/api/contacts-type", "method", "GET"); m == nil || m.Histogram.GetSampleSum() <= 0 ||
		len(m.Histogram.Bucket) < 10 {
		t.Errorf("latency histogram %v", m)
	}
	for _, route := range f.LabelValues(requests, "route") {
		if strings.Contains(route, "tok-") || strings.Contains(route, "path-") {
			t.Errorf("a raw path became a label: %q", route)
		}
	}
	if methods := f.LabelValues(requests, "method"); slices.Contains(methods, "BREW") {
		t.Errorf("a made-up method became a label: %v", methods)
	}
	// The process's own series come along.
	if f.Value("go_goroutines") == 0 || f["process_cpu_seconds_total"] == nil {
		t.Error("no Go runtime or process series")
	}
}

// With METRICS_USER set /metrics asks for basic auth; without a handler
// (API_METRICS=false) there is no such route.
func TestMetricsAuthAndOff(t *testing.T) {
	t.Parallel()
	a := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20}, withMetrics("prom", "scrape"))
	for _, c := range []struct {
		user, pass string
		code       int
	}{{"", "", 401}, {"prom", "wrong", 401}, {"prom", "scrape", 200}} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if c.user != "" {
			r.SetBasicAuth(c.user, c.pass)
		}
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, r)
		if rec.Code != c.code || (c.code == 200 && !strings.Contains(rec.Body.String(), "mailroom_http_requests_total")) {
			t.Errorf("%s/%s: %d %.200s", c.user, c.pass, rec.Code, rec.Body)
		}
	}
	off := newAPI(t)
	off.do(req{method: "GET", path: "/metrics"}).expectCode(t, 404)
}
