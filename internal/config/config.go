// Package config reads mailroom's settings from the environment once, at
// start, and validates them all together.
package config

import (
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/media"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/redisconn"
	"github.com/mailroom/mailroom/internal/smtp"
)

// RelayNames are the names of the relays SMTP_URL names (nil without
// SMTP_URL): what a send's relay may be.
func (c Config) RelayNames() []string {
	var names []string
	for _, r := range c.Relays {
		names = append(names, r.Name)
	}
	return names
}

// Config is every setting of both processes.
type Config struct {
	DatabaseURL            string             // DATABASE_URL
	RedisURL               string             // REDIS_URL
	HTTPAddr               string             // HTTP_ADDR
	PublicURL              string             // PUBLIC_URL
	SMTPURL                string             // SMTP_URL; empty: write .eml files to OutboxDir
	Relays                 []smtp.RelayConfig // the relays SMTP_URL names (docs/deliverability.md)
	OutboxDir              string             // OUTBOX_DIR
	NotifyFrom             string             // NOTIFY_FROM: From of notification mails
	UnsubscribeMailto      string             // UNSUBSCRIBE_MAILTO: the mailto: of List-Unsubscribe; "none" leaves it out
	BounceDomain           string             // BOUNCE_DOMAIN: mails go with the return path bounces+{token}@ it; empty: VERP off
	InboundSMTPAddr        string             // INBOUND_SMTP_ADDR: the worker's SMTP listener for bounces, reports, mailto unsubscribes; empty: none
	InboundMaxBytes        int64              // INBOUND_MAX_BYTES: cap on an inbound message
	InboundKeepPerHour     int                // INBOUND_KEEP_PER_HOUR: inbound messages kept for inspection per hour and listener
	InboundMaxConns        int                // INBOUND_MAX_CONNS: inbound connections at once; more are answered 421
	InboundMaxConnsPerIP   int                // INBOUND_MAX_CONNS_PER_IP: inbound connections at once from one address (IPv6: one /64)
	InboundGreetingTimeout time.Duration      // INBOUND_GREETING_TIMEOUT: from the greeting to an inbound connection's first command
	InboundTimeout         time.Duration      // INBOUND_TIMEOUT: each later inbound command's read, each reply's write
	DKIMKeys               string             // DKIM_KEYS: domain=selector:/path/key.pem,… (read by the worker)
	DKIMKeySecret          string             // DKIM_KEY_SECRET: 32 bytes (base64) sealing the sending domains' private keys
	DNSServer              string             // DNS_SERVER: host:port the sending domains' records are looked up at; empty: /etc/resolv.conf's first
	SPFInclude             string             // SPF_INCLUDE: the include: a sending domain's SPF record names; empty: _spf. and PUBLIC_URL's host
	BounceMX               string             // BOUNCE_MX: the MX host of a sending domain's bounces. domain; empty: PUBLIC_URL's host
	AllowUnverifiedSenders bool               // ALLOW_UNVERIFIED_SENDERS
	ClickTracking          bool               // CLICK_TRACKING: on (default) rewrites mails' links to tracked ones; off leaves them
	MonitoringUser         string             // MONITORING_USER
	MonitoringPassword     string             // MONITORING_PASSWORD
	APIMetrics             bool               // API_METRICS: GET /metrics on the API's listener
	WorkerMetricsAddr      string             // WORKER_METRICS_ADDR: the worker's /metrics listener; empty ("off"): none
	MetricsUser            string             // METRICS_USER: with METRICS_PASSWORD, /metrics asks for basic auth
	MetricsPassword        string             // METRICS_PASSWORD
	MaxBodyBytes           int64              // MAX_BODY_BYTES: cap on a request body
	MaxUploadBytes         int64              // MAX_UPLOAD_BYTES: cap on a CSV upload
	MaxMailBytes           int64              // MAX_MAIL_BYTES: cap on a built mail, and on a template's worst case
	MailMemoryBudget       int64              // MAIL_MEMORY_BUDGET: bytes a worker's mails in flight hold together
	WorkerConcurrency      int                // WORKER_CONCURRENCY
	SendBatchSize          int                // SEND_BATCH_SIZE: deliveries per batch task
	SendWindow             int                // SEND_WINDOW: batch tasks of one send queued at once
	SendExpandStep         int                // SEND_EXPAND_STEP: recipients in a large send's first expansion step (0: one step)
	SendConcurrency        int                // SEND_CONCURRENCY: mails of one batch in flight at once
	SendLease              time.Duration      // SEND_LEASE: how long a batch holds its deliveries
	SendStallAfter         time.Duration      // SEND_STALL_AFTER: a running send idle this long is restarted
	SendSweepEvery         time.Duration      // SEND_SWEEP_EVERY: how often the sweeper runs
	SendSlice              time.Duration      // SEND_SLICE: how long one batch task goes on along its send's chain
	AutomationRunEvery     time.Duration      // AUTOMATION_RUN_EVERY: how long a schedule that made a small run waits for its next
	WorkerPollInterval     time.Duration      // WORKER_POLL_INTERVAL: how often an idle worker asks Redis for tasks
	DeliveryRetention      time.Duration      // DELIVERY_RETENTION: deliveries kept after their send completed; 0 keeps them
	MaxImports             int                // MAX_CONCURRENT_IMPORTS: CSV imports at once per API process
	ShutdownTimeout        time.Duration      // SHUTDOWN_TIMEOUT: the API's HTTP drain
	APIRateLimit           int                // API_RATE_LIMIT: requests a second per account on /api; 0: no limit
	APIRateBurst           int                // API_RATE_BURST: requests at once per account; 0: twice API_RATE_LIMIT
	HTTPReadTimeout        time.Duration      // HTTP_READ_TIMEOUT: a request's headers and body (the CSV upload sets its own)
	HTTPWriteTimeout       time.Duration      // HTTP_WRITE_TIMEOUT: an answer (long lists and the CSV upload extend it)
	HTTPIdleTimeout        time.Duration      // HTTP_IDLE_TIMEOUT: a kept-alive connection between requests
	WorkerShutdownTimeout  time.Duration      // WORKER_SHUTDOWN_TIMEOUT: how long a stopping worker lets running tasks finish
	WebhookConcurrency     int                // WEBHOOK_CONCURRENCY: webhook POSTs a worker makes at once, in slots of their own
	WebhookTimeout         time.Duration      // WEBHOOK_TIMEOUT: one webhook POST, connection to answer
	WebhookRetryMin        time.Duration      // WEBHOOK_RETRY_MIN: the first retry's delay after a failed POST (doubling)
	WebhookRetryMax        time.Duration      // WEBHOOK_RETRY_MAX: the longest delay between two tries
	WebhookRetryFor        time.Duration      // WEBHOOK_RETRY_FOR: how long events are retried before they are given up
	WebhookAllowPrivate    bool               // WEBHOOK_ALLOW_PRIVATE: webhooks may post to loopback, private and link-local addresses
	LogLevel               string             // LOG_LEVEL: debug, info, warn, error
	// TRUSTED_PROXIES: the addresses (IPs or CIDR prefixes) of the
	// reverse proxies in front of the API, whose X-Forwarded-For the
	// console believes for a client's IP (sign-in limits, audit trail).
	TrustedProxies []netip.Prefix

	// DOMAIN_LIMITS: the recipient domains' limits in force (the built-in
	// ones changed by the variable); nil: no domain is throttled.
	DomainLimits  []ratelimit.DomainLimit
	DomainHoldMin time.Duration // DOMAIN_HOLD_MIN: a domain's first hold after a try-later answer
	DomainHoldMax time.Duration // DOMAIN_HOLD_MAX: the longest hold (each hold in a row doubles)

	// Media is where the design editor's images are kept (docs/media.md):
	// the directory MEDIA_DIR, or the bucket of MEDIA_S3_ENDPOINT,
	// MEDIA_S3_BUCKET, MEDIA_S3_ACCESS_KEY, MEDIA_S3_SECRET_KEY,
	// MEDIA_S3_REGION, MEDIA_S3_USE_SSL and MEDIA_S3_PREFIX when the
	// endpoint is set.
	Media media.Config
	// MediaQuota bounds the bytes of one account's uploaded images
	// (MEDIA_QUOTA_BYTES, default 1 GB).
	MediaQuota int64
	// WorkerMetricsAddrs are the addresses the worker tries in order for
	// its listener: WORKER_METRICS_ADDR when set; unset, 127.0.0.1:9091 to
	// :9099, then any free port, so several workers share a host.
	WorkerMetricsAddrs []string
	// DKIMLibcrypto lets the system's libcrypto make RSA signatures
	// (DKIM_LIBCRYPTO, default true; false: Go does).
	DKIMLibcrypto bool
}

// Load reads the configuration through getenv (os.Getenv in production),
// applies defaults and returns every problem at once.
func Load(getenv func(string) string) (Config, error) {
	var errs []error
	str := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	size := func(name string, def int64) int64 {
		v := str(name, "")
		if v == "" {
			return def
		}
		n, err := parseSize(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a size in bytes (e.g. 1048576, 10MB, 1GB)", name, v))
			return def
		}
		return n
	}
	integer := func(name string, def int) int {
		v := str(name, "")
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive integer", name, v))
			return def
		}
		return n
	}

	c := Config{
		DatabaseURL:          str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/mailer?sslmode=disable"),
		RedisURL:             str("REDIS_URL", "redis://127.0.0.1:6379/0"),
		HTTPAddr:             str("HTTP_ADDR", ":8080"),
		PublicURL:            strings.TrimRight(str("PUBLIC_URL", "http://localhost:8080"), "/"),
		SMTPURL:              str("SMTP_URL", ""),
		OutboxDir:            str("OUTBOX_DIR", "./var/outbox"),
		NotifyFrom:           str("NOTIFY_FROM", "mailroom <notifications@localhost>"),
		UnsubscribeMailto:    str("UNSUBSCRIBE_MAILTO", ""),
		BounceDomain:         strings.ToLower(strings.TrimSuffix(str("BOUNCE_DOMAIN", ""), ".")),
		InboundSMTPAddr:      str("INBOUND_SMTP_ADDR", ""),
		InboundMaxBytes:      size("INBOUND_MAX_BYTES", 4<<20),
		InboundKeepPerHour:   integer("INBOUND_KEEP_PER_HOUR", 1000),
		InboundMaxConns:      integer("INBOUND_MAX_CONNS", 1000),
		InboundMaxConnsPerIP: integer("INBOUND_MAX_CONNS_PER_IP", 10),
		DKIMKeys:             str("DKIM_KEYS", ""),
		DKIMKeySecret:        str("DKIM_KEY_SECRET", ""),
		DNSServer:            str("DNS_SERVER", ""),
		SPFInclude:           strings.TrimSuffix(str("SPF_INCLUDE", ""), "."),
		BounceMX:             strings.TrimSuffix(str("BOUNCE_MX", ""), "."),
		MonitoringUser:       str("MONITORING_USER", ""),
		MonitoringPassword:   str("MONITORING_PASSWORD", ""),
		WorkerMetricsAddr:    str("WORKER_METRICS_ADDR", "127.0.0.1:9091"),
		MetricsUser:          str("METRICS_USER", ""),
		MetricsPassword:      str("METRICS_PASSWORD", ""),
		MaxBodyBytes:         size("MAX_BODY_BYTES", 10<<20),
		MaxUploadBytes:       size("MAX_UPLOAD_BYTES", 2<<30),
		MaxMailBytes:         size("MAX_MAIL_BYTES", 10<<20),
		MailMemoryBudget:     size("MAIL_MEMORY_BUDGET", 256<<20),
		WorkerConcurrency:    integer("WORKER_CONCURRENCY", 20),
		SendBatchSize:        integer("SEND_BATCH_SIZE", 1000),
		SendWindow:           integer("SEND_WINDOW", 4),
		SendConcurrency:      integer("SEND_CONCURRENCY", 16),
		MaxImports:           integer("MAX_CONCURRENT_IMPORTS", 4),
		WebhookConcurrency:   integer("WEBHOOK_CONCURRENCY", 4),
		LogLevel:             strings.ToLower(str("LOG_LEVEL", "info")),
	}

	// SEND_EXPAND_STEP may be 0: every send expanded in one step.
	if v := str("SEND_EXPAND_STEP", ""); v == "" {
		c.SendExpandStep = 20000
	} else if n, err := strconv.Atoi(v); err != nil || n < 0 {
		errs = append(errs, fmt.Errorf("SEND_EXPAND_STEP: %q is not 0 or a positive integer", v))
	} else {
		c.SendExpandStep = n
	}

	boolean := func(name string, def bool) bool {
		v := str(name, "")
		if v == "" {
			return def
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not true or false", name, v))
			return def
		}
		return b
	}
	c.AllowUnverifiedSenders = boolean("ALLOW_UNVERIFIED_SENDERS", false)
	c.Media = media.Config{Dir: str("MEDIA_DIR", "./var/media"), S3Endpoint: str("MEDIA_S3_ENDPOINT", ""),
		S3Bucket: str("MEDIA_S3_BUCKET", ""), S3AccessKey: str("MEDIA_S3_ACCESS_KEY", ""), S3SecretKey: str("MEDIA_S3_SECRET_KEY", ""),
		S3Region: str("MEDIA_S3_REGION", ""), S3UseSSL: boolean("MEDIA_S3_USE_SSL", false), S3Prefix: str("MEDIA_S3_PREFIX", "")}
	c.MediaQuota = size("MEDIA_QUOTA_BYTES", 1<<30)
	c.DKIMLibcrypto = boolean("DKIM_LIBCRYPTO", true)
	c.APIMetrics = boolean("API_METRICS", true)
	c.WebhookAllowPrivate = boolean("WEBHOOK_ALLOW_PRIVATE", false)
	for _, v := range strings.Split(str("TRUSTED_PROXIES", ""), ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil {
				errs = append(errs, fmt.Errorf("TRUSTED_PROXIES: %q is not an IP address or CIDR prefix", v))
				continue
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		c.TrustedProxies = append(c.TrustedProxies, p.Masked())
	}
	switch v := strings.ToLower(str("CLICK_TRACKING", "on")); v {
	case "on", "true", "1":
		c.ClickTracking = true
	case "off", "false", "0":
	default:
		errs = append(errs, fmt.Errorf("CLICK_TRACKING: %q is not on or off", v))
	}
	// An empty variable reads as unset (the default), so the listener is
	// turned off by name.
	if strings.EqualFold(c.WorkerMetricsAddr, "off") {
		c.WorkerMetricsAddr = ""
	}
	switch {
	case c.WorkerMetricsAddr == "":
	case str("WORKER_METRICS_ADDR", "") == "":
		for p := 9091; p <= 9099; p++ {
			c.WorkerMetricsAddrs = append(c.WorkerMetricsAddrs, "127.0.0.1:"+strconv.Itoa(p))
		}
		c.WorkerMetricsAddrs = append(c.WorkerMetricsAddrs, "127.0.0.1:0")
	default:
		c.WorkerMetricsAddrs = []string{c.WorkerMetricsAddr}
	}
	duration := func(name string, def time.Duration) time.Duration {
		v := str(name, "")
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive duration (e.g. 30s)", name, v))
			return def
		}
		return d
	}
	c.ShutdownTimeout = duration("SHUTDOWN_TIMEOUT", 30*time.Second)
	if str("API_RATE_LIMIT", "") != "0" { // 0 spelled out: no limit
		c.APIRateLimit = integer("API_RATE_LIMIT", 0)
	}
	if str("API_RATE_BURST", "") != "0" {
		c.APIRateBurst = integer("API_RATE_BURST", 0)
	}
	c.HTTPReadTimeout = duration("HTTP_READ_TIMEOUT", 30*time.Second)
	c.HTTPWriteTimeout = duration("HTTP_WRITE_TIMEOUT", time.Minute)
	c.HTTPIdleTimeout = duration("HTTP_IDLE_TIMEOUT", 2*time.Minute)
	// A worker outlasts the API's drain: a send batch in flight must flush
	// its outcomes before asynq hands the task back.
	c.WorkerShutdownTimeout = duration("WORKER_SHUTDOWN_TIMEOUT", 2*time.Minute)
	c.SendLease = duration("SEND_LEASE", 6*time.Second)
	c.SendStallAfter = duration("SEND_STALL_AFTER", 5*time.Second)
	c.SendSweepEvery = duration("SEND_SWEEP_EVERY", 5*time.Second)
	c.SendSlice = duration("SEND_SLICE", time.Second)
	c.AutomationRunEvery = duration("AUTOMATION_RUN_EVERY", 30*time.Second)
	c.WorkerPollInterval = duration("WORKER_POLL_INTERVAL", 100*time.Millisecond)
	c.InboundGreetingTimeout = duration("INBOUND_GREETING_TIMEOUT", 5*time.Second)
	c.InboundTimeout = duration("INBOUND_TIMEOUT", time.Minute)
	c.WebhookTimeout = duration("WEBHOOK_TIMEOUT", 10*time.Second)
	c.WebhookRetryMin = duration("WEBHOOK_RETRY_MIN", 30*time.Second)
	c.WebhookRetryMax = duration("WEBHOOK_RETRY_MAX", time.Hour)
	c.WebhookRetryFor = duration("WEBHOOK_RETRY_FOR", 24*time.Hour)
	if v := str("DELIVERY_RETENTION", ""); v != "" && v != "0" {
		c.DeliveryRetention = duration("DELIVERY_RETENTION", 0)
	}
	var err error
	if c.DomainLimits, err = ratelimit.ParseDomainLimits(getenv("DOMAIN_LIMITS")); err != nil {
		errs = append(errs, fmt.Errorf("DOMAIN_LIMITS: %v (docs/throttling.md)", err))
	}
	c.DomainHoldMin = duration("DOMAIN_HOLD_MIN", 30*time.Second)
	c.DomainHoldMax = duration("DOMAIN_HOLD_MAX", 15*time.Minute)
	if c.DomainHoldMax < c.DomainHoldMin {
		errs = append(errs, fmt.Errorf("DOMAIN_HOLD_MAX: %s is shorter than DOMAIN_HOLD_MIN (%s)", c.DomainHoldMax, c.DomainHoldMin))
	}

	switch {
	case strings.EqualFold(c.UnsubscribeMailto, "none"):
		c.UnsubscribeMailto = ""
	case c.UnsubscribeMailto == "":
		// unsubscribe@ the public host: it needs an inbound route there
		// (docs/unsubscribe.md).
		if u, err := url.Parse(c.PublicURL); err == nil && u.Hostname() != "" {
			c.UnsubscribeMailto = "unsubscribe@" + u.Hostname()
		}
	default:
		if a, err := netmail.ParseAddress(c.UnsubscribeMailto); err != nil || a.Name != "" || a.Address != c.UnsubscribeMailto {
			errs = append(errs, fmt.Errorf("UNSUBSCRIBE_MAILTO: %q is not a bare address (or none)", c.UnsubscribeMailto))
		}
	}

	errs = append(errs, c.validate()...)
	return c, errors.Join(errs...)
}

func (c *Config) validate() []error {
	var errs []error
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || strings.Trim(u.Path, "/") == "" {
		errs = append(errs, fmt.Errorf("DATABASE_URL: %q is not a postgres://host/dbname URL", redact(c.DatabaseURL)))
	}
	if _, err := redisconn.Parse(c.RedisURL); err != nil {
		why := err.Error()
		if redact(c.RedisURL) != c.RedisURL { // the parser's words may quote the URL, password and all
			why = "it does not parse"
		}
		errs = append(errs, fmt.Errorf("REDIS_URL: %q is not a redis://host:port/db, redis-sentinel:// or redis-cluster:// URL: %s", redact(c.RedisURL), why))
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		errs = append(errs, fmt.Errorf("HTTP_ADDR: %q is not host:port (e.g. :8080)", c.HTTPAddr))
	}
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("PUBLIC_URL: %q is not an http(s) URL", c.PublicURL))
	}
	if _, err := netmail.ParseAddress(c.NotifyFrom); err != nil {
		errs = append(errs, fmt.Errorf("NOTIFY_FROM: %q is not an address (\"Name <addr@example.com>\" or addr@example.com)", c.NotifyFrom))
	}
	if c.SMTPURL != "" {
		bad := false
		for _, raw := range strings.Fields(c.SMTPURL) {
			if u, err := url.Parse(raw); err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" {
				errs, bad = append(errs, fmt.Errorf("SMTP_URL: %q is not an smtp:// or smtps:// URL", redact(raw))), true
			}
		}
		if !bad { // the URLs parse: what they say (its messages hold no password)
			var err error
			if c.Relays, err = smtp.ParseURLs(c.SMTPURL); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if (c.MonitoringUser == "") != (c.MonitoringPassword == "") {
		errs = append(errs, errors.New("MONITORING_USER and MONITORING_PASSWORD: set both to enable /monitoring, or neither"))
	}
	if c.WorkerMetricsAddr != "" {
		if _, port, err := net.SplitHostPort(c.WorkerMetricsAddr); err != nil || !validPort(port) {
			errs = append(errs, fmt.Errorf("WORKER_METRICS_ADDR: %q is not host:port (e.g. 127.0.0.1:9091, :9091) or off", c.WorkerMetricsAddr))
		}
	}
	if c.BounceDomain != "" && !mail.ValidDomain(c.BounceDomain) {
		errs = append(errs, fmt.Errorf("BOUNCE_DOMAIN: %q is not a domain name (e.g. bounces.example.com)", c.BounceDomain))
	}
	if c.InboundSMTPAddr != "" {
		if _, port, err := net.SplitHostPort(c.InboundSMTPAddr); err != nil || !validPort(port) {
			errs = append(errs, fmt.Errorf("INBOUND_SMTP_ADDR: %q is not host:port (e.g. :2525)", c.InboundSMTPAddr))
		}
		if c.BounceDomain == "" && c.UnsubscribeMailto == "" {
			errs = append(errs, errors.New("INBOUND_SMTP_ADDR: set BOUNCE_DOMAIN or UNSUBSCRIBE_MAILTO: the listener would take no mail"))
		}
		if c.InboundMaxConnsPerIP > c.InboundMaxConns {
			errs = append(errs, fmt.Errorf("INBOUND_MAX_CONNS_PER_IP: %d is more than INBOUND_MAX_CONNS (%d)", c.InboundMaxConnsPerIP, c.InboundMaxConns))
		}
	}
	if (c.MetricsUser == "") != (c.MetricsPassword == "") {
		errs = append(errs, errors.New("METRICS_USER and METRICS_PASSWORD: set both to put /metrics behind basic auth, or neither"))
	}
	if c.WebhookRetryMin > c.WebhookRetryMax {
		errs = append(errs, fmt.Errorf("WEBHOOK_RETRY_MIN: %s is longer than WEBHOOK_RETRY_MAX %s", c.WebhookRetryMin, c.WebhookRetryMax))
	}
	if m := c.Media; m.S3Endpoint != "" {
		if strings.Contains(m.S3Endpoint, "/") {
			errs = append(errs, fmt.Errorf("MEDIA_S3_ENDPOINT: %q is not host[:port] (no scheme or path; MEDIA_S3_USE_SSL=true for HTTPS)", m.S3Endpoint))
		}
		if m.S3Bucket == "" {
			errs = append(errs, errors.New("MEDIA_S3_BUCKET: required with MEDIA_S3_ENDPOINT"))
		}
		if (m.S3AccessKey == "") != (m.S3SecretKey == "") {
			errs = append(errs, errors.New("MEDIA_S3_ACCESS_KEY and MEDIA_S3_SECRET_KEY: set both, or neither"))
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("LOG_LEVEL: %q is not debug, info, warn or error", c.LogLevel))
	}
	return errs
}

// validPort is a port number, 0 (any free port) to 65535.
func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535 && s != "" && s[0] != '+' && s[0] != '-'
}

// redact hides a URL's password so it never reaches a log line.
// redact is a URL as an error may show it: its password replaced. A value
// that does not parse, or holds an @ the parser did not take for user
// information (a password with /, ? or # in it), shows its scheme alone:
// where its password ends cannot be told.
func redact(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err == nil && !strings.Contains(raw, "@"):
		return raw
	case err == nil && u.User != nil && strings.Count(raw, "@") == 1:
		return u.Redacted()
	}
	if scheme, _, ok := strings.Cut(raw, "://"); ok && !strings.ContainsAny(scheme, ":@/?# ") {
		return scheme + "://… (the rest not shown: it may hold a password)"
	}
	return "… (not shown: it may hold a password)"
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	up := strings.ToUpper(s)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(up, u.suffix) {
			mult = u.mult
			up = strings.TrimSpace(strings.TrimSuffix(up, u.suffix))
			break
		}
	}
	n, err := strconv.ParseInt(up, 10, 64)
	if err != nil {
		return 0, err
	}
	return n * mult, nil
}
