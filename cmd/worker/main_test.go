package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/metrics/metricstest"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
)

// TestMain runs the worker itself when MAILROOM_TEST_WORKER is set: the
// crash tests start this test binary as a real worker process they can
// SIGKILL.
func TestMain(m *testing.M) {
	if os.Getenv("MAILROOM_TEST_WORKER") == "" {
		os.Exit(m.Run())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Getenv, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// redisDB is the Redis database of this package's tests, flushed by each:
// one no other package's tests use (a flush of 12 wiped the console's
// sign-in counters while its tests ran beside these).
const redisDB = "redis://127.0.0.1:6379/8"

// redisClient is a client of the package's Redis database (redisDB),
// closed when the test ends.
func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(redisDB)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// flushRedis empties the package's Redis database: no task or rate bucket
// of an earlier test is left.
func flushRedis(t *testing.T) {
	t.Helper()
	if err := redisClient(t).FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

// worker starts a worker process with the package's database, Redis db
// 12, the SMTP server at smtpAddr and a quick engine: small batches, short
// leases, a sweeper every second.
func worker(t *testing.T, smtpAddr, name string, env ...string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MAILROOM_TEST_WORKER=1", "DATABASE_URL="+testdb.DSN(t), "REDIS_URL="+redisDB,
		"SMTP_URL=smtp://"+smtpAddr+"?pool=4", "PUBLIC_URL=https://m.example.test", "LOG_LEVEL=warn",
		"WORKER_CONCURRENCY=4", "SEND_BATCH_SIZE=50", "SEND_WINDOW=2", "SEND_CONCURRENCY=4",
		"SEND_LEASE=2s", "SEND_STALL_AFTER=2s", "SEND_SWEEP_EVERY=1s", "WORKER_SHUTDOWN_TIMEOUT=5s",
		"WORKER_METRICS_ADDR=127.0.0.1:0") // any free port: two workers, or another checkout's, never clash
	cmd.Env = append(cmd.Env, env...) // later settings win
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("%s log:\n%s", name, b)
		}
	})
	return cmd
}

// readySend makes an account with n contacts, a verified sender and a
// ready, due send to them all; it answers the send's id.
func readySend(t *testing.T, d *postgres.DB, n int) int64 {
	t.Helper()
	ctx := context.Background()
	user, _, err := d.CreateAccount(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	var typ, sender, group, send int64
	q := func(dst *int64, sql string, args ...any) {
		t.Helper()
		if err := d.Pool.QueryRow(ctx, sql, args...).Scan(dst); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	q(&typ, `INSERT INTO contact_types (user_id, name) VALUES ($1, 'all') RETURNING id`, user)
	if _, err := d.Pool.Exec(ctx, `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'r' || i || '@crash.example', 'R' || i FROM generate_series(1, $3::int) i`, user, typ, n); err != nil {
		t.Fatal(err)
	}
	q(&sender, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'Crash', 'news@crash.example', 'news@crash.example', 276, 'Street 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, user)
	q(&group, `INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description) VALUES ($1, gen_random_uuid()::text, 'g', 'g') RETURNING id`, user)
	q(&send, `INSERT INTO single_sends (user_id, utr, template_id, template_html, sender_id, unsubscribe_group_id, single_send_name,
			subject, preheader, recipient_id, status, due_at, unique_open_token)
		VALUES ($1, gen_random_uuid(), 1, '<p>Hi ((first_name))</p>', $2, $3, 'crash', 'Hi ((first_name))', 'p',
			jsonb_build_array(jsonb_build_object('id', $4::text, 'table', 'contacts_')), 1, now(), '{}') RETURNING id`,
		user, sender, group, fmt.Sprint(typ))
	return send
}

// waitStatus polls the send until it has status 3 or timeout passes.
func waitCompleted(t *testing.T, d *postgres.DB, send int64, timeout time.Duration) (delivered int64) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var status int
		if err := d.Pool.QueryRow(context.Background(), "SELECT status, delivered FROM single_sends WHERE id = $1", send).Scan(&status, &delivered); err != nil {
			t.Fatal(err)
		}
		if status == 3 {
			return delivered
		}
		if time.Now().After(deadline) {
			t.Fatalf("send %d: status %d after %v, %d delivered", send, status, timeout, delivered)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// received counts the mails the server took per address.
func received(s *smtptest.Server) map[string]int {
	got := map[string]int{}
	for _, m := range s.Messages() {
		for _, to := range m.To {
			got[strings.ToLower(to)]++
		}
	}
	return got
}

// A worker SIGKILLed mid-send, then a new one: every address gets the
// mail, and the duplicates are at most what the dead worker held in
// flight (its leased batches: window × batch size).
func TestWorkerKilledMidSend(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	d := testdb.New(t)
	flushRedis(t)
	const n = 1500
	const inFlight = 2 * 50 // SEND_WINDOW × SEND_BATCH_SIZE of the killed worker
	s := smtptest.New(t, smtptest.Options{Reply: func(string) error { time.Sleep(2 * time.Millisecond); return nil }})
	send := readySend(t, d, n)

	w := worker(t, s.Addr, "first")
	if !s.Wait(n/3, 60*time.Second) {
		t.Fatalf("the first worker sent %d mails", s.Count())
	}
	if err := w.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	w.Wait()
	atKill := s.Count()
	worker(t, s.Addr, "second")
	delivered := waitCompleted(t, d, send, 90*time.Second)

	got := received(s)
	total := 0
	for i := 1; i <= n; i++ {
		c := got[fmt.Sprintf("r%d@crash.example", i)]
		if c == 0 {
			t.Errorf("r%d@crash.example got no mail", i)
		}
		total += c
	}
	if dup := total - n; dup > inFlight || len(got) != n {
		t.Errorf("%d mails for %d addresses (%d of them before the kill): %d duplicates, at most %d allowed", total, len(got), atKill, dup, inFlight)
	}
	if delivered != n {
		t.Errorf("delivered %d, want %d", delivered, n)
	}
	t.Logf("%d mails before the kill, %d in all for %d addresses", atKill, total, n)
}

// Redis flushed mid-send (every queued batch lost): the sweeper, working
// from the deliveries table, finishes the send, each address once.
func TestRedisFlushedMidSend(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	d := testdb.New(t)
	rdb := redisClient(t)
	s := smtptest.New(t, smtptest.Options{Reply: func(string) error { time.Sleep(2 * time.Millisecond); return nil }})
	send := readySend(t, d, 1000)
	worker(t, s.Addr, "worker")
	if !s.Wait(300, 60*time.Second) {
		t.Fatalf("the worker sent %d mails", s.Count())
	}
	if err := rdb.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	waitCompleted(t, d, send, 90*time.Second)
	got := received(s)
	for i := 1; i <= 1000; i++ {
		if c := got[fmt.Sprintf("r%d@crash.example", i)]; c != 1 {
			t.Errorf("r%d@crash.example got %d mails", i, c)
		}
	}
}

// The worker's own listener (WORKER_METRICS_ADDR) serves its metrics: after
// a send through a real SMTP server, the sent counter equals the mails the
// server received, and the pool's and the queues' series are there. The
// worker is run in this process (run, as main does) so that its log tells
// the port it took.
func TestWorkerMetrics(t *testing.T) {
	d := testdb.New(t)
	flushRedis(t)
	s := smtptest.New(t, smtptest.Options{})
	send := readySend(t, d, 120)
	env := map[string]string{"DATABASE_URL": testdb.DSN(t), "REDIS_URL": redisDB, "SMTP_URL": "smtp://" + s.Addr + "?pool=4",
		"PUBLIC_URL": "https://m.example.test", "WORKER_CONCURRENCY": "4", "SEND_BATCH_SIZE": "25", "SEND_SWEEP_EVERY": "1s",
		"WORKER_SHUTDOWN_TIMEOUT": "5s", "WORKER_METRICS_ADDR": "127.0.0.1:0", "DKIM_KEYS": "metrics.example=s1:" + rsaKeyFile(t)}
	addr, _ := metricsWorker(t, env)["addr"].(string)
	waitCompleted(t, d, send, 60*time.Second)

	// The container health check asks the same listener.
	hostEnv := map[string]string{"DATABASE_URL": env["DATABASE_URL"], "WORKER_METRICS_ADDR": addr}
	if err := health(context.Background(), func(k string) string { return hostEnv[k] }); err != nil {
		t.Errorf("worker health: %v", err)
	}
	hostEnv["WORKER_METRICS_ADDR"] = "127.0.0.1:1"
	if err := health(context.Background(), func(k string) string { return hostEnv[k] }); err == nil {
		t.Error("worker health answered ok with nothing listening")
	}

	f := metricstest.Fetch(t, "http://"+addr+"/metrics")
	if got := f.Value("mailroom_mails_total", "outcome", "sent"); got != float64(s.Count()) || got != 120 {
		t.Errorf("%v mails counted sent, the SMTP server received %d (want 120)", got, s.Count())
	}
	if f.Value("mailroom_batch_size") == 0 || f.Value("mailroom_expansion_duration_seconds") != 1 {
		t.Errorf("%v ranges, %v expansions timed", f.Value("mailroom_batch_size"), f.Value("mailroom_expansion_duration_seconds"))
	}
	if f.Value("mailroom_smtp_pool_size") != 4 || f.Value("mailroom_smtp_dials_total") < 1 {
		t.Errorf("pool: size %v, dials %v", f.Value("mailroom_smtp_pool_size"), f.Value("mailroom_smtp_dials_total"))
	}
	// The RSA key signs through libcrypto (the test binary has cgo; Debian
	// has libcrypto.so.3).
	if f.Value("mailroom_dkim_rsa_backend", "backend", "openssl") != 1 {
		t.Errorf("mailroom_dkim_rsa_backend: %v", f.Metric("mailroom_dkim_rsa_backend", "backend", "openssl"))
	}
	if f.Value("mailroom_queue_up") != 1 {
		t.Errorf("mailroom_queue_up %v", f.Value("mailroom_queue_up"))
	}
	for _, q := range []string{"critical", "default", "bulk"} {
		if f.Metric("mailroom_queue_size", "queue", q) == nil || f.Metric("mailroom_queue_latency_seconds", "queue", q) == nil {
			t.Errorf("no size or latency of queue %s", q)
		}
	}
	// The send's batches ran on bulk (its dispatch on default).
	if f.Value("mailroom_queue_processed_total", "queue", "bulk") < 1 {
		t.Errorf("bulk processed %v", f.Value("mailroom_queue_processed_total", "queue", "bulk"))
	}
	if f.Value("go_goroutines") == 0 {
		t.Error("no Go runtime series")
	}
	// Anything but /metrics is not there.
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /: %d", resp.StatusCode)
	}
}

// logWatch is the worker's log: it sends the first JSON line whose msg is
// want on found.
// Two workers on one host with WORKER_METRICS_ADDR unset both run: the
// second finds the first's port taken and listens on another, saying so.
func TestTwoWorkersDefaultMetrics(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testdb.DSN(t), "REDIS_URL": redisDB, "WORKER_SHUTDOWN_TIMEOUT": "5s"}
	var addrs []string
	for range 2 {
		line := metricsWorker(t, env)
		addr, _ := line["addr"].(string)
		if len(addrs) == 1 && (line["taken"] == nil || addr == addrs[0]) {
			t.Errorf("the second worker: %v", line)
		}
		addrs = append(addrs, addr)
	}
	for _, a := range addrs {
		res, err := http.Get("http://" + a + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	t.Logf("metrics at %v", addrs)
}

// metricsWorker runs a worker in this process with env until the test
// ends, and returns its log line "metrics listening".
func metricsWorker(t *testing.T, env map[string]string) map[string]any {
	t.Helper()
	log := &logWatch{want: "metrics listening", found: make(chan map[string]any, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	select {
	case line := <-log.found:
		return line
	case err := <-done:
		done <- err
		t.Fatalf("the worker stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not listen for metrics")
	}
	return nil
}

type logWatch struct {
	want  string
	found chan map[string]any
	buf   bytes.Buffer
	sent  bool
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadBytes('\n')
		if err != nil {
			w.buf.Write(line) // a partial line: wait for the rest
			return len(p), nil
		}
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m["msg"] == w.want && !w.sent {
			w.sent = true
			w.found <- m
		}
	}
}

// Three worker processes on one send: every address gets its mail once,
// every batch range is sent by exactly one of them, and each takes a share
// of the ranges (their debug "range" lines say which ranges they sent).
func TestScaleOutThreeWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	d := testdb.New(t)
	flushRedis(t)
	const n = 3000
	s := smtptest.New(t, smtptest.Options{Reply: func(string) error { time.Sleep(time.Millisecond); return nil }})
	send := readySend(t, d, n)
	// Held back until all three run, so the first up does not take it all.
	if _, err := d.Pool.Exec(context.Background(), "UPDATE single_sends SET status = 0 WHERE id = $1", send); err != nil {
		t.Fatal(err)
	}
	var workers []*exec.Cmd
	for i := range 3 {
		workers = append(workers, worker(t, s.Addr, fmt.Sprintf("worker%d", i), "LOG_LEVEL=debug", "SEND_WINDOW=6", "SEND_SLICE=50ms"))
	}
	for _, w := range workers {
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			if b, _ := os.ReadFile(w.Stdout.(*os.File).Name()); strings.Contains(string(b), `"msg":"worker running"`) {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatal("a worker did not start")
			}
		}
	}
	if _, err := d.Pool.Exec(context.Background(), "UPDATE single_sends SET status = 1 WHERE id = $1", send); err != nil {
		t.Fatal(err)
	}
	if delivered := waitCompleted(t, d, send, 120*time.Second); delivered != n {
		t.Errorf("delivered %d, want %d", delivered, n)
	}
	got := received(s)
	for i := 1; i <= n; i++ {
		if c := got[fmt.Sprintf("r%d@crash.example", i)]; c != 1 {
			t.Errorf("r%d@crash.example got %d mails", i, c)
		}
	}
	ranBy := map[int64]int{} // range start -> worker
	shares := make([]int, len(workers))
	for i, w := range workers {
		w.Process.Signal(os.Interrupt)
		w.Wait()
		b, err := os.ReadFile(w.Stdout.(*os.File).Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			var r struct {
				Msg    string `json:"msg"`
				SendID int64  `json:"send_id"`
				From   int64  `json:"from"`
				Mails  int    `json:"mails"`
			}
			if json.Unmarshal([]byte(line), &r) != nil || r.Msg != "range" || r.SendID != send || r.Mails == 0 {
				continue
			}
			if other, ok := ranBy[r.From]; ok {
				t.Errorf("range from %d sent by worker%d and worker%d", r.From, other, i)
			}
			ranBy[r.From] = i
			shares[i]++
		}
	}
	if len(ranBy) != n/50 {
		t.Errorf("%d ranges with mail in the logs, want %d (%d recipients, batches of 50)", len(ranBy), n/50, n)
	}
	for i, c := range shares {
		if c == 0 {
			t.Errorf("worker%d sent no range: %v", i, shares)
		}
	}
	t.Logf("ranges per worker: %v", shares)
}

// An account's sending rate (accounts send-rate) holds across two worker
// processes: 150 mails at 50 a second (a second's worth at once) take at
// least two seconds, every address still gets its mail once.
func TestAccountSendRate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	d := testdb.New(t)
	flushRedis(t)
	const n, rate = 150, 50
	s := smtptest.New(t, smtptest.Options{})
	send := readySend(t, d, n)
	var user int64
	if err := d.Pool.QueryRow(context.Background(), "SELECT user_id FROM single_sends WHERE id = $1", send).Scan(&user); err != nil {
		t.Fatal(err)
	}
	if err := d.SetSendRate(context.Background(), user, rate); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		worker(t, s.Addr, fmt.Sprintf("worker%d", i), "SEND_BATCH_SIZE=25", "SEND_WINDOW=4")
	}
	if delivered := waitCompleted(t, d, send, 60*time.Second); delivered != n {
		t.Errorf("delivered %d, want %d", delivered, n)
	}
	got := received(s)
	for i := 1; i <= n; i++ {
		if c := got[fmt.Sprintf("r%d@crash.example", i)]; c != 1 {
			t.Errorf("r%d@crash.example got %d mails", i, c)
		}
	}
	msgs := s.Messages()
	first, last := msgs[0].At, msgs[len(msgs)-1].At
	for _, m := range msgs {
		if m.At.Before(first) {
			first = m.At
		}
		if m.At.After(last) {
			last = m.At
		}
	}
	// 50 at once, then 50 a second: the 150th no sooner than 2 s after the
	// first (a faster send means the rate was not held).
	if spread := last.Sub(first); spread < 1900*time.Millisecond {
		t.Errorf("150 mails at %d a second went out within %v", rate, spread)
	}
}

// A real worker with a webhook whose endpoint never answers, and one
// webhook slot: the send goes out beside it, the endpoint is tried (one
// POST at a time) and the failure logged as an attempt, and the send's
// batches never wait for it (they have their own server's slots).
func TestDeadWebhookDoesNotHoldASend(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	d := testdb.New(t)
	flushRedis(t)
	const n = 200
	s := smtptest.New(t, smtptest.Options{})
	send := readySend(t, d, n)
	var user int64
	if err := d.Pool.QueryRow(context.Background(), "SELECT user_id FROM single_sends WHERE id = $1", send).Scan(&user); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var calls, inflight, peak atomic.Int32
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		now := inflight.Add(1)
		defer inflight.Add(-1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	hook, _, err := d.CreateWebhook(context.Background(), user, mail.WebhookInput{URL: hang.URL, Events: mail.HookAll})
	if err != nil {
		t.Fatal(err)
	}
	// Hold the send until the worker's webhook slot is taken by a POST.
	if _, err := d.Pool.Exec(context.Background(), "UPDATE single_sends SET status = 0 WHERE id = $1", send); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UnsubscribeRecipient(context.Background(), mail.UnsubscribeToken{UserID: user, Email: "first@crash.example"}, nil, mail.ViaOneClick); err != nil {
		t.Fatal(err)
	}
	worker(t, s.Addr, "worker", "WEBHOOK_ALLOW_PRIVATE=true", "WEBHOOK_CONCURRENCY=1", "WEBHOOK_TIMEOUT=3s",
		"WEBHOOK_RETRY_MIN=1s", "WEBHOOK_RETRY_MAX=1s")
	for deadline := time.Now().Add(15 * time.Second); calls.Load() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the webhook was never posted to")
		}
	}
	t0 := time.Now()
	if _, err := d.Pool.Exec(context.Background(), "UPDATE single_sends SET status = 1 WHERE id = $1", send); err != nil {
		t.Fatal(err)
	}
	if delivered := waitCompleted(t, d, send, 30*time.Second); delivered != n {
		t.Errorf("delivered %d, want %d", delivered, n)
	}
	t.Logf("%d mails in %v beside a webhook that never answers", n, time.Since(t0).Round(time.Millisecond))
	if p := peak.Load(); p != 1 {
		t.Errorf("%d POSTs in flight at once to the dead endpoint, want 1", p)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		attempts, err := d.WebhookAttempts(context.Background(), user, hook)
		if err != nil {
			t.Fatal(err)
		}
		if len(attempts) > 0 {
			if a := attempts[len(attempts)-1]; a.StatusCode != nil || a.Result != mail.WebhookRetrying || !strings.Contains(a.Error, "Timeout") {
				t.Errorf("the first attempt: %+v", a)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no attempt logged")
		}
	}
}

// rsaKeyFile writes a new RSA-2048 private key (PKCS #1 PEM) and returns
// its path.
func rsaKeyFile(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dkim.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
