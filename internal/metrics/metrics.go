// Package metrics is what the API and the worker share to expose
// Prometheus metrics (docs/metrics.md): a registry with the Go runtime's
// and the process's collectors, the /metrics handler, optionally behind
// basic auth, and the worker's own small listener. The series themselves
// are declared where they are counted: httpapi (requests), jobs (the
// engine, the SMTP pool, the queues).
package metrics

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry is a process's registry: made in run and passed down, never
// the client library's global one.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves g's metrics in the Prometheus text format (OpenMetrics
// when the scraper asks for it). With user set, only to requests carrying
// user and password as basic auth. A collector that fails leaves its
// series out and the rest are served.
func Handler(g prometheus.Gatherer, log *slog.Logger, user, password string) http.Handler {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:            slogPrinter{log},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
		EnableOpenMetrics:   true,
	})
	if user == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="mailroom metrics"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// slogPrinter is promhttp's error log.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) {
	if p.log != nil {
		p.log.Warn("metrics not served", "err", strings.TrimSpace(fmt.Sprintln(v...)))
	}
}

// Listener is a small HTTP server answering GET /metrics and nothing
// else: the worker's (WORKER_METRICS_ADDR).
type Listener struct {
	Addr  net.Addr // where it listens (the port chosen when addr asked for 0)
	Asked string   // the address it was asked to listen on (ListenFirst: the one free)
	srv   *http.Server
	done  chan struct{}
}

// Listen opens addr at once, so that a taken port fails the start, and
// serves h at /metrics (and "ok" at /healthz) on it until Close.
func Listen(addr string, h http.Handler) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	// The container health check of a worker (worker health).
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	l := &Listener{Addr: ln.Addr(), Asked: addr, done: make(chan struct{}),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}}
	go func() {
		defer close(l.done)
		l.srv.Serve(ln)
	}()
	return l, nil
}

// RSABackend registers mailroom_dkim_rsa_backend: 1 for what makes the
// worker's RSA DKIM signatures, "openssl" (the system's libcrypto) or "go".
func RSABackend(reg *prometheus.Registry, backend string) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mailroom_dkim_rsa_backend",
		Help: "What makes the worker's RSA DKIM signatures: openssl (the system's libcrypto) or go."}, []string{"backend"})
	g.WithLabelValues(backend).Set(1)
	reg.MustRegister(g)
}

// ListenFirst is Listen on the first of addrs whose port is free: a
// port another process holds moves on to the next address, any other
// error ends the search. Several workers on one host so each get a
// listener (the default WORKER_METRICS_ADDR and the ports after it).
func ListenFirst(addrs []string, h http.Handler) (*Listener, error) {
	var err error
	for _, a := range addrs {
		var l *Listener
		if l, err = Listen(a, h); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			return l, err
		}
	}
	if err == nil {
		err = errors.New("metrics: no address to listen on")
	}
	return nil, err
}

// Close stops the listener, letting a scrape under way finish for a few
// seconds.
func (l *Listener) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.srv.Shutdown(ctx)
	<-l.done
	if errors.Is(err, context.DeadlineExceeded) {
		return l.srv.Close()
	}
	return err
}
