package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

// Event webhooks (docs/webhooks.md). The events wait in the outbox
// (webhook_batches), written by the transactions that made them. A sweeper
// enqueues one task per webhook with events waiting; the task posts them
// in batches, signed, and on a failure returns an error so that asynq
// retries it with exponential backoff (WebhookRetryDelay) until the events
// have waited Webhooks.RetryFor, when they are given up. The tasks run on
// their own queue, served by the worker's second asynq server with its own
// slots (WEBHOOK_CONCURRENCY): a slow or dead endpoint never takes a send
// batch's slot. Its TaskID makes a webhook's task one at a time, retries
// included: a dead endpoint holds at most one slot, and only while a POST
// to it runs.
const (
	// QueueWebhooks is the webhook tasks' queue (Webhooks.Queue unless set).
	QueueWebhooks = "webhooks"
	// TypeDeliverWebhook posts a webhook's waiting events.
	TypeDeliverWebhook = "webhook:deliver"
	// TypeSweepWebhooks enqueues a TypeDeliverWebhook per webhook with
	// events waiting.
	TypeSweepWebhooks = "webhook:sweep"
	// TypeDropWebhookBatches deletes given-up events older than a week.
	TypeDropWebhookBatches = "webhook:retention"
)

// Webhooks is the tuning of webhook delivery (docs/webhooks.md).
type Webhooks struct {
	Queue    string        // the tasks' queue; QueueWebhooks
	Timeout  time.Duration // one POST, connection to answer; 10 s
	RetryMin time.Duration // the first retry's delay, doubling after; 30 s
	RetryMax time.Duration // the longest delay between two tries; 1 h
	RetryFor time.Duration // how long events are retried before they are given up; 24 h
	// MaxEvents is about the most events one POST carries (the outbox
	// rows are not split: one of up to a batch's size may pass it); 5,000.
	MaxEvents int
	// Slice is how long one task goes on posting to a webhook that takes
	// its events before it lets the others have the slot; 10 s.
	Slice time.Duration
	// AllowPrivate lets a POST reach loopback, private and link-local
	// addresses (WEBHOOK_ALLOW_PRIVATE): off, they are refused when
	// dialled, whatever the name resolved to.
	AllowPrivate bool
	// Client posts the events; nil: one built from the above.
	Client *http.Client
}

func (w Webhooks) withDefaults() Webhooks {
	if w.Queue == "" {
		w.Queue = QueueWebhooks
	}
	if w.Timeout <= 0 {
		w.Timeout = 10 * time.Second
	}
	if w.RetryMin <= 0 {
		w.RetryMin = 30 * time.Second
	}
	if w.RetryMax <= 0 {
		w.RetryMax = time.Hour
	}
	w.RetryMax = max(w.RetryMax, w.RetryMin)
	if w.RetryFor <= 0 {
		w.RetryFor = 24 * time.Hour
	}
	if w.MaxEvents <= 0 {
		w.MaxEvents = 5000
	}
	if w.Slice <= 0 {
		w.Slice = 10 * time.Second
	}
	if w.Client == nil {
		w.Client = webhookClient(w.Timeout, w.AllowPrivate)
	}
	return w
}

// WebhookRetryDelay is the webhook server's asynq RetryDelayFunc: after the
// n-th failure in a row (0 the first) a webhook's task waits RetryMin
// doubled n times, at most RetryMax (30 s, 1 min, 2 min, … 32 min, then
// every hour by default).
func WebhookRetryDelay(w Webhooks) asynq.RetryDelayFunc {
	w = w.withDefaults()
	return func(n int, _ error, _ *asynq.Task) time.Duration {
		return retryDelay(w, n)
	}
}

func retryDelay(w Webhooks, n int) time.Duration {
	d := w.RetryMin
	for range n {
		if d >= w.RetryMax {
			break
		}
		d *= 2
	}
	return min(d, w.RetryMax)
}

// maxRetry is the task's asynq MaxRetry: the retries whose delays add up
// to RetryFor, and one more, so the last try comes at about RetryFor after
// the first failure (RetryFor 24 h: 31). The events' own age decides when
// they are given up; a task whose retries run out with events younger than
// that ends, and the sweeper starts a new one.
func maxRetry(w Webhooks) int {
	var sum time.Duration
	n := 0
	for sum < w.RetryFor && n < 1000 {
		sum += retryDelay(w, n)
		n++
	}
	return n + 1
}

// WebhookPayload names a webhook.
type WebhookPayload struct {
	WebhookID int64 `json:"webhook_id"`
}

// NewWebhookTask is the delivery of webhook id's waiting events. Its
// TaskID ("webhook:<id>") holds while it is queued, running or waiting for
// a retry: one task per webhook at a time.
func NewWebhookTask(w Webhooks, id int64) *asynq.Task {
	w = w.withDefaults()
	b, _ := json.Marshal(WebhookPayload{WebhookID: id})
	return asynq.NewTask(TypeDeliverWebhook, b, asynq.Queue(w.Queue), asynq.TaskID(fmt.Sprintf("webhook:%d", id)),
		asynq.MaxRetry(maxRetry(w)), asynq.Timeout(w.Slice+2*w.Timeout+time.Minute))
}

// NewSweepWebhooksTask is the webhook sweeper's periodic task.
func NewSweepWebhooksTask(w Webhooks) *asynq.Task {
	w = w.withDefaults()
	return asynq.NewTask(TypeSweepWebhooks, nil, asynq.Queue(w.Queue), asynq.Unique(time.Second), asynq.MaxRetry(0),
		asynq.Timeout(30*time.Second))
}

// NewDropWebhookBatchesTask is the hourly removal of given-up events.
func NewDropWebhookBatchesTask(w Webhooks) *asynq.Task {
	w = w.withDefaults()
	return asynq.NewTask(TypeDropWebhookBatches, nil, asynq.Queue(w.Queue), asynq.Unique(time.Hour), asynq.MaxRetry(3),
		asynq.Timeout(5*time.Minute))
}

// ScheduleWebhooks registers the webhook sweeper (every second) and the
// hourly removal of given-up events.
func ScheduleWebhooks(s *asynq.Scheduler, w Webhooks) error {
	if _, err := s.Register("@every 1s", NewSweepWebhooksTask(w)); err != nil {
		return err
	}
	_, err := s.Register("@every 1h", NewDropWebhookBatchesTask(w))
	return err
}

// SweepWebhooks handles TypeSweepWebhooks: a task for each webhook with
// events waiting. A webhook whose task is queued, running or waiting for
// its retry already keeps that one (its TaskID).
func SweepWebhooks(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error {
		ids, err := d.DB.WebhooksWithPending(ctx, 10000)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := d.enqueue(ctx, NewWebhookTask(d.Webhooks, id)); err != nil {
				return err
			}
		}
		return nil
	}
}

// DropWebhookBatches handles TypeDropWebhookBatches.
func DropWebhookBatches(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error {
		n, err := d.DB.DropGivenUpWebhookBatches(ctx)
		if n > 0 {
			d.Log.InfoContext(ctx, "given-up webhook events deleted", "rows", n)
		}
		return err
	}
}

// webhookFailed is a POST that did not get a 2xx: the task fails, and
// asynq retries it after WebhookRetryDelay.
type webhookFailed struct {
	id  int64
	why string
}

func (e *webhookFailed) Error() string {
	return fmt.Sprintf("jobs: webhook %d: %s", e.id, e.why)
}

// DeliverWebhook handles TypeDeliverWebhook: it posts the webhook's
// waiting events, oldest first, up to Webhooks.MaxEvents a POST, for up to
// Webhooks.Slice. A 2xx makes them done. Anything else is logged as an
// attempt, the events written more than RetryFor ago are given up, and
// the task fails so that asynq tries again later (the events meanwhile
// written join the next POST).
func DeliverWebhook(d Deps) asynq.HandlerFunc {
	w := d.Webhooks
	return func(ctx context.Context, t *asynq.Task) error {
		var p WebhookPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return Permanent(err)
		}
		start := time.Now()
		var body []byte
		for {
			post, err := d.DB.NextWebhookPost(ctx, p.WebhookID, w.MaxEvents, body)
			if mail.ErrorCode(err) == mail.ENOTFOUND {
				return nil // deleted: its events went with it
			}
			if err != nil || len(post.Batches) == 0 {
				return err
			}
			body = post.Body
			if post.Events == 0 { // nothing it wants any more
				if err := d.DB.WebhookPosted(ctx, p.WebhookID, post.Batches, nil); err != nil {
					return err
				}
				continue
			}
			retried, _ := asynq.GetRetryCount(ctx)
			a := postWebhook(ctx, w.Client, post.Target, post.Body, retried+1)
			a.Events = post.Events
			if a.StatusCode != nil && *a.StatusCode/100 == 2 {
				if err := d.DB.WebhookPosted(ctx, p.WebhookID, post.Batches, &a); err != nil {
					return err
				}
				if time.Since(start) >= w.Slice || ctx.Err() != nil {
					return nil // the sweeper queues the rest at once
				}
				continue
			}
			rows, events, err := d.DB.WebhookFailed(ctx, p.WebhookID, post.Batches, a, time.Now().Add(-w.RetryFor))
			if err != nil {
				return err
			}
			d.Log.WarnContext(ctx, "webhook post failed", "webhook_id", p.WebhookID, "status", a.StatusCode, "err", a.Error,
				"events", a.Events, "retry", retried)
			if rows > 0 {
				d.Log.WarnContext(ctx, "webhook events given up", "webhook_id", p.WebhookID, "batches", rows, "events", events,
					"retry_for", w.RetryFor.String())
			}
			if maxR, ok := asynq.GetMaxRetry(ctx); ok && retried >= maxR {
				// asynq would archive the task, and its TaskID with it: the
				// task ends instead, and the sweeper starts a fresh one for
				// the events left.
				return nil
			}
			return &webhookFailed{id: p.WebhookID, why: a.Error}
		}
	}
}

// postWebhook posts body to the webhook, signed, and answers the attempt
// (status, latency, why it failed).
func postWebhook(ctx context.Context, client *http.Client, to postgres.WebhookTarget, body []byte, attempt int) mail.WebhookAttempt {
	now := time.Now()
	var a mail.WebhookAttempt
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to.URL, bytes.NewReader(body))
	if err != nil {
		a.Error = "the url does not make a request"
		return a
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "mailroom-webhooks/1")
	h.Set("X-Mailroom-Signature", mail.WebhookSignature(to.Secret, now, body))
	h.Set("X-Mailroom-Webhook-Id", strconv.FormatInt(to.ID, 10))
	h.Set("X-Mailroom-Attempt", strconv.Itoa(attempt))
	res, err := client.Do(req)
	if err == nil {
		io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // so the connection is reused
		res.Body.Close()
	}
	a.LatencyMS = int(time.Since(now).Milliseconds())
	switch {
	case err != nil:
		var ue *url.Error
		if errors.As(err, &ue) { // its URL may hold credentials: the cause alone
			err = ue.Err
		}
		a.Error = clip(err.Error())
	case res.StatusCode/100 != 2:
		a.StatusCode, a.Error = new(res.StatusCode), clip(res.Status)
	default:
		a.StatusCode = new(res.StatusCode)
	}
	return a
}

// clip is a failure as the attempts list keeps it: valid UTF-8, at most
// 300 bytes.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > 300 {
		cut := 300
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// errPrivateTarget is a dial refused by the private-address guard.
var errPrivateTarget = errors.New("the webhook's address is loopback, private or link-local (WEBHOOK_ALLOW_PRIVATE is off)")

// webhookClient is the HTTP client of webhook POSTs: timeout for the whole
// exchange, redirects not followed (a 3xx is a failure), no proxy from the
// environment, and unless allowPrivate, connections to loopback, private
// or link-local addresses refused after the name is resolved (a public
// name pointing inside is refused too).
func webhookClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			// The address is the resolved one, so always an IP: read
			// and judged as the save check reads and judges a URL's host
			// (mail.PrivateHost).
			if _, ip := mail.WebhookHost(host); !ip.IsValid() || mail.PrivateAddr(ip) {
				return errPrivateTarget
			}
			return nil
		}
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
