// Command api serves mailroom's JSON API under /api.
//
//	api                          serve HTTP (migrating first)
//	api migrate                  apply migrations and load geography, then exit
//	api accounts create --name N [--owner-email E [--password-stdin]]
//	                             create an account, print its keys as JSON
//	                             (and the owner's one-time sign-in link)
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"github.com/mailroom/mailroom/internal/activity"
	"github.com/mailroom/mailroom/internal/config"
	"github.com/mailroom/mailroom/internal/console"
	"github.com/mailroom/mailroom/internal/dkim"
	"github.com/mailroom/mailroom/internal/domains"
	"github.com/mailroom/mailroom/internal/geo"
	healthcheck "github.com/mailroom/mailroom/internal/health"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/logging"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/media"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/redisconn"
	"github.com/mailroom/mailroom/jobs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := metrics.StartCPUProfile(os.Getenv)
	defer stopProfile()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		stopProfile()
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := logging.New(stderr, cfg.LogLevel)

	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, cfg, log)
	case "migrate":
		d, _, err := openDB(ctx, cfg, log)
		if err != nil {
			return err
		}
		d.Close()
		return nil
	case "accounts":
		return accounts(ctx, cfg, log, args, stdin, stdout)
	case "health":
		return health(ctx, cfg)
	default:
		return fmt.Errorf("unknown command %q (want serve, migrate, health or accounts ...; %s)", cmd, accountsUsage)
	}
}

// openDB connects, migrates and loads the geography data set.
func openDB(ctx context.Context, cfg config.Config, log *slog.Logger) (*postgres.DB, *geo.Set, error) {
	set, err := geo.Load()
	if err != nil {
		return nil, nil, err
	}
	d, err := postgres.Open(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return nil, nil, err
	}
	if err := d.Migrate(ctx); err != nil {
		d.Close()
		return nil, nil, err
	}
	if err := d.SyncGeo(ctx, set); err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, set, nil
}

// accountsUsage is the accounts command's synopsis.
const accountsUsage = "usage: accounts create --name NAME [--owner-email EMAIL [--password-stdin]] | list | rotate-keys --user-id N | disable --user-id N | enable --user-id N | send-rate --user-id N --per-second R"

// accounts manages accounts from the command line: create (prints the new
// keys, the only time the secret is shown), list (never a secret),
// rotate-keys (prints the new keys; the old ones are refused at once),
// disable and enable. Output is JSON on stdout; keys never go to the log.
func accounts(ctx context.Context, cfg config.Config, log *slog.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(accountsUsage)
	}
	sub := args[0]
	fs := flag.NewFlagSet("accounts "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", "", "the account's name (create)")
	id := fs.Int64("user-id", 0, "the account (rotate-keys, disable, enable, send-rate)")
	perSecond := fs.Int("per-second", -1, "mails a second, 0 for no limit (send-rate)")
	ownerEmail := fs.String("owner-email", "", "the console owner's address (create)")
	passwordStdin := fs.Bool("password-stdin", false, "read the owner's password from standard input (create)")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("accounts %s: %w", sub, err)
	}
	var (
		n, password string
		owner       mail.Email
	)
	switch sub {
	case "create":
		var err error
		if n, err = mail.ParseAccountName(*name); err != nil {
			return errors.New("accounts create: --name is required")
		}
		if *ownerEmail != "" {
			if owner, err = mail.ParseConsoleEmail("owner_email", *ownerEmail); err != nil {
				return errors.New("accounts create: --owner-email is not a valid email address")
			}
		} else if *passwordStdin {
			return errors.New("accounts create: --password-stdin needs --owner-email")
		}
		if *passwordStdin {
			if password, err = readPassword(stdin); err != nil {
				return fmt.Errorf("accounts create: %w", err)
			}
			if err := mail.ParsePassword("password", password, owner); err != nil {
				return fmt.Errorf("accounts create: %s", mail.FirstMessage(err))
			}
		}
	case "rotate-keys", "disable", "enable", "send-rate":
		if *id <= 0 {
			return fmt.Errorf("accounts %s: --user-id is required", sub)
		}
		if sub == "send-rate" && *perSecond < 0 {
			return errors.New("accounts send-rate: --per-second is required (0: no limit)")
		}
	case "list":
	default:
		return errors.New(accountsUsage)
	}
	d, _, err := openDB(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.Close()
	enc := json.NewEncoder(stdout)
	printKeys := func(id int64, keys mail.Keys) error {
		return enc.Encode(struct {
			UserID    int64  `json:"user_id"`
			PublicKey string `json:"public_key"`
			SecretKey string `json:"secret_key"`
		}{id, keys.Public, keys.Secret})
	}
	switch sub {
	case "create":
		id, keys, err := d.CreateAccount(ctx, n)
		if err != nil {
			return err
		}
		if owner == "" {
			return printKeys(id, keys)
		}
		hash := ""
		if password != "" {
			b, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
			if err != nil {
				return err
			}
			hash = string(b)
		}
		_, token, err := d.CreateOwner(ctx, id, owner, hash)
		if err != nil {
			return fmt.Errorf("accounts create: the account %d is made, its owner is not: %s", id, mail.FirstMessage(err))
		}
		out := struct {
			UserID     int64  `json:"user_id"`
			PublicKey  string `json:"public_key"`
			SecretKey  string `json:"secret_key"`
			OwnerEmail string `json:"owner_email"`
			SignInURL  string `json:"sign_in_url"`
		}{UserID: id, PublicKey: keys.Public, SecretKey: keys.Secret, OwnerEmail: string(owner), SignInURL: cfg.PublicURL + "/signin"}
		if token != "" {
			out.SignInURL = cfg.PublicURL + "/invite/" + token
		}
		return enc.Encode(out)
	case "list":
		list, err := d.Accounts(ctx)
		if err != nil {
			return err
		}
		for i := range list {
			if err := enc.Encode(&list[i]); err != nil {
				return err
			}
		}
		return nil
	case "rotate-keys":
		keys, err := d.RotateKeysBy(ctx, *id, postgres.Actor{Name: mail.ActorCommandLine})
		if err != nil {
			return fmt.Errorf("accounts rotate-keys: %w", noAccount(err, *id))
		}
		log.Info("account keys rotated", "user_id", *id)
		return printKeys(*id, keys)
	case "send-rate":
		if err := d.SetSendRate(ctx, *id, *perSecond); err != nil {
			return fmt.Errorf("accounts send-rate: %w", noAccount(err, *id))
		}
		log.Info("account sending rate set", "user_id", *id, "per_second", *perSecond)
		return enc.Encode(struct {
			UserID    int64 `json:"user_id"`
			PerSecond int   `json:"send_rate"`
		}{*id, *perSecond})
	default: // disable, enable
		if err := d.SetDisabled(ctx, *id, sub == "disable"); err != nil {
			return fmt.Errorf("accounts %s: %w", sub, noAccount(err, *id))
		}
		log.Info("account "+sub+"d", "user_id", *id)
		return enc.Encode(struct {
			UserID   int64 `json:"user_id"`
			Disabled bool  `json:"disabled"`
		}{*id, sub == "disable"})
	}
}

// readPassword is the first line of r, without its line end.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// noAccount words a not-found error of the accounts command.
func noAccount(err error, id int64) error {
	if mail.ErrorCode(err) == mail.ENOTFOUND {
		return fmt.Errorf("no account %d", id)
	}
	return err
}

func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	d, set, err := openDB(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.Close()

	conn, err := redisconn.Parse(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	redisOpt := conn.Opt
	rdb := conn.Client()
	defer rdb.Close()

	var mon http.Handler
	if cfg.MonitoringUser != "" {
		m := asynqmon.New(asynqmon.Options{RootPath: "/monitoring", RedisConnOpt: redisOpt})
		defer m.Close()
		mon = m
	}

	tasks := asynq.NewClient(redisOpt)
	defer tasks.Close()

	// The design editor's images (docs/media.md): uploaded through the
	// console, served at /media/.
	store, err := media.Open(cfg.Media)
	if err != nil {
		return fmt.Errorf("MEDIA_DIR or MEDIA_S3_*: %w", err)
	}
	// enqueueOnce enqueues a task of newTask's kind that says nothing but
	// "look at the database" (asynq.Unique): one already waiting will do.
	enqueueOnce := func(newTask func() *asynq.Task) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := tasks.EnqueueContext(ctx, newTask())
			if errors.Is(err, asynq.ErrDuplicateTask) {
				return nil // one is waiting already
			}
			return err
		}
	}
	// A saved send's dispatch, enqueued by the API's handlers and the
	// console's pages alike.
	enqueueDispatch := func(ctx context.Context, sendID int64, version int32, at time.Time) error {
		_, err := tasks.EnqueueContext(ctx, jobs.NewDispatchTask(sendID, version, at))
		if errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask) {
			return nil // this version's dispatch is queued already
		}
		return err
	}
	domainSvc, err := domainService(cfg, d, log)
	if err != nil {
		return err
	}
	con, err := console.New(console.Config{PublicURL: cfg.PublicURL, TrustedProxies: cfg.TrustedProxies,
		AllowUnverifiedSenders: cfg.AllowUnverifiedSenders, MaxMailBytes: int(cfg.MaxMailBytes),
		MediaQuota: cfg.MediaQuota, Relays: cfg.RelayNames()}, console.Deps{
		DB:      d,
		Log:     log,
		Domains: domainSvc,
		// docs/console.md: 10 tries per address and client per 10 minutes,
		// 100 per address per hour, 60 per client per 10 minutes.
		LimitAddressIP: ratelimit.NewKeyed(rdb, "mailroom:rate:signin:addrip:", 10, 10, 10*time.Minute).Allow,
		LimitAddress:   ratelimit.NewKeyed(rdb, "mailroom:rate:signin:addr:", 100, 100, time.Hour).Allow,
		LimitIP:        ratelimit.NewKeyed(rdb, "mailroom:rate:signin:ip:", 60, 30, 10*time.Minute).Allow,
		Media:          store,
		// 20 test mails an hour per account, 5 at once (each to up to 5
		// addresses).
		LimitTestSends: ratelimit.NewKeyed(rdb, "mailroom:rate:designtest:", 20, 5, time.Hour).Allow,
		DesignTest: func(ctx context.Context, id int64) error {
			_, err := tasks.EnqueueContext(ctx, jobs.NewDesignTestSendTask(id))
			return err
		},
		ConsoleMails:    enqueueOnce(jobs.NewConsoleMailsTask),
		EnqueueDispatch: enqueueDispatch,
	})
	if err != nil {
		return err
	}
	deps := httpapi.Deps{
		Console:      con,
		ConsolePaths: console.Prefixes,
		Media:        media.NewHandler(store, log),
		DB:           d,
		Geo:          set,
		Log:          log,
		RedisPing:    func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		Monitoring:   mon,
		RateLimit:    rateLimit(cfg, rdb),
		AutomationLive: func(ctx context.Context, id int64) error {
			_, err := tasks.EnqueueContext(ctx, jobs.NewEnrollMembersTask(id))
			return err
		},
		VerifySenders:   enqueueOnce(jobs.NewVerifySendersTask),
		EnqueueDispatch: enqueueDispatch,
	}
	deps.Domains = domainSvc
	var reg *prometheus.Registry
	if cfg.APIMetrics { // GET /metrics on this listener (docs/metrics.md)
		reg = metrics.NewRegistry()
		deps.Metrics, deps.MetricsHandler = reg, metrics.Handler(reg, log, cfg.MetricsUser, cfg.MetricsPassword)
	}
	// The opens and clicks of the tracking routes, written in batches;
	// closed after the HTTP drain, so what the last requests added is
	// written (docs/tracking.md).
	recorderOpts := activity.Options{}
	if reg != nil {
		recorderOpts.Metrics = reg
	}
	deps.Activity = activity.New(d, log, recorderOpts)
	h := httpapi.New(httpapi.Config{
		MaxBodyBytes:           cfg.MaxBodyBytes,
		MaxUploadBytes:         cfg.MaxUploadBytes,
		MaxImports:             cfg.MaxImports,
		MonitoringUser:         cfg.MonitoringUser,
		MonitoringPassword:     cfg.MonitoringPassword,
		AllowUnverifiedSenders: cfg.AllowUnverifiedSenders,
		PublicURL:              cfg.PublicURL,
		AllowPrivateWebhooks:   cfg.WebhookAllowPrivate,
		MaxMailBytes:           int(cfg.MaxMailBytes),
		Relays:                 cfg.RelayNames(),
	}, deps)

	go resumeRebuilds(ctx, d, log)

	srv := &http.Server{Addr: cfg.HTTPAddr, Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: cfg.HTTPReadTimeout, WriteTimeout: cfg.HTTPWriteTimeout, IdleTimeout: cfg.HTTPIdleTimeout}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("api listening", "addr", cfg.HTTPAddr, "public_url", cfg.PublicURL, "metrics", cfg.APIMetrics)
	if mon != nil {
		log.Info("monitoring: asynqmon at /monitoring behind basic auth", "user", cfg.MonitoringUser)
	} else {
		log.Info("monitoring off: set MONITORING_USER and MONITORING_PASSWORD to serve asynqmon at /monitoring")
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("api shutting down", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	if cerr := deps.Activity.Close(sctx); cerr != nil {
		log.Error("opens and clicks not written at shutdown", "err", cerr)
	}
	return err
}

// resumeRebuilds finishes the segment rebuilds a stopped process left, at
// start and then every minute, until ctx ends.
func resumeRebuilds(ctx context.Context, d *postgres.DB, log *slog.Logger) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		if err := d.ResumeSegmentRebuilds(ctx); err != nil && ctx.Err() == nil {
			log.Error("resuming segment rebuilds", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// rateLimit is the per-account request limit of cfg in Redis, nil when
// API_RATE_LIMIT is unset.
func rateLimit(cfg config.Config, rdb redis.UniversalClient) func(context.Context, int64) (bool, time.Duration, error) {
	if cfg.APIRateLimit <= 0 {
		return nil
	}
	return ratelimit.New(rdb, "mailroom:rate:api:", cfg.APIRateLimit, cfg.APIRateBurst).Allow
}

// health asks the API listening on HTTP_ADDR on this host for /healthz: the
// container health check (the image has no shell or curl).
func health(ctx context.Context, cfg config.Config) error {
	if err := healthcheck.Probe(ctx, cfg.HTTPAddr); err != nil {
		return fmt.Errorf("HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	return nil
}

// domainService makes and checks the accounts' sending domains
// (docs/deliverability.md): without DKIM_KEY_SECRET none can be added
// (said at start); the records name SPF_INCLUDE and BOUNCE_MX, by default
// from PUBLIC_URL's host.
func domainService(cfg config.Config, d *postgres.DB, log *slog.Logger) (*domains.Service, error) {
	s := &domains.Service{Store: d, Resolver: domains.Resolver{Server: cfg.DNSServer, Timeout: 5 * time.Second},
		KeyDomains: dkim.SpecDomains(cfg.DKIMKeys)}
	if s.Resolver.Server == "" {
		s.Resolver.Server = domains.SystemServer()
	}
	host := "localhost"
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	s.Setup = domains.Setup{SPFInclude: cmp.Or(cfg.SPFInclude, "_spf."+host), BounceMX: cmp.Or(cfg.BounceMX, host)}
	if cfg.DKIMKeySecret == "" {
		log.Warn("DKIM_KEY_SECRET is not set: no sending domain can be added (docs/deliverability.md)")
		return s, nil
	}
	sealer, err := domains.NewSealer(cfg.DKIMKeySecret)
	if err != nil {
		return nil, err
	}
	s.Sealer = sealer
	return s, nil
}
