package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// (Batches) and their events that the webhook wants, in order. Events may
// be empty when the rows hold nothing it wants any more (its events were
// changed, the deliveries dropped by retention): posting nothing, the rows
// are done.
type WebhookPost struct {
	Target  WebhookTarget
	Batches []int64
	Events  []mail.WebhookEvent
	Oldest  time.Time // when the oldest row was written
}

// NextWebhookPost reads the waiting events of webhook id, oldest first,
// rows until they hold maxEvents events (at least one row), and builds
// them: the deliveries they name are read, the sends' utrs looked up. No
// rows: Batches is empty. A deleted webhook is ENOTFOUND.
func (d *DB) NextWebhookPost(ctx context.Context, id int64, maxEvents int) (WebhookPost, error) {
	var p WebhookPost
	w, err := d.q.WebhookForDelivery(ctx, id)
	if err != nil {
		return p, err
	}
	p.Target = WebhookTarget{ID: w.ID, UserID: w.UserID, URL: w.Url, Secret: w.Secret, Kinds: mail.HookKinds(w.Events)}
	rows, err := d.q.PendingWebhookBatches(ctx, db.PendingWebhookBatchesParams{WebhookID: id, MaxEvents: int64(maxEvents)})
	if err != nil || len(rows) == 0 {
		return p, err
	}
	p.Oldest = rows[0].CreatedAt
	b := hookBuilder{utrs: map[int64]db.HookSendUTRsRow{}}
	for _, r := range rows {
		p.Batches = append(p.Batches, r.ID)
		if r.SendID != nil && len(r.DeliveryIds) > 0 {
			if err := b.deliveries(ctx, d.q, p.Target.Kinds, *r.SendID, r.DeliveryIds, r.Kinds, r.CreatedAt); err != nil {
				return p, err
			}
		}
		if r.Events != "" {
			var evs []mail.HookEvent
			if err := json.Unmarshal([]byte(r.Events), &evs); err != nil {
				return p, fmt.Errorf("postgres: webhook batch %d: %w", r.ID, err)
			}
			for _, e := range evs {
				if p.Target.Kinds&e.Kind != 0 {
					b.add(e)
				}
			}
		}
	}
	if err := b.resolve(ctx, d.q); err != nil {
		return p, err
	}
	p.Events = b.out
	return p, nil
}

// hookBuilder turns outbox rows into the events of a POST.
type hookBuilder struct {
	out      []mail.WebhookEvent
	sendOf   []int64 // out[i]'s send, for its utr
	noEmail  []int   // indexes of out whose address is still to be read
	needs    []int64 // their (send, delivery)s, flattened
	utrs     map[int64]db.HookSendUTRsRow
	sendList []int64
}

func (b *hookBuilder) add(e mail.HookEvent) {
	ev := mail.WebhookEvent{Email: e.Email, Timestamp: e.At, Event: e.Kind.Name(), DeliveryID: e.DeliveryID, Type: e.Type,
		Reason: e.Reason, URL: e.URL, GroupID: e.GroupID}
	if e.Email == "" && e.DeliveryID > 0 && e.SendID > 0 {
		b.noEmail = append(b.noEmail, len(b.out))
		b.needs = append(b.needs, e.SendID, e.DeliveryID)
	}
	b.out = append(b.out, ev)
	b.sendOf = append(b.sendOf, e.SendID)
}

// deliveries adds the events of a row naming deliveries of send sendID:
// each id with its kind, those of the kinds wanted, in id order.
func (b *hookBuilder) deliveries(ctx context.Context, q *db.Queries, wanted mail.HookKinds, sendID int64, ids []int64, kinds []int16, at time.Time) error {
	type named struct {
		id   int64
		kind mail.HookKinds
	}
	want := make([]named, 0, len(ids))
	for i, id := range ids {
		if i < len(kinds) && wanted&mail.HookKinds(kinds[i]) != 0 {
			want = append(want, named{id, mail.HookKinds(kinds[i])})
		}
	}
	if len(want) == 0 {
		return nil
	}
	slices.SortFunc(want, func(x, y named) int { return cmp.Compare(x.id, y.id) })
	rows, err := q.HookDeliveries(ctx, db.HookDeliveriesParams{SendID: sendID, Lo: want[0].id, Hi: want[len(want)-1].id})
	if err != nil {
		return err
	}
	b.out = slices.Grow(b.out, len(want))
	b.sendOf = slices.Grow(b.sendOf, len(want))
	j := 0
	for _, w := range want { // both in id order: a merge
		for j < len(rows) && rows[j].ID < w.id {
			j++
		}
		if j == len(rows) || rows[j].ID != w.id {
			continue // gone (retention dropped its send's partition)
		}
		r := &rows[j]
		ev := mail.WebhookEvent{Email: r.Email, Timestamp: at.Unix(), Event: w.kind.Name(), DeliveryID: w.id}
		switch w.kind {
		case mail.HookDelivered:
			if r.SentAt != nil {
				ev.Timestamp = r.SentAt.Unix()
			}
		case mail.HookBounce:
			ev.Reason, ev.Type = r.Error, "bounce"
			if r.Status == int16(mail.DeliveryFailed) {
				ev.Type = "blocked"
			}
		case mail.HookDropped:
			ev.Reason = r.Error
		}
		b.out = append(b.out, ev)
		b.sendOf = append(b.sendOf, sendID)
	}
	return nil
}

// resolve reads the addresses still missing and every send's utr.
func (b *hookBuilder) resolve(ctx context.Context, q *db.Queries) error {
	if len(b.needs) > 0 {
		p := db.HookDeliveryEmailsParams{}
		for i := 0; i < len(b.needs); i += 2 {
			p.SendIds, p.Ids = append(p.SendIds, b.needs[i]), append(p.Ids, b.needs[i+1])
		}
		rows, err := q.HookDeliveryEmails(ctx, p)
		if err != nil {
			return err
		}
		email := make(map[int64]string, len(rows))
		for _, r := range rows {
			email[r.ID] = r.Email
		}
		keep := b.out[:0]
		keepSends := b.sendOf[:0]
		missing := map[int]bool{}
		for _, i := range b.noEmail {
			if e, ok := email[b.out[i].DeliveryID]; ok {
				b.out[i].Email = e
			} else {
				missing[i] = true // no such delivery: nothing to say of it
			}
		}
		for i, ev := range b.out {
			if !missing[i] {
				keep, keepSends = append(keep, ev), append(keepSends, b.sendOf[i])
			}
		}
		b.out, b.sendOf = keep, keepSends
	}
	seen := map[int64]bool{}
	for _, s := range b.sendOf {
		if s > 0 && !seen[s] {
			seen[s] = true
			b.sendList = append(b.sendList, s)
		}
	}
	if len(b.sendList) > 0 {
		rows, err := q.HookSendUTRs(ctx, b.sendList)
		if err != nil {
			return err
		}
		for _, r := range rows {
			b.utrs[r.ID] = r
		}
	}
	for i := range b.out {
		if u, ok := b.utrs[b.sendOf[i]]; ok {
			if u.Automation {
				b.out[i].AutomationUTR = u.Utr
			} else {
				b.out[i].SingleSendUTR = u.Utr
			}
		}
	}
	return nil
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
// attempt, those written before giveUpBefore are given up (state 2). It
// answers how many rows and events were given up.
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
