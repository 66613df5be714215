package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// The writers of webhook events (docs/webhooks.md). Each puts its events
// in the outbox in the transaction that made them: one row per write and
// webhook, never one per event. An account's webhooks are looked up once
// per hookCacheTTL, so a write for an account without webhooks costs a map
// lookup.

// hookCacheTTL is how long a process trusts what it read of an account's
// webhooks: a webhook saved through another process receives the events
// written from at most this long after its save (this process's own saves
// are seen at once).
const hookCacheTTL = 5 * time.Second

// hookCacheMax bounds the accounts remembered; past it the cache starts
// over.
const hookCacheMax = 100_000

// hookCache remembers, per account, the kinds its live webhooks want (0:
// none), and whether any account has a webhook at all.
type hookCache struct {
	mu       sync.Mutex
	m        map[int64]hookEntry
	any      bool
	anyUntil time.Time
}

type hookEntry struct {
	kinds mail.HookKinds
	until time.Time
}

// forget drops what is known of account userID's webhooks (after a
// change to them).
func (c *hookCache) forget(userID int64) {
	c.mu.Lock()
	delete(c.m, userID)
	c.anyUntil = time.Time{}
	c.mu.Unlock()
}

// hookKinds is what account userID's webhooks want, read through q (the
// caller's transaction) when not known for hookCacheTTL.
func (d *DB) hookKinds(ctx context.Context, q *db.Queries, userID int64) (mail.HookKinds, error) {
	c := d.hooks
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[userID]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.kinds, nil
	}
	k, err := q.WebhookKindsOfAccount(ctx, userID)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= hookCacheMax {
		c.m = map[int64]hookEntry{}
	}
	c.m[userID] = hookEntry{kinds: mail.HookKinds(k), until: now.Add(hookCacheTTL)}
	c.mu.Unlock()
	return mail.HookKinds(k), nil
}

// hooksExist reports whether any account has a live webhook (cached as
// hookKinds).
func (d *DB) hooksExist(ctx context.Context, q *db.Queries) (bool, error) {
	c := d.hooks
	now := time.Now()
	c.mu.Lock()
	any, fresh := c.any, now.Before(c.anyUntil)
	c.mu.Unlock()
	if fresh {
		return any, nil
	}
	any, err := q.WebhooksExist(ctx)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	c.any, c.anyUntil = any, now.Add(hookCacheTTL)
	c.mu.Unlock()
	return any, nil
}

// hookRowMax is the most events one outbox row of carried events holds.
const hookRowMax = 1000

// emitWebhookEvents puts events of account userID in the outbox of each of
// its live webhooks that wants any of them, in the caller's transaction q:
// one row per webhook for up to hookRowMax events. An event may name its
// send (SendID: the webhook shows its single send or automation utr) and
// delivery (DeliveryID: Email may then be left empty, it is read when
// posted). When no webhook of the account wants them it costs a cached
// lookup.
//
// Bounce and complaint intake (RecordFeedback, through emitFeedback) and
// any later writer of events call it in the transaction that records
// them.
func (d *DB) emitWebhookEvents(ctx context.Context, q *db.Queries, userID int64, events []mail.HookEvent) error {
	if len(events) == 0 {
		return nil
	}
	wanted, err := d.hookKinds(ctx, q, userID)
	if err != nil || wanted == 0 {
		return err
	}
	keep := make([]mail.HookEvent, 0, len(events))
	for _, e := range events {
		if wanted&e.Kind != 0 {
			keep = append(keep, e)
		}
	}
	for len(keep) > 0 {
		chunk := keep[:min(len(keep), hookRowMax)]
		keep = keep[len(chunk):]
		var kinds mail.HookKinds
		for _, e := range chunk {
			kinds |= e.Kind
		}
		js, err := json.Marshal(chunk)
		if err != nil {
			return err
		}
		if _, err := q.EmitWebhookBatch(ctx, db.EmitWebhookBatchParams{Events: js, N: int32(len(chunk)), UserID: userID,
			KindsWanted: int32(kinds)}); err != nil {
			return err
		}
	}
	return nil
}

// emitOutcomes puts a recorded batch's events (delivery.NewRecord's:
// delivered, deferred, bounce) in the outbox of the account's webhooks
// that want them, one row: the delivered mails named by id runs (final
// rows: the POST reads their addresses and sent times), the bounces and
// deferrals carried whole (their reasons, and a deferred row changes
// again). finals is whether the record moved rows to a final state: a
// batch recorded a second time (its first commit's answer lost) moves
// none, and only its deferred rows, recorded again, are emitted again.
func (d *DB) emitOutcomes(ctx context.Context, q *db.Queries, userID, sendID int64, events []mail.HookEvent, finals bool) error {
	wanted, err := d.hookKinds(ctx, q, userID)
	if err != nil || wanted&(mail.HookDelivered|mail.HookDeferred|mail.HookBounce) == 0 {
		return err
	}
	var delivered []int64
	var carried []mail.HookEvent
	var present mail.HookKinds
	for i := range events {
		e := &events[i]
		if wanted&e.Kind == 0 || (!finals && e.Kind != mail.HookDeferred) {
			continue
		}
		present |= e.Kind
		if e.Kind == mail.HookDelivered {
			if delivered == nil {
				delivered = make([]int64, 0, len(events)-i)
			}
			delivered = append(delivered, e.DeliveryID)
		} else {
			carried = append(carried, *e)
		}
	}
	if present == 0 {
		return nil
	}
	p := db.EmitWebhookBatchParams{N: int32(len(delivered) + len(carried)), UserID: userID, KindsWanted: int32(present)}
	if len(delivered) > 0 {
		slices.Sort(delivered) // in claim order already: by id
		p.SendID, p.Kind, p.Runs = &sendID, new(int16(mail.HookDelivered)), idRuns(slices.Compact(delivered))
	}
	if len(carried) > 0 {
		if p.Events, err = json.Marshal(carried); err != nil {
			return err
		}
	}
	_, err = q.EmitWebhookBatch(ctx, p)
	return err
}

// emitSkipped puts dropped events for deliveries of send sendID skipped at
// claim time (suppressed after the send started) in the outbox of its
// account's webhooks that want them: one row naming them by id runs. Rare,
// so not cached: the account is read from the send by the statement.
func emitSkipped(ctx context.Context, q *db.Queries, sendID int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	_, err := q.EmitSendWebhookBatch(ctx, db.EmitSendWebhookBatchParams{SendID: sendID, Kind: int16(mail.HookDropped),
		Runs: idRuns(slices.Compact(ids)), N: int32(len(ids))})
	return err
}

// emitDroppedAudience puts a dropped event for each address of a send's
// audience its expansion left out because suppressed, when a webhook of the
// account wants them: read from the audience a second time
// (SuppressedAudience), or from the suppressions when the account has
// fewer of them than the send has recipients (SuppressedMembers, the same
// rows): the smaller side is walked, index probes into the other.
// recipients is how many the expansion kept.
func (d *DB) emitDroppedAudience(ctx context.Context, q *db.Queries, sendID int64, p db.ExpandSendParams, recipients int64) error {
	wanted, err := d.hookKinds(ctx, q, p.UserID)
	if err != nil || wanted&mail.HookDropped == 0 {
		return err
	}
	suppressions, err := q.SuppressionsUpTo(ctx, db.SuppressionsUpToParams{UserID: p.UserID, GroupID: p.GroupID, N: recipients + 1})
	if err != nil {
		return err
	}
	var dropped []db.SuppressedAudienceRow
	if suppressions <= recipients {
		rows, err := q.SuppressedMembers(ctx, db.SuppressedMembersParams{UserID: p.UserID, TypeIds: p.TypeIds, SegmentIds: p.SegmentIds,
			GroupID: p.GroupID, ExcludeTypeIds: p.ExcludeTypeIds, ExcludeSegmentIds: p.ExcludeSegmentIds})
		if err != nil {
			return err
		}
		dropped = make([]db.SuppressedAudienceRow, len(rows))
		for i, r := range rows {
			dropped[i] = db.SuppressedAudienceRow(r)
		}
	} else if dropped, err = q.SuppressedAudience(ctx, db.SuppressedAudienceParams{UserID: p.UserID, TypeIds: p.TypeIds, SegmentIds: p.SegmentIds,
		GroupID: p.GroupID, ExcludeTypeIds: p.ExcludeTypeIds, ExcludeSegmentIds: p.ExcludeSegmentIds}); err != nil {
		return err
	}
	if len(dropped) == 0 {
		return nil
	}
	at := time.Now().Unix()
	events := make([]mail.HookEvent, len(dropped))
	for i, r := range dropped {
		events[i] = mail.HookEvent{Kind: mail.HookDropped, At: at, Email: r.Email, SendID: sendID, Reason: r.Reason}
	}
	return d.emitWebhookEvents(ctx, q, p.UserID, events)
}

// emitFeedback puts the event of a report that counted (RecordFeedback:
// a hard bounce or a complaint, once per delivery) in the outbox of the
// account's webhooks that want it: a bounce of type "bounce" with the
// report's diagnostic, or a complaint with its feedback type.
func (d *DB) emitFeedback(ctx context.Context, q *db.Queries, userID int64, email string, f mail.Feedback, reason string) error {
	e := mail.HookEvent{At: time.Now().Unix(), Email: email, SendID: f.SendID, DeliveryID: f.DeliveryID, Reason: reason}
	switch f.Kind {
	case mail.HardBounce:
		e.Kind, e.Type = mail.HookBounce, "bounce"
	case mail.Complaint:
		e.Kind = mail.HookComplaint
	default:
		return nil
	}
	return d.emitWebhookEvents(ctx, q, userID, []mail.HookEvent{e})
}

// emitUnsubscribes puts an unsubscribe event for each address a recipient
// took off the account's mail (from a mail's link or preferences page:
// sendID its send, 0 when unknown; groupID the group it left, nil for
// every mail).
func (d *DB) emitUnsubscribes(ctx context.Context, q *db.Queries, userID int64, groupID *int64, sendID int64, addresses []string) error {
	at := time.Now().Unix()
	events := make([]mail.HookEvent, len(addresses))
	for i, a := range addresses {
		events[i] = mail.HookEvent{Kind: mail.HookUnsubscribe, At: at, Email: a, SendID: sendID}
		if groupID != nil {
			events[i].GroupID = *groupID
		}
	}
	return d.emitWebhookEvents(ctx, q, userID, events)
}

// emitActivity puts the open and click events of a flush of the recorder
// in the outbox of their accounts' webhooks: one row per account and
// webhook. Nothing is read when no account has a webhook.
func (d *DB) emitActivity(ctx context.Context, q *db.Queries, opens []db.RecordOpensRow, clicks []clickRow) error {
	if len(opens) == 0 && len(clicks) == 0 {
		return nil
	}
	if any, err := d.hooksExist(ctx, q); err != nil || !any {
		return err
	}
	var sends []int64
	seen := map[int64]bool{}
	for _, r := range opens {
		if !seen[r.SendID] {
			seen[r.SendID] = true
			sends = append(sends, r.SendID)
		}
	}
	for _, r := range clicks {
		if !seen[r.SendID] {
			seen[r.SendID] = true
			sends = append(sends, r.SendID)
		}
	}
	accounts, err := q.SendAccounts(ctx, sends)
	if err != nil {
		return err
	}
	accountOf := make(map[int64]int64, len(accounts))
	for _, a := range accounts {
		accountOf[a.ID] = a.UserID
	}
	at := time.Now().Unix()
	byAccount := map[int64][]mail.HookEvent{}
	var order []int64
	add := func(send int64, e mail.HookEvent) {
		u, ok := accountOf[send]
		if !ok {
			return
		}
		if _, ok := byAccount[u]; !ok {
			order = append(order, u)
		}
		byAccount[u] = append(byAccount[u], e)
	}
	for _, r := range opens {
		for range r.Opens { // one event per open, as counted
			add(r.SendID, mail.HookEvent{Kind: mail.HookOpen, At: at, SendID: r.SendID, DeliveryID: r.DeliveryID})
		}
	}
	for _, r := range clicks {
		for range r.Clicks {
			add(r.SendID, mail.HookEvent{Kind: mail.HookClick, At: at, SendID: r.SendID, DeliveryID: r.DeliveryID, URL: r.Url})
		}
	}
	for _, u := range order {
		if err := d.emitWebhookEvents(ctx, q, u, byAccount[u]); err != nil {
			return err
		}
	}
	return nil
}
