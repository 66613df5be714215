// Package console is mailroom's web console: server-rendered pages over
// the same storage and rules the JSON API uses, with sign-in, a team with
// roles, sessions kept in PostgreSQL and CSRF checks done once in a
// middleware. It uses net/http only (the API's router mounts it) and
// html/template; its assets are embedded. See docs/console.md.
package console

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/mailroom/mailroom/internal/domains"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/media"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/singlesend"
)

// Config is what the console needs beyond its dependencies.
type Config struct {
	// PublicURL is the service's public address (no final slash). Cookies
	// are Secure when it is https.
	PublicURL string
	// Session is how long a sign-in lasts (defaults: 12 h idle, 7 days).
	Session postgres.SessionLife
	// BcryptCost is the password hashing cost (0: bcrypt.DefaultCost).
	BcryptCost int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (TRUSTED_PROXIES); a request from any other address is
	// its own client.
	TrustedProxies []netip.Prefix
	// AllowUnverifiedSenders and MaxMailBytes check a single send as the
	// API does (ALLOW_UNVERIFIED_SENDERS, MAX_MAIL_BYTES).
	AllowUnverifiedSenders bool
	MaxMailBytes           int
	// Relays are the relays SMTP_URL names, which a send's relay must be
	// one of (nil: any well-formed name).
	Relays []string
	// MediaQuota bounds the bytes of an account's uploaded images
	// (MEDIA_QUOTA_BYTES); 0: no bound.
	MediaQuota int64
}

// Limit takes one try of a key's allowance: false and how long until the
// next try when it is spent.
type Limit func(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)

// Deps are the console's collaborators, built by the main.
type Deps struct {
	DB  *postgres.DB
	Log *slog.Logger
	// The limits of sign-ins and reset requests (nil: none; an error lets
	// the try through, logged): LimitAddressIP per address from one
	// client IP, LimitAddress per address from everywhere (looser, so that
	// one client cannot lock an address out for the others), LimitIP per
	// client IP (an IPv6 client by its /64).
	LimitAddressIP, LimitAddress, LimitIP Limit
	// ConsoleMails asks the worker to mail waiting invitations and resets
	// now (nil: its minute sweep does).
	ConsoleMails func(context.Context) error
	// Media keeps the images uploaded in the design editor, served by the
	// API at {PublicURL}/media/{key} (nil: uploads are refused).
	Media media.Store
	// DesignTest asks the worker to send test mail id (task
	// design:test-send). nil: the test is refused.
	DesignTest func(ctx context.Context, id int64) error
	// LimitTestSends limits an account's test mails (key: the account id;
	// nil: no limit). An error lets the test through (logged).
	LimitTestSends Limit
	// EnqueueDispatch asks the worker to dispatch a saved single send, as
	// the API's (nil: the engine's sweeper finds due ready sends).
	EnqueueDispatch singlesend.Enqueue
	// Domains says what receivers will hold against a send's sender (a
	// From domain not verified), as the API's details do (nil: nothing).
	Domains *domains.Service
}

// Handler serves the console's pages.
type Handler struct {
	cfg    Config
	db     *postgres.DB
	log    *slog.Logger
	deps   Deps
	secure bool // cookies are Secure, and named __Host-…
	// sessionCookie and csrfCookie are the cookies' names.
	sessionCookie, csrfCookie string
	views                     *views
	assets                    *assets
	mux                       *http.ServeMux
	// sends checks, saves and queues single sends as the API does; counts
	// answers the compose page's audience counts.
	sends  *singlesend.Sends
	counts *audienceCounts
	// decodes holds a slot per image upload being checked (mediaDecodes).
	decodes chan struct{}
	// standIn is a hash a sign-in without a stored one is checked
	// against, to spend the same time.
	standIn []byte
}

// New builds the console.
func New(cfg Config, d Deps) (*Handler, error) {
	if cfg.Session.Idle <= 0 {
		cfg.Session.Idle = 12 * time.Hour
	}
	if cfg.Session.Max <= 0 {
		cfg.Session.Max = 7 * 24 * time.Hour
	}
	if cfg.BcryptCost == 0 {
		cfg.BcryptCost = bcrypt.DefaultCost
	}
	h := &Handler{cfg: cfg, db: d.DB, log: d.Log, deps: d, decodes: make(chan struct{}, mediaDecodes)}
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Scheme == "https" {
		h.secure = true
	}
	h.sessionCookie, h.csrfCookie = h.cookieName(sessionCookieName), h.cookieName(csrfCookieName)
	var err error
	if h.standIn, err = bcrypt.GenerateFromPassword([]byte("stand-in password"), cfg.BcryptCost); err != nil {
		return nil, err
	}
	if h.assets, err = loadAssets(); err != nil {
		return nil, err
	}
	if h.views, err = parseViews(h.assets); err != nil {
		return nil, err
	}
	h.sends = singlesend.New(d.DB, d.Log, singlesend.Config{AllowUnverified: cfg.AllowUnverifiedSenders,
		PublicURL: cfg.PublicURL, MaxMailBytes: cfg.MaxMailBytes, Relays: cfg.Relays}, d.EnqueueDispatch)
	h.counts = newAudienceCounts(d.DB.CountAudience, d.Log)
	h.mux = http.NewServeMux()
	h.routes()
	return h, nil
}

// ServeHTTP serves a console request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The headers are set here, so the mux's own answers (404 for no
	// route, 405 for a wrong method) carry them too; a route's chain goes
	// on with this state.
	st := &state{nonce: mail.RandomToken(16), ip: h.clientIP(r)}
	h.securityHeaders(w, st)
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
}
