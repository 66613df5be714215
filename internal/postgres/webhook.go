package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Event webhooks (docs/webhooks.md): the accounts' webhooks, and the
// outbox their events wait in until the worker posts them. The writers
// that emit events are in webhook_emit.go.

// Webhooks returns the account's webhooks by id.
func (d *DB) Webhooks(ctx context.Context, userID int64) ([]mail.Webhook, error) {
	rows, err := d.q.ListWebhooks(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]mail.Webhook, len(rows))
	for i, r := range rows {
		out[i] = mail.Webhook{ID: r.ID, UserID: r.UserID, URL: r.Url, Events: mail.HookKinds(r.Events),
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// CreateWebhook stores a webhook with a fresh secret and answers its id
// and the secret (shown this once). An account has at most
// mail.MaxWebhooks (ECONFLICT past them); a URL it has already is a
// validation failure.
func (d *DB) CreateWebhook(ctx context.Context, userID int64, in mail.WebhookInput) (id int64, secret string, err error) {
	secret = mail.NewWebhookSecret()
	err = d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		n, err := q.CountWebhooks(ctx, userID)
		if err != nil {
			return err
		}
		if n >= mail.MaxWebhooks {
			return mail.Errorf(mail.ECONFLICT, "An account may have at most %d webhooks.", mail.MaxWebhooks)
		}
		id, err = q.CreateWebhook(ctx, db.CreateWebhookParams{UserID: userID, Url: in.URL, Events: int32(in.Events), Secret: secret})
		return urlTaken(err)
	})
	d.hooks.forget(userID)
	return id, secret, err
}

// UpdateWebhook sets a webhook's URL and events (its secret stays), or
// answers ENOTFOUND.
func (d *DB) UpdateWebhook(ctx context.Context, userID, id int64, in mail.WebhookInput) error {
	n, err := d.q.UpdateWebhook(ctx, db.UpdateWebhookParams{ID: id, UserID: userID, Url: in.URL, Events: int32(in.Events)})
	d.hooks.forget(userID)
	if err = urlTaken(err); err != nil {
		return err
	}
	if n == 0 {
		return mail.NotFound()
	}
	return nil
}

// urlTaken words the clash with another webhook of the account's URL.
func urlTaken(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.ConstraintName == "webhooks_url" {
		return mail.Invalid("url", "The url has already been taken.")
	}
	return err
}

// DeleteWebhook deletes a webhook and the events waiting for it, or
// answers ENOTFOUND.
func (d *DB) DeleteWebhook(ctx context.Context, userID, id int64) error {
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		n, err := q.DeleteWebhook(ctx, db.DeleteWebhookParams{ID: id, UserID: userID})
		if err != nil {
			return err
		}
		if n == 0 {
			return mail.NotFound()
		}
		return q.DropWebhookBatches(ctx, id)
	})
	d.hooks.forget(userID)
	return err
}

// WebhookAttempts are the last attempts to post to the account's webhook
// id, newest first; ENOTFOUND when it has no such webhook.
func (d *DB) WebhookAttempts(ctx context.Context, userID, id int64) ([]mail.WebhookAttempt, error) {
	ok, err := d.q.WebhookExists(ctx, db.WebhookExistsParams{ID: id, UserID: userID})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, mail.NotFound()
	}
	rows, err := d.q.WebhookAttempts(ctx, db.WebhookAttemptsParams{WebhookID: id, UserID: userID})
	if err != nil {
		return nil, err
	}
	out := make([]mail.WebhookAttempt, len(rows))
	for i, r := range rows {
		a := mail.WebhookAttempt{ID: r.ID, At: r.AttemptedAt, LatencyMS: int(r.LatencyMs), Error: r.Error, Events: int(r.Events),
			Result: mail.WebhookResult(r.Result)}
		if r.StatusCode != nil {
			a.StatusCode = new(int(*r.StatusCode))
		}
		out[i] = a
	}
	return out, nil
}

// WebhooksWithPending are up to n webhooks with events waiting.
func (d *DB) WebhooksWithPending(ctx context.Context, n int) ([]int64, error) {
	return d.q.WebhooksWithPending(ctx, int32(n))
}

// DropGivenUpWebhookBatches deletes the given-up outbox rows older than a
// week and answers how many went.
func (d *DB) DropGivenUpWebhookBatches(ctx context.Context) (int64, error) {
	return d.q.DropGivenUpWebhookBatches(ctx)
}

// WebhookTarget is what posting to a webhook needs.
type WebhookTarget struct {
	ID, UserID int64
	URL        string
	Secret     string
	Kinds      mail.HookKinds
}

// WebhookPost is the next POST of a webhook: the outbox rows it carries
// (Batches) and the JSON array of their events the webhook wants (Body,
// Events of them), in order. Events may be 0 when the rows hold nothing it
// wants any more (its events were changed, the deliveries dropped by
// retention): posting nothing, the rows are done.
type WebhookPost struct {
	Target  WebhookTarget
	Batches []int64
	Body    []byte
	Events  int
	Oldest  time.Time // when the oldest row was written
}

// NextWebhookPost reads the waiting events of webhook id, oldest first,
// rows until they hold maxEvents events (at least one row), and writes
// their JSON array into buf (reused): the deliveries the rows name are
// read, the sends' utrs looked up. No rows: Batches is empty. A deleted
// webhook is ENOTFOUND, and what still waits for it is dropped.
func (d *DB) NextWebhookPost(ctx context.Context, id int64, maxEvents int, buf []byte) (WebhookPost, error) {
	p := WebhookPost{Body: buf[:0]}
	w, err := d.q.WebhookForDelivery(ctx, id)
	if mail.ErrorCode(err) == mail.ENOTFOUND {
		// Deleted: rows an emitter wrote as the delete committed go now,
		// or the sweep would find them every second.
		if err := d.q.DropWebhookBatches(ctx, id); err != nil {
			return p, err
		}
		return p, mail.NotFound()
	}
	if err != nil {
		return p, err
	}
	p.Target = WebhookTarget{ID: w.ID, UserID: w.UserID, URL: w.Url, Secret: w.Secret, Kinds: mail.HookKinds(w.Events)}
	rows, err := d.q.PendingWebhookBatches(ctx, db.PendingWebhookBatchesParams{WebhookID: id, MaxEvents: int64(maxEvents)})
	if err != nil || len(rows) == 0 {
		return p, err
	}
	p.Oldest = rows[0].CreatedAt
	wanted := p.Target.Kinds
	named := func(r *db.PendingWebhookBatchesRow) bool {
		return r.SendID != nil && r.Kind != nil && len(r.Runs) >= 2 && wanted&mail.HookKinds(*r.Kind) != 0
	}
	// The events carried whole, those wanted; the sends named, for their
	// utrs; the addresses still to read.
	carried := make([][]mail.HookEvent, len(rows))
	sends := map[int64]bool{}
	var missing db.HookDeliveryEmailsParams
	for i := range rows {
		r := &rows[i]
		p.Batches = append(p.Batches, r.ID)
		if named(r) {
			sends[*r.SendID] = true
		}
		if r.Events == "" {
			continue
		}
		var evs []mail.HookEvent
		if err := json.Unmarshal([]byte(r.Events), &evs); err != nil {
			return p, fmt.Errorf("postgres: webhook batch %d: %w", r.ID, err)
		}
		keep := evs[:0]
		for _, e := range evs {
			if wanted&e.Kind == 0 {
				continue
			}
			keep = append(keep, e)
			if e.SendID > 0 {
				sends[e.SendID] = true
			}
			if e.Email == "" && e.SendID > 0 && e.DeliveryID > 0 {
				missing.SendIds, missing.Ids = append(missing.SendIds, e.SendID), append(missing.Ids, e.DeliveryID)
			}
		}
		carried[i] = keep
	}
	var emails map[int64]string
	if len(missing.Ids) > 0 {
		found, err := d.q.HookDeliveryEmails(ctx, missing)
		if err != nil {
			return p, err
		}
		emails = make(map[int64]string, len(found))
		for _, f := range found {
			emails[f.ID] = f.Email
		}
	}
	utrs := map[int64]db.HookSendUTRsRow{}
	if len(sends) > 0 {
		found, err := d.q.HookSendUTRs(ctx, slices.Collect(maps.Keys(sends)))
		if err != nil {
			return p, err
		}
		for _, u := range found {
			utrs[u.ID] = u
		}
	}
	withUTR := func(ev *mail.WebhookEvent, send int64) {
		if u, ok := utrs[send]; ok {
			if u.Automation {
				ev.AutomationUTR = u.Utr
			} else {
				ev.SingleSendUTR = u.Utr
			}
		}
	}
	b := append(p.Body, '[')
	add := func(ev *mail.WebhookEvent) {
		if p.Events > 0 {
			b = append(b, ',')
		}
		b = mail.AppendWebhookEvent(b, ev)
		p.Events++
	}
	for i := range rows {
		r := &rows[i]
		if named(r) {
			if err := d.namedEvents(ctx, r, withUTR, add); err != nil {
				return p, err
			}
		}
		for _, e := range carried[i] {
			ev := mail.WebhookEvent{Email: e.Email, Timestamp: e.At, Event: e.Kind.Name(), DeliveryID: e.DeliveryID, Type: e.Type,
				Reason: e.Reason, URL: e.URL, GroupID: e.GroupID}
			if ev.Email == "" && e.DeliveryID != 0 { // an event of a send (send.paused) names no mail
				if ev.Email = emails[e.DeliveryID]; ev.Email == "" {
					continue // no such delivery: nothing to say of it
				}
			}
			withUTR(&ev, e.SendID)
			add(&ev)
		}
	}
	p.Body = append(b, ']')
	return p, nil
}

// namedEvents adds the events of the deliveries an outbox row names by id
// runs, in id order: one walk of the runs' span, the ids outside them
// skipped.
func (d *DB) namedEvents(ctx context.Context, r *db.PendingWebhookBatchesRow, withUTR func(*mail.WebhookEvent, int64),
	add func(*mail.WebhookEvent)) error {
	kind, send := mail.HookKinds(*r.Kind), *r.SendID
	rows, err := d.q.HookDeliveries(ctx, db.HookDeliveriesParams{SendID: send, Lo: r.Runs[0], Hi: r.Runs[len(r.Runs)-1]})
	if err != nil {
		return err
	}
	// Delivered: the batch's record set sent_at to the now() of the
	// transaction that wrote the row, its created_at.
	ev := mail.WebhookEvent{Event: kind.Name(), Timestamp: r.CreatedAt.Unix()}
	withUTR(&ev, send)
	if kind == mail.HookDropped {
		ev.Reason = mail.SkippedReason
	}
	runs := r.Runs
	for i := range rows {
		row := &rows[i]
		for len(runs) >= 2 && row.ID > runs[1] {
			runs = runs[2:]
		}
		if len(runs) < 2 {
			break
		}
		if row.ID < runs[0] {
			continue // between two runs
		}
		ev.Email, ev.DeliveryID = row.Email, row.ID
		add(&ev)
	}
	return nil
}

// idRuns is sorted, distinct ids as [first, last] runs of consecutive ids,
// flattened: 1 2 3 7 8 is 1 3 7 8.
func idRuns(ids []int64) []int64 {
	var runs []int64
	for i, id := range ids {
		if i > 0 && id == ids[i-1]+1 {
			runs[len(runs)-1] = id
			continue
		}
		runs = append(runs, id, id)
	}
	return runs
}

// WebhookPosted records a POST the webhook answered with a 2xx: the rows it
// carried are done, the attempt logged. A nil attempt: rows holding nothing
// the webhook wants, done without a POST.
func (d *DB) WebhookPosted(ctx context.Context, webhookID int64, batches []int64, a *mail.WebhookAttempt) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		if err := q.WebhookPosted(ctx, batches); err != nil || a == nil {
			return err
		}
		a.Result = mail.WebhookDelivered
		return recordAttempt(ctx, q, webhookID, *a)
	})
}

// WebhookFailed records a failed POST: each row carried counts the
// attempt, those written before giveUpBefore are given up (state 2), and
// so are the webhook's other waiting rows written before it. It answers
// how many rows and events were given up.
func (d *DB) WebhookFailed(ctx context.Context, webhookID int64, batches []int64, a mail.WebhookAttempt, giveUpBefore time.Time) (rows, events int, err error) {
	err = d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		rows, events = 0, 0
		res, err := q.WebhookFailed(ctx, db.WebhookFailedParams{Ids: batches, GiveUpBefore: giveUpBefore})
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.State == 2 {
				rows++
				events += int(r.N)
			}
		}
		older, err := q.GiveUpWebhookBatches(ctx, db.GiveUpWebhookBatchesParams{WebhookID: webhookID, GiveUpBefore: giveUpBefore})
		if err != nil {
			return err
		}
		for _, r := range older {
			rows++
			events += int(r.N)
		}
		a.Result = mail.WebhookRetrying
		if rows > 0 {
			a.Result = mail.WebhookGivenUp
		}
		return recordAttempt(ctx, q, webhookID, a)
	})
	return rows, events, err
}

func recordAttempt(ctx context.Context, q *db.Queries, webhookID int64, a mail.WebhookAttempt) error {
	p := db.RecordWebhookAttemptParams{WebhookID: webhookID, LatencyMs: int32(min(a.LatencyMS, 1<<30)), Error: a.Error,
		Events: int32(a.Events), Result: int16(a.Result)}
	if a.StatusCode != nil {
		p.StatusCode = new(int32(*a.StatusCode))
	}
	return q.RecordWebhookAttempt(ctx, p)
}
