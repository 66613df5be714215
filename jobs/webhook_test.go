package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// The webhook tests run the real thing: the outbox in PostgreSQL, a real
// asynq server on Redis (database 9, a queue of each test's own, so runs
// of other checkouts do not meet) with the webhook retry schedule, and an
// httptest receiver that checks every signature. They are not parallel:
// the webhook sweeper posts the events of every webhook of the package's
// database.

// hookEvent is an event as the receiver decodes it.
type hookEvent struct {
	Email         string `json:"email"`
	Timestamp     int64  `json:"timestamp"`
	Event         string `json:"event"`
	SingleSendUTR string `json:"single_send_utr"`
	AutomationUTR string `json:"automation_utr"`
	DeliveryID    int64  `json:"delivery_id"`
	Type          string `json:"type"`
	Reason        string `json:"reason"`
	URL           string `json:"url"`
	GroupID       int64  `json:"unsubscribe_group_id"`
}

// receiver is an HTTP endpoint of webhooks: it checks each POST's
// signature against secret, answers status(n) to the n-th POST (0-based),
// and keeps the events of the POSTs it accepted (2xx).
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	status func(n int) int
	hang   chan struct{} // when set, each POST waits for it to close (or its client to go)

	mu       sync.Mutex
	secret   string
	posts    int
	accepted [][]hookEvent
	badSig   []string
	inflight atomic.Int32
	peak     atomic.Int32
	signal   chan struct{} // a POST was answered
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	r := &receiver{t: t, status: status, signal: make(chan struct{}, 1000)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		if r.hang != nil {
			select {
			case <-r.hang:
			default:
				close(r.hang)
			}
		}
		r.srv.Close()
	})
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	n := r.inflight.Add(1)
	defer r.inflight.Add(-1)
	for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
	}
	body, _ := io.ReadAll(req.Body)
	if r.hang != nil {
		select {
		case <-r.hang:
		case <-req.Context().Done():
		}
	}
	r.mu.Lock()
	defer func() {
		r.mu.Unlock()
		r.signal <- struct{}{}
	}()
	if !mail.VerifyWebhookSignature(r.secret, req.Header.Get("X-Mailroom-Signature"), body, time.Now(), 5*time.Minute) || req.Header.Get("Content-Type") != "application/json" {
		r.badSig = append(r.badSig, req.Header.Get("X-Mailroom-Signature"))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	code := r.status(r.posts)
	r.posts++
	if code/100 == 2 {
		var evs []hookEvent
		if err := json.Unmarshal(body, &evs); err != nil {
			r.t.Errorf("a POST is not a JSON array of events: %v\n%s", err, body)
		}
		r.accepted = append(r.accepted, evs)
	}
	w.WriteHeader(code)
}

// events are the accepted events, in order.
func (r *receiver) events() []hookEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookEvent
	for _, p := range r.accepted {
		out = append(out, p...)
	}
	return out
}

// waitFor waits until cond holds or timeout passes. cond is checked after
// each POST answered, and every 20 ms for what follows an answer in the
// worker (its record in the database).
func (r *receiver) waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.After(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-r.signal:
		case <-tick.C:
		case <-deadline:
			return cond()
		}
	}
}

func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	r.secret = s
	r.mu.Unlock()
}

// webhookWorker runs the webhook side of a worker for the test: an asynq
// server on the test's own queue with w's retry schedule and concurrency
// slots, and the sweeper every 50 ms. It answers w as the tasks use it.
func webhookWorker(t *testing.T, d *postgres.DB, w jobs.Webhooks, concurrency int, log *slog.Logger) jobs.Webhooks {
	t.Helper()
	w.Queue = fmt.Sprintf("webhooks-test-%d", time.Now().UnixNano())
	w.AllowPrivate = true // the receiver is on loopback
	redisOpt := asynq.RedisClientOpt{Addr: "127.0.0.1:6379", DB: 9}
	client := asynq.NewClient(redisOpt)
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	mux := jobs.NewMux(jobs.Deps{DB: d, Log: log, Webhooks: w,
		Enqueue: func(ctx context.Context, task *asynq.Task) error {
			_, err := client.EnqueueContext(ctx, task)
			return err
		}})
	srv := asynq.NewServer(redisOpt, asynq.Config{Concurrency: concurrency, Queues: map[string]int{w.Queue: 1},
		RetryDelayFunc: jobs.WebhookRetryDelay(w), DelayedTaskCheckInterval: 50 * time.Millisecond,
		TaskCheckInterval: 20 * time.Millisecond, ShutdownTimeout: 5 * time.Second, LogLevel: asynq.FatalLevel})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				mux.ProcessTask(ctx, jobs.NewSweepWebhooksTask(w))
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Shutdown()
		inspector := asynq.NewInspector(redisOpt)
		inspector.DeleteQueue(w.Queue, true)
		inspector.Close()
		client.Close()
		// No other test's sweeper posts this one's events.
		d.Pool.Exec(context.Background(), "DELETE FROM webhook_batches WHERE state = 0")
	})
	return w
}

// webhookFor makes a webhook of account user that wants kinds, posting to
// the receiver (which learns its secret).
func webhookFor(t *testing.T, d *postgres.DB, user int64, r *receiver, kinds mail.HookKinds) int64 {
	t.Helper()
	id, secret, err := d.CreateWebhook(context.Background(), user, mail.WebhookInput{URL: r.srv.URL + "/hook", Events: kinds})
	if err != nil {
		t.Fatal(err)
	}
	r.setSecret(secret)
	return id
}

// kindsOf summarizes events as "event email" lines, sorted.
func kindsOf(events []hookEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Event + " " + strings.ToLower(e.Email)
	}
	slices.Sort(out)
	return out
}

// A send through the real engine with a webhook that wants every event:
// the receiver gets, signed, each address's events (dropped at expansion
// and at claim, delivered, the hard bounce, the deferral and the later
// delivery, an open, two clicks of a link and an unsubscribe) once each, with the
// send's utr, in fewer POSTs than events; its first two POSTs are answered
// 500 and are retried until accepted; the attempts are logged; the send's
// statistics count what the receiver was told.
func TestWebhookEventsOfASend(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, `<html><body><p>Hi ((first_name))</p><a href="https://shop.example/deal">Deal</a></body></html>`)
	var laterTries atomic.Int32
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		switch {
		case strings.HasPrefix(rcpt, "gone@"):
			return smtptest.Permanent("no such user")
		case strings.HasPrefix(rcpt, "later@") && laterTries.Add(1) == 1:
			return smtptest.Temporary("try later")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 2, Window: 2, StallAfter: time.Second})

	r := newReceiver(t, func(n int) int {
		if n < 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	hook := webhookFor(t, d, f.user, r, mail.HookAll)
	webhookWorker(t, d, jobs.Webhooks{RetryMin: 100 * time.Millisecond, RetryMax: 200 * time.Millisecond}, 2, nil)

	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
	if !q.step(t, mux) { // the expansion alone: dave, erin, frank dropped
		t.Fatal("no dispatch")
	}
	// hank leaves every mail after the expansion: skipped when claimed.
	exec(t, d, `INSERT INTO unsubscribes (user_id, email_address) VALUES ($1, 'hank@example.com')`, f.user)
	q.drain(t, mux)
	exec(t, d, "UPDATE deliveries SET next_at = now() WHERE send_id = $1 AND status = 0", f.send)
	exec(t, d, "UPDATE single_sends SET progress_at = now() - interval '1 minute' WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewSweepSendsTask())
	q.drain(t, mux)
	if c := sendCounters(t, d, f.send); c.Status != 3 || c.Delivered != 3 || c.Bounces != 1 {
		t.Fatalf("the send: %+v", c)
	}

	// An open and two clicks of ann's mail (a flush of the recorder), and her
	// unsubscribe from the send's group through her mail's link.
	ann := scalar[int64](t, d, "SELECT id FROM deliveries WHERE send_id = $1 AND email = 'ann@example.com'", f.send)
	if _, err := d.NumberLinks(ctx, f.send, []string{"https://shop.example/deal"}); err != nil {
		t.Fatal(err)
	}
	if err := d.RecordActivity(ctx, []mail.Open{{SendID: f.send, DeliveryID: ann, ListToken: "tokA"}},
		[]mail.Click{{SendID: f.send, DeliveryID: ann, Link: 0}, {SendID: f.send, DeliveryID: ann, Link: 0}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UnsubscribeRecipient(ctx, mail.UnsubscribeToken{UserID: f.user, Email: "ann@example.com", GroupID: f.group, SendID: f.send},
		&f.group, mail.ViaOneClick); err != nil {
		t.Fatal(err)
	}

	want := []string{"bounce gone@example.com", "click ann@example.com", "click ann@example.com", "deferred later@example.com",
		"delivered ann@example.com", "delivered bob@example.com", "delivered later@example.com",
		"dropped dave@example.com", "dropped erin@example.com", "dropped frank@example.com", "dropped hank@example.com",
		"open ann@example.com", "unsubscribe ann@example.com"}
	if !r.waitFor(20*time.Second, func() bool { return len(r.events()) >= len(want) }) {
		t.Fatalf("the receiver got %v", kindsOf(r.events()))
	}
	got := r.events()
	if !slices.Equal(kindsOf(got), want) {
		t.Fatalf("events\n%v\nwant\n%v", kindsOf(got), want)
	}
	utr := scalar[string](t, d, "SELECT utr::text FROM single_sends WHERE id = $1", f.send)
	for _, e := range got {
		if e.SingleSendUTR != utr || e.AutomationUTR != "" || e.Timestamp < time.Now().Add(-time.Minute).Unix() {
			t.Errorf("event %+v: want the send's utr %s and a recent timestamp", e, utr)
		}
		switch e.Event {
		case "bounce":
			if e.Type != "bounce" || !strings.Contains(e.Reason, "no such user") || e.DeliveryID == 0 {
				t.Errorf("bounce %+v", e)
			}
		case "deferred":
			if !strings.Contains(e.Reason, "try later") || e.DeliveryID == 0 {
				t.Errorf("deferred %+v", e)
			}
		case "dropped":
			wantReason := map[string]string{"dave@example.com": "Unsubscribed Address", "erin@example.com": "Unsubscribed Address",
				"frank@example.com": "Bounced Address", "hank@example.com": "suppressed after the send started"}[strings.ToLower(e.Email)]
			if e.Reason != wantReason {
				t.Errorf("dropped %+v, want reason %q", e, wantReason)
			}
		case "click":
			if e.URL != "https://shop.example/deal" || e.DeliveryID != ann {
				t.Errorf("click %+v", e)
			}
		case "open":
			if e.DeliveryID != ann {
				t.Errorf("open %+v", e)
			}
		case "unsubscribe":
			if e.GroupID != f.group {
				t.Errorf("unsubscribe %+v", e)
			}
		}
	}
	// The statistics count what the receiver was told.
	var told mail.Counts
	opened, clicked := map[int64]bool{}, map[int64]bool{}
	for _, e := range got {
		switch e.Event {
		case "delivered":
			told.Delivered++
		case "deferred":
			told.Deferred++
		case "bounce":
			told.Bounces++
		case "open":
			told.TotalOpens++
			opened[e.DeliveryID] = true
		case "click":
			told.TotalClicks++
			clicked[e.DeliveryID] = true
		case "unsubscribe":
			told.Unsubscribes++
		case "complaint":
			told.Complaints++
		}
	}
	told.UniqueOpens, told.UniqueClicks = int64(len(opened)), int64(len(clicked))
	st, err := d.SingleSendStats(ctx, f.user, utr)
	if err != nil {
		t.Fatal(err)
	}
	told.Triggered, told.SoftBounces = st.Counts.Triggered, st.Counts.SoftBounces
	if st.Counts != told {
		t.Errorf("statistics %+v, the receiver was told %+v", st.Counts, told)
	}
	r.mu.Lock()
	posts, accepted, bad := r.posts, len(r.accepted), r.badSig
	r.mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("signatures that do not verify: %v", bad)
	}
	if accepted >= len(want) || accepted < 1 {
		t.Errorf("%d events came in %d accepted POSTs: want them batched", len(want), accepted)
	}
	var attempts []mail.WebhookAttempt
	r.waitFor(5*time.Second, func() bool { // the worker records the last answer
		var err error
		if attempts, err = d.WebhookAttempts(ctx, f.user, hook); err != nil {
			t.Fatal(err)
		}
		return len(attempts) == posts
	})
	if len(attempts) != posts {
		t.Fatalf("%d attempts logged, %d POSTs", len(attempts), posts)
	}
	first, second := attempts[len(attempts)-1], attempts[len(attempts)-2]
	for _, a := range []mail.WebhookAttempt{first, second} {
		if a.StatusCode == nil || *a.StatusCode != 500 || a.Result != mail.WebhookRetrying || a.Error != "500 Internal Server Error" || a.Events == 0 {
			t.Errorf("a failed attempt: %+v", a)
		}
	}
	if second.Events < first.Events { // the retry carries what came meanwhile too
		t.Errorf("the retry carried %d events, the first try %d", second.Events, first.Events)
	}
	if a := attempts[0]; a.StatusCode == nil || *a.StatusCode != 200 || a.Result != mail.WebhookDelivered || a.Error != "" {
		t.Errorf("the last attempt: %+v", a)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM webhook_batches WHERE webhook_id = $1", hook); n != 0 {
		t.Errorf("%d outbox rows left", n)
	}
}

// A bigger send: its delivered events come in a few POSTs (at most one
// per batch the engine recorded), not one per mail, each event once.
func TestWebhookBatchesASend(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	const n = 300
	user, send := bigSend(t, d, n)
	s := smtptest.New(t, smtptest.Options{Discard: true})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 100, Window: 4})
	r := newReceiver(t, func(int) int { return http.StatusNoContent })
	webhookFor(t, d, user, r, mail.HookDelivered|mail.HookBounce)
	webhookWorker(t, d, jobs.Webhooks{}, 2, nil)

	version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", send)
	q.enqueue(ctx, jobs.NewDispatchTask(send, version, time.Now()))
	q.drain(t, mux)
	if !r.waitFor(20*time.Second, func() bool { return len(r.events()) >= n }) {
		t.Fatalf("%d events received", len(r.events()))
	}
	seen := map[string]bool{}
	for _, e := range r.events() {
		if e.Event != "delivered" || seen[e.Email] {
			t.Fatalf("event %+v (seen: %v)", e, seen[e.Email])
		}
		seen[e.Email] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(seen) != n || r.posts > n/100 || len(r.badSig) > 0 {
		t.Fatalf("%d addresses in %d POSTs (%d bad signatures), want %d in at most %d", len(seen), r.posts, len(r.badSig), n, n/100)
	}
}

// bigSend is an account with n contacts and a ready send to them all.
func bigSend(t *testing.T, d *postgres.DB, n int) (user, send int64) {
	t.Helper()
	ctx := context.Background()
	user, _, err := d.CreateAccount(ctx, "hooks")
	if err != nil {
		t.Fatal(err)
	}
	typ := scalar[int64](t, d, `INSERT INTO contact_types (user_id, name) VALUES ($1, 'all') RETURNING id`, user)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'r' || i || '@hooks.example', 'R' || i FROM generate_series(1, $3::int) i`, user, typ, n)
	sender := scalar[int64](t, d, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'Hooks', 'news@hooks.example', 'news@hooks.example', 276, 'Street 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, user)
	group := scalar[int64](t, d, `INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description) VALUES ($1, gen_random_uuid()::text, 'g', 'g') RETURNING id`, user)
	send = scalar[int64](t, d, `INSERT INTO single_sends (user_id, utr, template_id, template_html, sender_id, unsubscribe_group_id, single_send_name,
			subject, preheader, recipient_id, status, due_at, unique_open_token)
		VALUES ($1, gen_random_uuid(), 1, '<p>Hi ((first_name))</p>', $2, $3, 'hooks', 'Hi', 'p',
			jsonb_build_array(jsonb_build_object('id', $4::text, 'table', 'contacts_')), 1, now(), '{}') RETURNING id`,
		user, sender, group, fmt.Sprint(typ))
	return user, send
}

// An endpoint that always fails is retried on the schedule until its
// events have waited WEBHOOK_RETRY_FOR (1 s here), then they are given up
// and logged, the task ends, and /webhooks/deliveries shows every attempt.
func TestWebhookGivenUp(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	user, keys, err := d.CreateAccount(ctx, "dead")
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20, AllowPrivateWebhooks: true},
		httpapi.Deps{DB: d, Geo: testdb.Geo(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	call := func(method, path string, body url.Values) string {
		t.Helper()
		var rd io.Reader
		if body != nil {
			rd = strings.NewReader(body.Encode())
		}
		req := httptest.NewRequest(method, path, rd)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("PublicKey", keys.Public)
		req.Header.Set("SecretKey", keys.Secret)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		return w.Body.String()
	}
	r := newReceiver(t, func(int) int { return http.StatusServiceUnavailable })
	var saved struct {
		Message struct {
			ID     int64  `json:"id"`
			Secret string `json:"secret"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(call("POST", "/api/webhooks/save", url.Values{"url": {r.srv.URL}, "events[0]": {"unsubscribe"}})), &saved); err != nil {
		t.Fatal(err)
	}
	r.setSecret(saved.Message.Secret)
	var logs syncBuffer
	w := webhookWorker(t, d, jobs.Webhooks{RetryMin: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond, RetryFor: time.Second}, 2,
		slog.New(slog.NewJSONHandler(&logs, nil)))

	if _, err := d.UnsubscribeRecipient(ctx, mail.UnsubscribeToken{UserID: user, Email: "gone@example.com"}, nil, mail.ViaOneClick); err != nil {
		t.Fatal(err)
	}
	givenUp := func() bool {
		var state int
		err := d.Pool.QueryRow(ctx, "SELECT state FROM webhook_batches WHERE webhook_id = $1", saved.Message.ID).Scan(&state)
		return err == nil && state == 2
	}
	if !r.waitFor(20*time.Second, givenUp) {
		t.Fatalf("not given up after %d POSTs", r.posts)
	}
	// The task ends: no retry is left in the queue.
	inspector := asynq.NewInspector(asynq.RedisClientOpt{Addr: "127.0.0.1:6379", DB: 9})
	defer inspector.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := inspector.GetTaskInfo(w.Queue, fmt.Sprintf("webhook:%d", saved.Message.ID)); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the webhook's task is still queued after the give-up")
		}
	}
	r.mu.Lock()
	posts := r.posts
	r.mu.Unlock()
	if posts < 3 {
		t.Errorf("%d POSTs: want retries before the give-up", posts)
	}

	var list struct {
		Message struct {
			Deliveries []struct {
				StatusCode *int   `json:"status_code"`
				LatencyMS  *int   `json:"latency_ms"`
				Error      string `json:"error"`
				Events     int    `json:"events"`
				Result     string `json:"result"`
				At         string `json:"attempted_at"`
			} `json:"deliveries"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(call("GET", fmt.Sprintf("/api/webhooks/deliveries?id=%d", saved.Message.ID), nil)), &list); err != nil {
		t.Fatal(err)
	}
	ds := list.Message.Deliveries
	if len(ds) != posts {
		t.Fatalf("%d attempts listed, %d POSTs made", len(ds), posts)
	}
	for i, a := range ds {
		want := "retrying"
		if i == 0 {
			want = "given_up"
		}
		if a.StatusCode == nil || *a.StatusCode != 503 || a.Error != "503 Service Unavailable" || a.Events != 1 || a.Result != want ||
			a.LatencyMS == nil || a.At == "" {
			t.Errorf("attempt %d: %+v, want result %s", i, a, want)
		}
	}
	if !strings.Contains(logs.String(), `"msg":"webhook events given up"`) {
		t.Errorf("the give-up is not logged:\n%s", logs.String())
	}
}

// One account's dead endpoint (it never answers) does not delay another
// account's events, and holds one connection at a time however many of
// its events wait.
func TestWebhookDeadEndpointDoesNotDelayOthers(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	dead := newReceiver(t, func(int) int { return http.StatusOK })
	dead.hang = make(chan struct{})
	healthy := newReceiver(t, func(int) int { return http.StatusOK })
	a, _, err := d.CreateAccount(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := d.CreateAccount(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	webhookFor(t, d, a, dead, mail.HookUnsubscribe)
	webhookFor(t, d, b, healthy, mail.HookUnsubscribe)
	webhookWorker(t, d, jobs.Webhooks{Timeout: 2 * time.Second, RetryMin: 100 * time.Millisecond, RetryMax: 100 * time.Millisecond}, 2, nil)

	for i := range 5 {
		if _, err := d.UnsubscribeRecipient(ctx, mail.UnsubscribeToken{UserID: a, Email: mail.Email(fmt.Sprintf("a%d@example.com", i))}, nil, mail.ViaOneClick); err != nil {
			t.Fatal(err)
		}
	}
	// A's endpoint is busy failing; B's events are written after.
	if !dead.waitFor(10*time.Second, func() bool { return dead.inflight.Load() > 0 }) {
		t.Fatal("the dead endpoint was never called")
	}
	t0 := time.Now()
	if _, err := d.UnsubscribeRecipient(ctx, mail.UnsubscribeToken{UserID: b, Email: "b@example.com"}, nil, mail.ViaOneClick); err != nil {
		t.Fatal(err)
	}
	if !healthy.waitFor(3*time.Second, func() bool { return len(healthy.events()) == 1 }) {
		t.Fatalf("the healthy endpoint got %v within 3 s", healthy.events())
	}
	t.Logf("the healthy endpoint's event arrived %v after it was written, beside a dead one", time.Since(t0).Round(time.Millisecond))
	if p := dead.peak.Load(); p != 1 {
		t.Errorf("the dead endpoint had %d POSTs in flight at once, want 1", p)
	}
}
