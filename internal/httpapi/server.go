// Package httpapi is mailroom's JSON API: the gin router, thin handlers that
// parse and validate at the edge and call the storage, and the one envelope
// writer. Only this package imports gin.
package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mailroom/mailroom/internal/activity"
	"github.com/mailroom/mailroom/internal/contactimport"
	"github.com/mailroom/mailroom/internal/domains"
	"github.com/mailroom/mailroom/internal/geo"
	"github.com/mailroom/mailroom/internal/logging"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/singlesend"
)

// Config is what the router needs beyond its dependencies.
type Config struct {
	MaxBodyBytes       int64
	MaxUploadBytes     int64
	MaxImports         int           // CSV imports at once (half of them per account); more answer 429
	UploadIdle         time.Duration // 0: a minute; see slowReader
	MonitoringUser     string
	MonitoringPassword string
	// AllowUnverifiedSenders lets single sends use unverified senders
	// (ALLOW_UNVERIFIED_SENDERS).
	AllowUnverifiedSenders bool
	// PublicURL is the service's public address (PUBLIC_URL, no final
	// slash): the base of the addresses a schedule shows.
	PublicURL string
	// AllowPrivateWebhooks lets a webhook's URL name a loopback, private
	// or link-local address (WEBHOOK_ALLOW_PRIVATE; docs/webhooks.md).
	AllowPrivateWebhooks bool
	// MaxMailBytes is the longest mail a send's template may make
	// (MAX_MAIL_BYTES, docs/limits.md); 0 is render.MaxMailBytes, 10 MB.
	MaxMailBytes int
	// Relays are the relays SMTP_URL names, which a send's relay must be
	// one of (nil: any well-formed name).
	Relays []string
}

// Server holds the API's dependencies.
type Server struct {
	db  *postgres.DB
	geo *geoResponse
	log *slog.Logger
	cfg Config

	// redisPing checks Redis for /readyz.
	redisPing func(context.Context) error
	// monitoring is asynqmon's UI, mounted at /monitoring when set.
	monitoring http.Handler
	// console is the web console, mounted at consolePaths when set.
	console      http.Handler
	consolePaths []string
	// media serves the design editor's images at /media/{key} when set.
	media http.Handler
	// metrics counts requests when set; metricsHandler answers GET
	// /metrics when set.
	metrics        *requestMetrics
	metricsHandler http.Handler
	// importer runs the CSV imports (and bounds how many run at once).
	importer *contactimport.Service
	// verifySenders enqueues the worker's sender verification; nil: the
	// worker's minute sweep alone.
	verifySenders func(context.Context) error
	// sends checks, saves and queues single sends, as the console does.
	sends *singlesend.Sends
	// automationLive tells the engine an automation went live; nil: none.
	automationLive func(ctx context.Context, automationID int64) error
	rateLimit      func(ctx context.Context, accountID int64) (bool, time.Duration, error)
	// lookupHost resolves a webhook's host name at save.
	lookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
	// domains makes and checks sending domains.
	domains *domains.Service

	signerMu sync.Mutex
	tokens   *mail.TokenSigner // see signer

	// activity records the opens and clicks of the tracking routes; links
	// caches the sends' link tables for the click redirect.
	activity *activity.Recorder
	links    *linkCache
}

// Deps are the Server's collaborators, built by the main.
type Deps struct {
	DB         *postgres.DB
	Geo        *geo.Set
	Log        *slog.Logger
	RedisPing  func(context.Context) error
	Monitoring http.Handler // nil: /monitoring is off
	// Console is the web console (internal/console), served at each of
	// ConsolePaths and below it ("/" alone: the root only). nil: no console.
	Console      http.Handler
	ConsolePaths []string
	// Media serves the images uploaded in the design editor
	// (media.NewHandler), GET and HEAD at /media/{key}; nil: no such route.
	Media http.Handler
	// Metrics is where the request series are registered (nil: none are
	// kept); MetricsHandler answers GET /metrics (nil: no such route).
	// Both are the main's (cmd/api: API_METRICS, METRICS_USER).
	Metrics        prometheus.Registerer
	MetricsHandler http.Handler
	// VerifySenders enqueues the mailing of pending sender verification
	// links (nil: left to the worker's sweep).
	VerifySenders func(context.Context) error
	// EnqueueDispatch enqueues the dispatch of version of send sendID at
	// at (nil: the engine's sweeper finds due ready sends by itself).
	EnqueueDispatch func(ctx context.Context, sendID int64, version int32, at time.Time) error
	// AutomationLive is called after an automation's set-live commits (a
	// draft or paused automation became live), for the engine to enroll
	// its members; an error is logged, the request still succeeds. nil:
	// nothing is called.
	AutomationLive func(ctx context.Context, automationID int64) error
	// RateLimit takes one request of an account's allowance: false and how
	// long until the next is allowed when it is spent (429). nil: no
	// limit. An error lets the request through (logged): the limit is not
	// worth an outage when Redis is away.
	RateLimit func(ctx context.Context, accountID int64) (ok bool, retryAfter time.Duration, err error)
	// Activity records the opens and clicks the tracking routes see (the
	// main's, closed at shutdown so what waits is written). nil: the
	// server starts one of its own, never closed.
	Activity *activity.Recorder
	// LookupHost resolves a webhook URL's host name when it is saved
	// (docs/webhooks.md). nil: net.DefaultResolver, as the worker's
	// dialer resolves it.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
	// Domains makes and checks sending domains (docs/deliverability.md);
	// its Store is DB. nil: one without DKIM_KEY_SECRET, asking the
	// system's name server (a domain cannot be added).
	Domains *domains.Service
}

// New builds the router.
func New(cfg Config, d Deps) http.Handler {
	return newServer(cfg, d).router()
}

func newServer(cfg Config, d Deps) *Server {
	s := &Server{db: d.DB, geo: newGeoResponse(d.Geo), log: d.Log, cfg: cfg, redisPing: d.RedisPing, monitoring: d.Monitoring,
		console: d.Console, consolePaths: d.ConsolePaths, media: d.Media,
		verifySenders:  d.VerifySenders,
		automationLive: d.AutomationLive, rateLimit: d.RateLimit, metricsHandler: d.MetricsHandler, lookupHost: d.LookupHost}
	if s.domains = d.Domains; s.domains == nil {
		s.domains = &domains.Service{Store: d.DB, Resolver: domains.Resolver{Server: domains.SystemServer(), Timeout: 5 * time.Second}}
	}
	if s.lookupHost == nil {
		s.lookupHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	s.sends = singlesend.New(d.DB, d.Log, singlesend.Config{AllowUnverified: cfg.AllowUnverifiedSenders,
		PublicURL: cfg.PublicURL, MaxMailBytes: cfg.MaxMailBytes, Relays: cfg.Relays}, d.EnqueueDispatch)
	s.importer = contactimport.New(d.DB, d.Log, cfg.MaxImports, s.lookupCountry)
	s.activity, s.links = d.Activity, newLinkCache(d.DB.SendLinks)
	if s.activity == nil {
		s.activity = activity.New(d.DB, d.Log, activity.Options{})
	}
	if d.Metrics != nil {
		s.metrics = newRequestMetrics(d.Metrics)
	}
	return s
}

func (s *Server) router() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	cfg := s.cfg
	r := gin.New()
	r.ContextWithFallback = true
	r.Use(requestID, noSniff, s.logRequests)
	if s.metrics != nil {
		r.Use(s.metrics.observe)
	}
	r.Use(s.recover)
	r.NoRoute(func(c *gin.Context) { failed(c, http.StatusNotFound, "Not Found") })
	r.NoMethod(func(c *gin.Context) { failed(c, http.StatusNotFound, "Not Found") })

	r.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	r.GET("/readyz", s.ready)
	if s.metricsHandler != nil {
		r.GET("/metrics", gin.WrapH(s.metricsHandler))
	}
	if s.monitoring != nil && cfg.MonitoringUser != "" {
		mon := r.Group("/monitoring", s.basicAuth)
		mon.Any("", gin.WrapH(s.monitoring))
		mon.Any("/*path", gin.WrapH(s.monitoring))
	}

	r.GET("/senders/verify/:token", s.verifySender)
	r.GET("/design/previews/:file", s.designPreview)
	s.preferenceRoutes(r)
	s.trackRoutes(r)
	s.docRoutes(r) // before the /api group: the document needs no keys
	if s.media != nil {
		h := gin.WrapH(http.StripPrefix("/media/", s.media))
		r.GET("/media/*key", h)
		r.HEAD("/media/*key", h)
	}
	if s.console != nil {
		h := gin.WrapH(s.console)
		for _, p := range s.consolePaths {
			if p == "/" {
				r.GET(p, h)
				continue
			}
			r.Any(p, h)
			r.Any(p+"/*rest", h)
		}
	}

	api := r.Group("/api", notFoundText(recordNotFound), s.limitBody, s.authenticate, s.limitRate)
	s.routes(api)
	return r
}

// routes registers every /api endpoint.
func (s *Server) routes(api *gin.RouterGroup) {
	api.GET("/get/country-state-city", s.geography)
	s.contactTypeRoutes(api)
	s.fieldRoutes(api)
	s.contactRoutes(api)
	s.contactCSVRoutes(api)
	s.segmentRoutes(api)
	s.suppressionRoutes(api)
	s.notificationRoutes(api)
	s.templateRoutes(api)
	s.senderRoutes(api)
	s.singleSendRoutes(api)
	s.automationRoutes(api)
	s.statsRoutes(api)
	s.webhookRoutes(api)
	s.guardRoutes(api)
	s.domainRoutes(api)
}

// recover turns a panic into a logged 500, except http.ErrAbortHandler,
// which it passes on so that net/http cuts the connection (a list that
// failed after its first rows must not end like a whole one).
func (s *Server) recover(c *gin.Context) {
	defer func() {
		err := recover()
		if err == nil {
			return
		}
		if err == http.ErrAbortHandler {
			panic(err)
		}
		s.log.ErrorContext(c.Request.Context(), "panic", slog.String("method", c.Request.Method),
			slog.String("path", loggedPath(c.Request.URL.Path)), slog.Any("panic", err))
		if c.Writer.Written() {
			panic(http.ErrAbortHandler) // part of a response is out: cut it
		}
		failed(c, http.StatusInternalServerError, "Internal Server Error")
	}()
	c.Next()
}

// requestID gives each request an id: the client's X-Request-Id when it
// is a sane token (1–128 of A–Z a–z 0–9 . _ -), else a new random one. It
// is answered in X-Request-Id and rides the request's context into every
// log line (logging.WithRequestID).
func requestID(c *gin.Context) {
	id := c.GetHeader("X-Request-Id")
	if !saneRequestID(id) {
		var b [12]byte
		rand.Read(b[:])
		id = base64.RawURLEncoding.EncodeToString(b[:])
	}
	c.Header("X-Request-Id", id)
	c.Request = c.Request.WithContext(logging.WithRequestID(c.Request.Context(), id))
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch ch := id[i]; {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9', ch == '.', ch == '_', ch == '-':
		default:
			return false
		}
	}
	return true
}

// noSniff tells browsers to take every answer as the type it declares.
func noSniff(c *gin.Context) {
	c.Header("X-Content-Type-Options", "nosniff")
}

func (s *Server) logRequests(c *gin.Context) {
	start := time.Now()
	c.Next()
	s.log.LogAttrs(c.Request.Context(), slog.LevelInfo, "http",
		slog.String("method", c.Request.Method),
		slog.String("path", loggedPath(c.Request.URL.Path)),
		slog.Int("status", c.Writer.Status()),
		slog.Int("bytes", c.Writer.Size()),
		slog.Duration("duration", time.Since(start)))
}

// linkPaths are the paths whose last part is a single-use token: the
// console's invitations and password resets and a sender's verification.
// Until it is used, such a path lets whoever reads it set a password or
// verify the address, so the log leaves the token out.
var linkPaths = []string{"/invite/", "/reset/", "/senders/verify/"}

// loggedPath is path as the request log shows it.
func loggedPath(path string) string {
	for _, p := range linkPaths {
		if strings.HasPrefix(path, p) && len(path) > len(p) {
			return p + "{token}"
		}
	}
	return path
}

// limitBody caps the request body: MaxBodyBytes, or MaxUploadBytes for
// the CSV upload.
func (s *Server) limitBody(c *gin.Context) {
	n := s.cfg.MaxBodyBytes
	if c.FullPath() == "/api"+uploadPath {
		n = s.cfg.MaxUploadBytes
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, n)
}

func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	status := gin.H{"postgres": "ok", "redis": "ok"}
	code := http.StatusOK
	if err := s.db.Ping(ctx); err != nil {
		status["postgres"], code = err.Error(), http.StatusServiceUnavailable
	}
	if s.redisPing == nil {
		status["redis"], code = "not configured", http.StatusServiceUnavailable
	} else if err := s.redisPing(ctx); err != nil {
		status["redis"], code = err.Error(), http.StatusServiceUnavailable
	}
	c.JSON(code, status)
}

func (s *Server) basicAuth(c *gin.Context) {
	user, pass, ok := c.Request.BasicAuth()
	if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(s.cfg.MonitoringUser)) != 1 ||
		subtle.ConstantTimeCompare([]byte(pass), []byte(s.cfg.MonitoringPassword)) != 1 {
		c.Header("WWW-Authenticate", `Basic realm="mailroom monitoring"`)
		c.AbortWithStatus(http.StatusUnauthorized)
	}
}

type accountKey struct{}

// authenticate checks the PublicKey and SecretKey headers and puts the
// account on the request context.
func (s *Server) authenticate(c *gin.Context) {
	public, secret := c.GetHeader("PublicKey"), c.GetHeader("SecretKey")
	var p mail.Problems
	if public == "" {
		p.Add("PublicKey", "The public key field is required.")
	}
	if secret == "" {
		p.Add("SecretKey", "The secret key field is required.")
	}
	if err := p.ErrCode(mail.EUNAUTHORIZED); err != nil {
		s.fail(c, err)
		return
	}
	if !plausibleKey(public) || !plausibleKey(secret) {
		s.fail(c, mail.Errorf(mail.EUNAUTHORIZED, "The public key or secret key is invalid."))
		return
	}
	acct, err := s.db.Authenticate(c.Request.Context(), public, secret)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), accountKey{}, acct))
}

// limitRate answers 429 `Too Many Requests.` with Retry-After (whole
// seconds, at least 1) once the account has spent its allowance
// (API_RATE_LIMIT, API_RATE_BURST; docs/operations.md).
func (s *Server) limitRate(c *gin.Context) {
	if s.rateLimit == nil {
		return
	}
	ok, wait, err := s.rateLimit(c.Request.Context(), userID(c))
	if err != nil {
		s.log.WarnContext(c.Request.Context(), "rate limit not checked: the request goes through", "err", err)
		return
	}
	if !ok {
		c.Header("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(wait.Seconds()))), 10))
		s.fail(c, &mail.Error{Code: mail.ETOOMANY}) // the envelope aborts the chain
	}
}

// plausibleKey is false for what no key can be (keys are short URL-safe
// base64), so such a header never reaches the database.
func plausibleKey(k string) bool {
	if len(k) > 256 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// userID is the authenticated account's id; every query filters by it.
func userID(c *gin.Context) int64 {
	return c.Request.Context().Value(accountKey{}).(mail.Account).ID
}
