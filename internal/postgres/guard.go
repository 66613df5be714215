package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// guardState is what the reputation guards judge of a send, as the
// statements that count its outcomes answer it.
type guardState struct {
	paused, run bool // paused already; an automation's run (never paused)
	guards      delivery.Guards
	counts      delivery.SendCounts
}

// guard pauses running single send sendID, in the transaction of q, when
// its counts breach its account's guards (delivery.Guards.Breach): it
// records single_send.paused (the notification mail) and its send.paused
// webhook event. It answers whether the send is paused.
func (d *DB) guard(ctx context.Context, q *db.Queries, sendID int64, st guardState) (bool, error) {
	if st.paused || st.run {
		return st.paused, nil
	}
	why := st.guards.Breach(st.counts)
	if why == "" {
		return false, nil
	}
	r, err := q.PauseSend(ctx, db.PauseSendParams{ID: sendID, Reason: why})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // not running
	}
	if err != nil {
		return false, err
	}
	d.log.WarnContext(ctx, "a reputation guard paused a send", "send_id", sendID, "reason", why)
	payload, err := json.Marshal(map[string]any{"reason": why, "triggered": r.Triggered, "attempted": r.Attempted,
		"bounces": r.Bounces, "delivered": r.Delivered, "complaints": r.Complaints})
	if err != nil {
		return false, err
	}
	if err := q.RecordSendEvent(ctx, db.RecordSendEventParams{UserID: r.UserID, Kind: mail.EventSingleSendPaused, SendID: &sendID,
		Payload: payload}); err != nil {
		return false, err
	}
	wanted, err := d.hookKinds(ctx, q, r.UserID)
	if err != nil || wanted&mail.HookSendPaused == 0 {
		return true, err
	}
	events, err := json.Marshal([]mail.HookEvent{{Kind: mail.HookSendPaused, At: time.Now().Unix(), SendID: sendID, Reason: why}})
	if err != nil {
		return false, err
	}
	_, err = q.EmitWebhookBatch(ctx, db.EmitWebhookBatchParams{N: 1, UserID: r.UserID, KindsWanted: int32(mail.HookSendPaused), Events: events})
	return true, err
}

// stateOf is what a statement counting a send's outcomes answered
// (CountSendBounce; CountSendComplaint and BumpSendCounters answer the
// same columns).
func stateOf(c db.CountSendBounceRow) guardState {
	return guardState{paused: c.Paused, run: c.Run,
		guards: delivery.Guards{BounceRate: c.PauseBounceRate, BounceAfter: int64(c.PauseBounceAfter),
			ComplaintRate: c.PauseComplaintRate, ComplaintAfter: int64(c.PauseComplaintAfter)},
		counts: delivery.SendCounts{Attempted: c.Attempted, Bounces: c.Bounces, Delivered: c.Delivered, Complaints: c.Complaints}}
}
