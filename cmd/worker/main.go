// Command worker runs mailroom's asynq servers: one takes tasks from the
// critical, default and bulk queues, the other from the webhooks queue
// with slots of its own, and both run the handlers of package jobs.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/mailroom/mailroom/internal/config"
	"github.com/mailroom/mailroom/internal/dkim"
	"github.com/mailroom/mailroom/internal/domains"
	healthcheck "github.com/mailroom/mailroom/internal/health"
	"github.com/mailroom/mailroom/internal/inbound"
	"github.com/mailroom/mailroom/internal/logging"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/metrics"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/redisconn"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/jobs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := metrics.StartCPUProfile(os.Getenv)
	defer stopProfile()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "health" {
		err = health(ctx, os.Getenv)
	} else {
		err = run(ctx, os.Getenv, os.Stderr)
	}
	stop()
	if err != nil {
		stopProfile()
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := logging.New(stderr, cfg.LogLevel)

	d, err := postgres.Open(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		return err
	}

	conn, err := redisconn.Parse(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	redisOpt := conn.Opt
	rdb := conn.Client() // the accounts' sending rates, the recipient domains' limits
	defer rdb.Close()
	server := asynq.NewServer(redisOpt, asynq.Config{
		Concurrency: cfg.WorkerConcurrency,
		// asynq's default is to look again a second after finding every
		// queue empty: a send's next batch would wait for it.
		TaskCheckInterval: cfg.WorkerPollInterval,
		// Tasks queued for later (a range's revisit when the mails its
		// domains put off are due, a rate's wait, a retry) are moved to
		// their queue within a second of their time, not asynq's 5.
		DelayedTaskCheckInterval: time.Second,
		Queues:                   jobs.Queues,
		ShutdownTimeout:          cfg.WorkerShutdownTimeout,
		Logger:                   asynqLogger{log},
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
			id, _ := asynq.GetTaskID(ctx)
			log.ErrorContext(ctx, "task failed", "type", t.Type(), "task_id", id, "err", err)
		}),
	})
	// Webhook POSTs have a server of their own: their own slots
	// (WEBHOOK_CONCURRENCY) on their own queue, so a slow or dead endpoint
	// never takes a send's, and their own retry schedule (docs/webhooks.md).
	hooks := jobs.Webhooks{Timeout: cfg.WebhookTimeout, RetryMin: cfg.WebhookRetryMin, RetryMax: cfg.WebhookRetryMax,
		RetryFor: cfg.WebhookRetryFor, AllowPrivate: cfg.WebhookAllowPrivate}
	hookServer := asynq.NewServer(redisOpt, asynq.Config{
		Concurrency:              cfg.WebhookConcurrency,
		TaskCheckInterval:        cfg.WorkerPollInterval,
		DelayedTaskCheckInterval: time.Second, // a retry is due to the second
		Queues:                   map[string]int{jobs.QueueWebhooks: 1},
		RetryDelayFunc:           jobs.WebhookRetryDelay(hooks),
		ShutdownTimeout:          cfg.WorkerShutdownTimeout,
		Logger:                   asynqLogger{log},
		// A failing endpoint is the handler's to log (once per attempt, as
		// a warning): asynq's retries of it are not the worker's errors.
		ErrorHandler: asynq.ErrorHandlerFunc(func(context.Context, *asynq.Task, error) {}),
	})
	var keyOpts []dkim.Option
	if !cfg.DKIMLibcrypto {
		keyOpts = append(keyOpts, dkim.PureGo())
	}
	keys, err := dkim.Parse(cfg.DKIMKeys, os.ReadFile, keyOpts...)
	if err != nil {
		return fmt.Errorf("DKIM_KEYS: %w", err)
	}
	rsaBackend, why := keys.RSABackend()
	if why != nil {
		log.Info("DKIM: RSA signatures by Go", "why_not_libcrypto", why.Error())
	} else if rsaBackend != "" {
		log.Info("DKIM: RSA signatures by libcrypto", "backend", rsaBackend)
	}
	if err := loadDomainKeys(ctx, cfg, d, keys, log); err != nil {
		return err
	}
	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		return err
	}
	signer := mail.NewTokenSigner(key)
	transport := newTransport(cfg, rdb)
	defer transport.Close()
	tasks := asynq.NewClient(redisOpt)
	defer tasks.Close()

	// Metrics (docs/metrics.md): the engine's counters are kept either
	// way; the listener, the pool's and the queues' series only with
	// WORKER_METRICS_ADDR.
	reg := metrics.NewRegistry()
	engineMetrics := jobs.NewMetrics(reg)
	if rsaBackend != "" {
		metrics.RSABackend(reg, strings.Fields(rsaBackend)[0])
	}
	if cfg.WorkerMetricsAddr != "" {
		switch t := transport.(type) {
		case *smtp.Pool:
			jobs.RegisterPool(reg, t)
		case *smtp.Relays:
			jobs.RegisterRelays(reg, t)
		}
		inspector := asynq.NewInspector(redisOpt)
		defer inspector.Close()
		reg.MustRegister(jobs.NewQueueCollector(inspector, append(slices.Collect(maps.Keys(jobs.Queues)), jobs.QueueWebhooks), 2*time.Second))
		l, err := metrics.ListenFirst(cfg.WorkerMetricsAddrs, metrics.Handler(reg, log, cfg.MetricsUser, cfg.MetricsPassword))
		if err != nil {
			return fmt.Errorf("WORKER_METRICS_ADDR: %w", err)
		}
		defer l.Close()
		if first := cfg.WorkerMetricsAddrs[0]; l.Asked != first {
			// Another worker on this host has the default port.
			log.Info("metrics listening", "addr", l.Addr.String(), "taken", first)
		} else {
			log.Info("metrics listening", "addr", l.Addr.String())
		}
	}
	// The recipient domains' limits (docs/throttling.md), one hash tag:
	// a range asks for all its domains in one call, on one Cluster node.
	var domains *ratelimit.Domains
	if len(cfg.DomainLimits) > 0 {
		domains = ratelimit.NewDomains(rdb, "mailroom:{domains}:", cfg.DomainLimits)
		domains.HoldMin, domains.HoldMax = cfg.DomainHoldMin, cfg.DomainHoldMax
		log.Info("recipient domains limited", "groups", len(cfg.DomainLimits))
	}
	mux := jobs.NewMux(jobs.Deps{DB: d, Log: log, Transport: transport, NotifyFrom: cfg.NotifyFrom,
		PublicURL: cfg.PublicURL, DKIM: keys, AllowUnverifiedSenders: cfg.AllowUnverifiedSenders,
		SendRate:          ratelimit.NewSender(rdb, "mailroom:rate:send:").Take,
		Domains:           domains,
		Warmups:           ratelimit.NewDaily(rdb, "mailroom:warmup:"),
		Links:             mail.Links{Base: cfg.PublicURL, Signer: signer},
		UnsubscribeMailto: cfg.UnsubscribeMailto,
		VERP:              mail.VERP{Domain: cfg.BounceDomain, Signer: signer},
		ClickTracking:     cfg.ClickTracking,
		Enqueue: func(ctx context.Context, t *asynq.Task) error {
			_, err := tasks.EnqueueContext(ctx, t)
			return err
		},
		Engine: jobs.Engine{BatchSize: cfg.SendBatchSize, Window: cfg.SendWindow, Concurrency: cfg.SendConcurrency, Lease: cfg.SendLease,
			StallAfter: cfg.SendStallAfter, Slice: cfg.SendSlice, Retention: cfg.DeliveryRetention,
			RunEvery: cfg.AutomationRunEvery, MaxMailBytes: int(cfg.MaxMailBytes), MemoryBudget: cfg.MailMemoryBudget,
			ExpandStep: expandStep(cfg.SendExpandStep)},
		Webhooks: hooks,
		Metrics:  engineMetrics,
	})
	if err := server.Start(mux); err != nil {
		return err
	}
	if err := hookServer.Start(mux); err != nil {
		server.Shutdown()
		return err
	}
	scheduler := asynq.NewScheduler(redisOpt, &asynq.SchedulerOpts{Logger: asynqLogger{log}})
	if err := jobs.Schedule(scheduler, cfg.SendSweepEvery); err != nil {
		return err
	}
	if err := jobs.ScheduleWebhooks(scheduler, hooks); err != nil {
		return err
	}
	if err := scheduler.Start(); err != nil {
		return err
	}
	// The bounce and complaint listener (docs/bounces.md).
	var listener *inbound.Server
	if cfg.InboundSMTPAddr != "" {
		listener = inbound.New(d, log, inbound.Config{VERP: mail.VERP{Domain: cfg.BounceDomain, Signer: signer},
			Mailto: cfg.UnsubscribeMailto, Signer: signer, MaxBytes: cfg.InboundMaxBytes, KeepPerHour: cfg.InboundKeepPerHour,
			MaxConns: cfg.InboundMaxConns, MaxConnsPerIP: cfg.InboundMaxConnsPerIP, GreetingTimeout: cfg.InboundGreetingTimeout,
			Timeout: cfg.InboundTimeout})
		addr, err := listener.Listen(cfg.InboundSMTPAddr)
		if err != nil {
			scheduler.Shutdown()
			hookServer.Shutdown()
			server.Shutdown()
			return fmt.Errorf("INBOUND_SMTP_ADDR: %w", err)
		}
		log.Info("inbound SMTP listening", "addr", addr.String(), "bounce_domain", cfg.BounceDomain, "mailto", cfg.UnsubscribeMailto)
	}
	log.Info("worker running", "queues", jobs.Queues, "concurrency", cfg.WorkerConcurrency,
		"webhook_concurrency", cfg.WebhookConcurrency)
	<-ctx.Done()
	log.Info("worker shutting down", "timeout", cfg.WorkerShutdownTimeout)
	if listener != nil {
		// Messages in hand are acted on; a sender cut off later tries again.
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := listener.Shutdown(sctx); err != nil {
			log.Warn("inbound SMTP listener: messages cut off at shutdown", "err", err)
		}
		cancel()
	}
	scheduler.Shutdown()
	hookServer.Shutdown()
	server.Shutdown()
	return nil
}

// newTransport is the SMTP pool of SMTP_URL's relay, the relays when it
// names several (or caps its one relay's rate, kept in rdb), or the .eml
// outbox when it is unset.
func newTransport(cfg config.Config, rdb redis.UniversalClient) smtp.Transport {
	switch {
	case len(cfg.Relays) == 0:
		return &smtp.Outbox{Dir: cfg.OutboxDir}
	case len(cfg.Relays) == 1 && cfg.Relays[0].Rate == 0:
		return smtp.NewPool(cfg.Relays[0].Config)
	}
	return smtp.NewRelays(cfg.Relays, ratelimit.NewRelays(rdb, "mailroom:rate:relay:"))
}

// asynqLogger routes asynq's own log lines into slog.
type asynqLogger struct{ log *slog.Logger }

func (l asynqLogger) Debug(args ...any) { l.log.Debug(fmt.Sprint(args...)) }
func (l asynqLogger) Info(args ...any)  { l.log.Info(fmt.Sprint(args...)) }
func (l asynqLogger) Warn(args ...any)  { l.log.Warn(fmt.Sprint(args...)) }
func (l asynqLogger) Error(args ...any) { l.log.Error(fmt.Sprint(args...)) }
func (l asynqLogger) Fatal(args ...any) {
	l.log.Error(fmt.Sprint(args...))
	os.Exit(1)
}

// health asks the worker's own listener on this host (WORKER_METRICS_ADDR)
// for /healthz: the container health check (the image has no shell).
func health(ctx context.Context, getenv func(string) string) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	if cfg.WorkerMetricsAddr == "" {
		return errors.New("health: WORKER_METRICS_ADDR is off: the worker has no listener to ask")
	}
	if err := healthcheck.Probe(ctx, cfg.WorkerMetricsAddr); err != nil {
		return fmt.Errorf("WORKER_METRICS_ADDR %s: %w", cfg.WorkerMetricsAddr, err)
	}
	return nil
}

// expandStep is SEND_EXPAND_STEP as the engine takes it: 0 (or less)
// expands every send in one step.
func expandStep(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// domainKeysEvery is how often the worker reads the verified sending
// domains' keys again.
const domainKeysEvery = 30 * time.Second

// loadDomainKeys puts the verified sending domains' keys in force in keys
// now and every domainKeysEvery until ctx ends (docs/deliverability.md):
// each account's mails from its own verified domains are signed with
// their keys. Without DKIM_KEY_SECRET there are none; a wrong one is an
// error at start.
func loadDomainKeys(ctx context.Context, cfg config.Config, d *postgres.DB, keys *dkim.Keys, log *slog.Logger) error {
	if cfg.DKIMKeySecret == "" {
		log.Info("DKIM: no DKIM_KEY_SECRET: the sending domains' keys are not used")
		return nil
	}
	sealer, err := domains.NewSealer(cfg.DKIMKeySecret)
	if err != nil {
		return err
	}
	load := func() int {
		n, err := domains.LoadKeys(ctx, d, sealer, keys)
		if err != nil {
			log.Warn("DKIM: sending domains' keys", "domains", n, "err", err)
		}
		return n
	}
	log.Info("DKIM: sending domains' keys in force", "domains", load(), "reload_every", domainKeysEvery.String())
	go func() {
		t := time.NewTicker(domainKeysEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				load()
			}
		}
	}()
	return nil
}
