package delivery

import (
	"context"
	"errors"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/render"
	"github.com/mailroom/mailroom/internal/smtp"
)

// RunChain sends range k of send sendID: it leases the open deliveries
// of the id range with their recipients (one statement), makes each mail
// from the send's compiled form, pushes them through the transport
// Config.Concurrency at a time, records every outcome (in steps while
// they go, the rest in one transaction, which completes the send when
// nothing is left), then goes on with the next range of its chain (k +
// window) for up to Config.Slice, and schedules the one after. once runs
// range k alone (a revisit of mails its domains put off). Run twice, the
// second run finds the rows leased or recorded and sends nothing.
func (e *Engine) RunChain(ctx context.Context, sendID, k int64, once bool) error {
	cs, err := e.sends.get(ctx, e, sendID)
	if mail.ErrorCode(err) == mail.ENOTFOUND {
		return nil // deleted since
	}
	if err != nil || cs.send.Status != 2 || cs.send.BatchSize <= 0 {
		return err // nil for a send no longer running
	}
	size := int64(cs.send.BatchSize)
	// A task goes on with the next range of its chain (k + window) while
	// it has run less than Config.Slice: a queue round trip per range
	// costs more than a range's work when the worker polls. Past the slice
	// it schedules the next range and ends, so other sends' batches get
	// the worker slot.
	start := time.Now()
	for j := k; ; j += int64(e.Config.Window) {
		from := cs.send.First + j*size
		if from > cs.last {
			return nil
		}
		if j != k && time.Since(start) >= e.Config.Slice {
			return e.Scheduler.Chain(ctx, sendID, j, time.Time{}, "")
		}
		completed, err := e.runRange(ctx, cs, j, from, from+size)
		if errors.Is(err, ErrPaused) {
			// A reputation guard paused the send: its chain ends here, and
			// resuming it lets the sweeper start it again.
			e.Log.InfoContext(ctx, "the send is paused: its chain stops", "send_id", sendID)
			return nil
		}
		var th *throttled
		if errors.As(err, &th) {
			// The account's sending rate is spent: the range's rest waits,
			// and this chain with it (not the workers).
			at := e.now().Add(th.wait)
			if once {
				return e.Scheduler.Revisit(ctx, sendID, j, at)
			}
			return e.Scheduler.Chain(ctx, sendID, j, at, "rate"+strconv.FormatInt(time.Now().UnixNano(), 36))
		}
		if errors.Is(err, errRelayDown) {
			// The chain stops: the sweeper tries again when the send has
			// been idle for SEND_STALL_AFTER, a range per chain, until the
			// relay takes mail again.
			e.Log.WarnContext(ctx, "the SMTP server is not taking mail: the send waits", "send_id", sendID)
			return nil
		}
		if err != nil || completed || once { // a revisit runs its range alone
			return err
		}
		if ctx.Err() != nil {
			return nil // stopping: the chain resumes from the sweeper
		}
	}
}

// runRange claims, sends and records one id range of a send; completed
// says whether it completed the send. The range's lease is renewed every
// third of Config.Lease while its mails go out; when a renewal fails (the
// lease was taken over, or the database is away) no further mail of the
// range is handed out, so a slow batch is never sent again beside itself.
func (e *Engine) runRange(ctx context.Context, cs *compiledSend, k, from, to int64) (completed bool, err error) {
	t0 := time.Now()
	lease, claimed, err := e.Store.ClaimDeliveries(ctx, cs.send.ID, cs.send.GroupID, k, from, to, e.Config.Lease)
	if err != nil || lease == nil {
		return false, err
	}
	cs.steps.paused.Store(false) // leased: the send is not paused (any more)
	// The account's sending rate: the mails past what it allows now wait,
	// not tried (their attempt does not count), until it allows more.
	var deferred []mail.Outcome
	var wait time.Duration
	if rate := cs.send.SendRate; rate > 0 && e.Rates != nil {
		got, retry, err := e.Rates.Take(ctx, cs.send.UserID, rate, len(claimed))
		switch {
		case err != nil:
			e.Log.WarnContext(ctx, "sending rate not checked: the range goes", "send_id", cs.send.ID, "err", err)
		case got < len(claimed):
			wait = max(retry, 50*time.Millisecond)
			next := time.Now().Add(wait)
			for _, c := range claimed[got:] {
				deferred = append(deferred, mail.Outcome{ID: c.ID, Email: c.Recipient.Email, Status: mail.DeliveryPending, NextAt: &next, NotTried: true})
			}
			claimed = claimed[:got]
		}
	}
	// The sending domain's warm-up: past the day's allowance, across every
	// worker, the mails wait untried for the next day, deferred with the
	// reason warm-up (docs/deliverability.md).
	if limit := cs.send.Warmup.Allowance(e.now()); limit > 0 && e.Warmups != nil && len(claimed) > 0 {
		now := e.now()
		got, err := e.Warmups.TakeDay(ctx, warmupKey(&cs.send, now), limit, len(claimed), nextDay(now).Add(time.Hour))
		switch {
		case err != nil:
			e.Log.WarnContext(ctx, "warm-up allowance not checked: the range goes", "send_id", cs.send.ID, "err", err)
		case got < len(claimed):
			next := nextDay(now)
			for _, c := range claimed[got:] {
				deferred = append(deferred, mail.Outcome{ID: c.ID, Email: c.Recipient.Email, Status: mail.DeliveryPending, NextAt: &next,
					NotTried: true, Deferred: true, Error: mail.WarmupReason})
			}
			claimed = claimed[:got]
			wait = max(wait, next.Sub(now))
		}
	}
	// The recipient domains' limits: mails of a domain on hold, past its
	// rate or its cap wait untried; the rest of the range goes.
	plan := e.planDomains(ctx, cs.send.ID, claimed)
	t1 := time.Now()
	// The lease is renewed until the range's outcomes are recorded, its
	// domain slots while its mails go out.
	var lost, sending atomic.Bool
	sending.Store(true)
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(e.Config.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if ok, err := e.Store.RenewLease(context.WithoutCancel(ctx), lease, e.Config.Lease); !ok || err != nil {
					e.Log.WarnContext(ctx, "range lease lost: the rest of the range waits", "send_id", cs.send.ID, "k", k, "err", err)
					lost.Store(true)
					return
				}
				if sending.Load() {
					plan.renew(ctx)
				}
			}
		}
	}()
	defer func() {
		close(stop)
		<-renewed
	}()
	var down atomic.Bool
	out := make([]mail.Outcome, len(claimed))
	steps := cs.steps.open(ctx, e, cs.send.ID, cs.send.UserID, out)
	e.deliver(ctx, cs, claimed, out, plan, steps, &lost, &down)
	sending.Store(false)
	rest, stepCompleted := steps.finish()
	outcomes := append(rest, deferred...)
	plan.release(context.WithoutCancel(ctx))
	t2 := time.Now()
	// Outcomes are recorded even when the worker is stopping or the lease
	// was lost: the mails went out.
	// A database that is away (a restart, a failover) is waited for up to
	// 30 s: a record lost here would send these mails again. RecordBatch
	// changes only rows still pending, so a try whose commit did go
	// through counts nothing twice.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	rec := NewRecord(cs.send.ID, outcomes, time.Now())
	var recorded Recorded
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
		recorded, err = e.Store.RecordBatch(rctx, lease, cs.send.UserID, rec)
		completed = recorded.Completed
		var domain *mail.Error
		if err == nil || rctx.Err() != nil || errors.As(err, &domain) {
			break // done, out of time, or a refusal no retry changes
		}
		e.Log.WarnContext(ctx, "recording a range failed; trying again", "send_id", cs.send.ID, "k", k, "err", err)
		select {
		case <-rctx.Done():
		case <-time.After(backoff):
		}
	}
	steps.written()
	completed = completed || stepCompleted
	if completed {
		e.Log.InfoContext(ctx, "send completed", "send_id", cs.send.ID)
	}
	// Mails put off for their domain come back with their range alone,
	// when they are due (the sweeper would, once the send is idle).
	for _, at := range plan.revisits(outcomes) {
		if err := e.Scheduler.Revisit(ctx, cs.send.ID, k, at); err != nil {
			e.Log.WarnContext(ctx, "range revisit not queued: the sweeper will", "send_id", cs.send.ID, "k", k, "err", err)
		}
	}
	t3 := time.Now()
	m := e.Metrics
	m.batchSize.Observe(float64(len(claimed)))
	m.batchPhase[phaseClaim].Observe(t1.Sub(t0).Seconds())
	m.batchPhase[phaseSend].Observe(t2.Sub(t1).Seconds())
	m.batchPhase[phaseRecord].Observe(t3.Sub(t2).Seconds())
	m.batch.Observe(t3.Sub(t0).Seconds())
	e.Log.DebugContext(ctx, "range", "send_id", cs.send.ID, "from", from, "mails", len(claimed),
		"claim_ms", t1.Sub(t0).Milliseconds(), "send_ms", t2.Sub(t1).Milliseconds(), "record_ms", t3.Sub(t2).Milliseconds())
	if err == nil && down.Load() {
		err = errRelayDown
	}
	if err == nil && !completed && (recorded.Paused || cs.steps.paused.Load()) {
		err = ErrPaused
	}
	if err == nil && len(deferred) > 0 {
		err = &throttled{wait: wait}
	}
	return completed, err
}

// throttled is a range cut short by its account's sending rate: the chain
// goes on with the same range after wait.
type throttled struct{ wait time.Duration }

func (t *throttled) Error() string {
	return "delivery: the account's sending rate is spent for " + t.wait.String()
}

// deliver makes and sends the claimed mails, Config.Concurrency at a
// time, and writes their outcomes into out in claim order, telling steps
// of each mail handed to the transport; once lost is set, the mails not
// handed out yet are left for later, untried. plan (nil: no limited
// domain in the range) says which mails wait for their domain and how
// many of a domain go at once.
func (e *Engine) deliver(ctx context.Context, cs *compiledSend, claimed []mail.Claimed, out []mail.Outcome, plan *domainPlan,
	steps *stepRange, lost, down *atomic.Bool) {
	var failing atomic.Int32 // connection-level failures in a row
	plan.fill(out)
	sender := cs.send.Sender.FromEmail.Wire()        // the envelope's and the DKIM key's form
	key := e.DKIM.ForAccount(cs.send.UserID, sender) // its account's own domain key, else DKIM_KEYS'
	route := smtp.Route{Relay: cs.send.Relay, SenderDomain: domainOf(cs.send.Sender.FromEmail)}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(e.Config.Concurrency, plan.sending(len(claimed))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b render.Buffer
			var data, signed, link []byte
			share := budgetShare{b: e.budget}
			defer share.release()
			drop := func() { data, signed = nil, nil }
			// settle ends a mail built: a big mail's buffers are not kept
			// for the next, and its share of the budget goes back.
			settle := func() {
				if cap(data) > keepBytes || cap(signed) > keepBytes {
					drop()
				}
				share.settle()
			}
			for {
				i, run := plan.next(&next, len(claimed))
				if i < 0 {
					return
				}
				c := &claimed[i]
				r := &c.Recipient
				// Stopping, the lease gone, the relay down, the send paused:
				// not tried, again soon (or once resumed).
				if ctx.Err() != nil || lost.Load() || down.Load() || cs.steps.paused.Load() {
					out[i] = notTriedNow(c)
					e.Metrics.mail(&out[i])
					run.free()
					continue
				}
				if run.held(c, &out[i]) { // its domain answered try-later in this range: not tried, until the hold ends
					e.Metrics.mail(&out[i])
					run.free()
					continue
				}
				e.Links.Fill(r, mail.UnsubscribeToken{UserID: cs.send.UserID, Email: r.Email, GroupID: cs.send.GroupID, SendID: cs.send.ID})
				if lt := cs.send.ListTokens[c.ListKey]; lt != "" && e.Links.Signer != nil {
					link = e.Links.Pixel(link[:0], lt, cs.send.ID, c.ID)
					r.Tokens.OpenPixelURL = string(link)
				}
				// The mail's memory is taken from the worker's budget before it
				// is built (Bounds.Max: at most what Build writes), and given
				// back once it went (settle). A mail refused outright for its
				// size (Bounds.Min) takes nothing.
				bounds := cs.form.Bounds(&b, r)
				if bounds.Min <= cs.form.MaxBytes() && !share.cover(ctx, mailNeed(bounds.Max, key != nil), drop) {
					// Stopping while waiting for the budget: not tried, again soon.
					out[i] = notTriedNow(c)
					e.Metrics.mail(&out[i])
					run.free()
					continue
				}
				var err error
				if data, err = cs.form.BuildBounded(data[:0], &b, r, c.ID, bounds); err != nil {
					// Its values make the mail longer than MAX_MAIL_BYTES: this
					// recipient's fails for good, untried (no attempt counts);
					// the range goes on.
					out[i] = mail.Outcome{ID: c.ID, Email: r.Email, Status: mail.DeliveryFailed, Error: errText(err), NotTried: true}
					e.Metrics.mail(&out[i])
					run.free()
					settle()
					continue
				}
				msg := data
				if key != nil {
					if signed, err = key.Sign(signed[:0], data); err == nil {
						msg = signed
					}
				}
				from := sender
				if e.VERP.On() { // the return path names the delivery (docs/bounces.md)
					from = e.VERP.Address(cs.send.ID, c.ID)
				}
				route := route
				route.Provider = mail.ProviderOf(r.Email).Name()
				res := e.Transport.Send(ctx, &smtp.Message{From: from, To: r.Email.Wire(), Data: msg, Route: route})
				out[i] = outcome(c, res)
				run.done(ctx, res, &out[i])
				e.Metrics.mail(&out[i])
				// A breaker: when the connection or the sender keeps being
				// refused, the rest of the range is not tried (each try would
				// fail the same way) and the send waits.
				if res.Class != smtp.Accepted && (res.Stage == smtp.StageConnect || res.Stage == smtp.StageSender) {
					if failing.Add(1) >= relayDownAfter {
						down.Store(true)
					}
				} else {
					failing.Store(0)
				}
				settle()
				// Last: it holds this sender while too many of the send's
				// mails wait for a step (the mail's budget given back).
				steps.sent(i)
			}
		}()
	}
	wg.Wait()
}

// relayDownAfter connection-level failures in a row stop a range and its
// chain (errRelayDown).
const relayDownAfter = 8

// notTriedNow is the outcome of a claimed delivery not tried (the engine
// stopping, the lease gone, the relay down): pending, due again at once,
// no attempt counted.
func notTriedNow(c *mail.Claimed) mail.Outcome {
	return mail.Outcome{ID: c.ID, Email: c.Recipient.Email, Status: mail.DeliveryPending, NextAt: new(time.Now()), NotTried: true}
}

var errRelayDown = errors.New("delivery: the SMTP server is not taking mail")

// outcome is what a send's result makes of a delivery. Only a 5xx to RCPT
// TO is a hard bounce (the address is suppressed), unless its enhanced
// code is a policy refusal (5.7.x: the message, not the address); a 5xx to
// the message fails this mail alone, as does a mail that needs SMTPUTF8
// (a UTF-8 address) where the server does not offer it (smtp.ErrNoSMTPUTF8). A failure before the recipient's step
// (the relay down, a refused login or sender) is not the recipient's: the
// row waits NotTriedDelay and the attempt does not count, so an outage
// fails nobody. Temporary failures at the recipient or the message retry
// with backoff until the attempts run out.
func outcome(c *mail.Claimed, res smtp.Result) mail.Outcome {
	o := mail.Outcome{ID: c.ID, Email: c.Recipient.Email, Error: errText(res.Err)}
	switch {
	case res.Class == smtp.Accepted:
		o.Status, o.Error = mail.DeliverySent, ""
	case res.Stage == smtp.StageConnect || res.Stage == smtp.StageSender:
		o.Status, o.NextAt, o.NotTried = mail.DeliveryPending, new(time.Now().Add(mail.NotTriedDelay)), true
	case res.Class == smtp.Permanent && res.Stage == smtp.StageRecipient && !policyRefusal(res.Err):
		o.Status = mail.DeliveryBounced
	case res.Class == smtp.Permanent:
		o.Status = mail.DeliveryFailed
	case c.Attempts >= mail.MaxAttempts:
		o.Status = mail.DeliveryFailed
	default:
		o.Status, o.NextAt = mail.DeliveryPending, new(time.Now().Add(mail.RetryDelay(c.Attempts)))
	}
	return o
}

// policyRefusal reports whether a reply's enhanced status code is 5.7.x
// (a refusal by policy: spam, reputation, authentication of the sender),
// which says nothing against the address.
func policyRefusal(err error) bool {
	var tp *textproto.Error
	return errors.As(err, &tp) && strings.HasPrefix(strings.TrimSpace(tp.Msg), "5.7.")
}

// errText is a failure as stored with its delivery: valid UTF-8 without
// NUL (a server's reply may hold anything), at most 500 bytes, cut at a
// character boundary.
func errText(err error) string {
	if err == nil {
		return ""
	}
	s := strings.ToValidUTF8(strings.ReplaceAll(err.Error(), "\x00", ""), "\uFFFD")
	if len(s) > 500 {
		cut := 500
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
