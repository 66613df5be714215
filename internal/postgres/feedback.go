package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// RecordFeedback records what an inbound report says about a delivery, in
// one transaction (docs/bounces.md):
//
//   - a hard bounce, once per delivery (not again for a delivery bounced at
//     RCPT TO): the delivery marked bounced, the address on the account's
//     bounces list, the send's bounces (and its automation's) and
//     statistics, an address.bounced event;
//   - a soft bounce: the send's soft bounces in the statistics, for every
//     report;
//   - a complaint, once per delivery: the address on the account's global
//     unsubscribe list (reason complaint), the complaints statistic, an
//     address.complained event.
//
// Found is false when the delivery does not exist (any more), never went
// out, or is not to one of f.Match.
func (d *DB) RecordFeedback(ctx context.Context, f mail.Feedback) (mail.FeedbackResult, error) {
	var res mail.FeedbackResult
	match := mail.WithULabels(f.Match)
	if match == nil {
		match = []string{}
	}
	reason := cut(f.Reason, 500)
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		res = mail.FeedbackResult{}
		// A bounce's statements take their rows in the order a batch's
		// recording does (the delivery, the statistics, the suppression,
		// the send); a complaint's take the suppression before the
		// statistics, as an unsubscribe does. Each order is one another
		// writer of those rows keeps, so they wait for each other rather
		// than deadlock (a deadlock would be retried by InTx).
		var userID int64
		var email string
		var err error
		switch f.Kind {
		case mail.HardBounce:
			var r db.BounceDeliveryRow
			r, err = q.BounceDelivery(ctx, db.BounceDeliveryParams{SendID: f.SendID, ID: f.DeliveryID, Reason: reason, Match: match})
			userID, email = r.UserID, r.Email
		case mail.Complaint:
			var r db.ComplainDeliveryRow
			r, err = q.ComplainDelivery(ctx, db.ComplainDeliveryParams{SendID: f.SendID, ID: f.DeliveryID, Match: match})
			userID, email = r.UserID, r.Email
		default:
			err = pgx.ErrNoRows // a soft bounce marks nothing
		}
		if errors.Is(err, pgx.ErrNoRows) {
			// Counted already, or no such delivery: which one?
			r, err := q.FeedbackDelivery(ctx, db.FeedbackDeliveryParams{SendID: f.SendID, ID: f.DeliveryID, Match: match})
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			res.Found, res.UserID, res.Email = true, r.UserID, mail.Email(r.Email)
			if f.Kind != mail.SoftBounce {
				return nil
			}
			res.Counted = true
			return bumpSend(ctx, q, f.SendID, mail.Counts{SoftBounces: 1})
		}
		if err != nil {
			return err
		}
		res = mail.FeedbackResult{Found: true, Counted: true, UserID: userID, Email: mail.Email(email)}
		if err := d.emitFeedback(ctx, q, userID, email, f, reason); err != nil {
			return err
		}
		if f.Kind == mail.HardBounce {
			// The provider's statistics before the send's, as a batch's
			// record takes them.
			if err := bumpProvider(ctx, q, f.SendID, userID, email, 1, 0); err != nil {
				return err
			}
			if err := bumpSend(ctx, q, f.SendID, mail.Counts{Bounces: 1}); err != nil {
				return err
			}
			if err := q.AddFeedbackBounce(ctx, db.AddFeedbackBounceParams{UserID: userID, Email: email, SendID: f.SendID,
				Reason: reason, Status: f.Status, DeliveryID: f.DeliveryID, Via: f.Via}); err != nil {
				return err
			}
			c, err := q.CountSendBounce(ctx, f.SendID)
			if err != nil {
				return err
			}
			_, err = d.guard(ctx, q, f.SendID, stateOf(c))
			return err
		}
		added, err := q.AddComplaint(ctx, db.AddComplaintParams{UserID: userID, Email: email, SendID: f.SendID,
			FeedbackType: cut(f.Reason, 100), DeliveryID: f.DeliveryID})
		if err != nil {
			return err
		}
		// As an unsubscribe does: the suppression, then the statistics
		// (the provider's, then the send's), then the list's count.
		if err := bumpProvider(ctx, q, f.SendID, userID, email, 0, 1); err != nil {
			return err
		}
		if err := bumpSend(ctx, q, f.SendID, mail.Counts{Complaints: 1}); err != nil {
			return err
		}
		if err := addCounts(ctx, q, userID, countUnsubscribes, map[int64]int64{0: added}); err != nil {
			return err
		}
		c, err := q.CountSendComplaint(ctx, f.SendID)
		if err != nil {
			return err
		}
		_, err = d.guard(ctx, q, f.SendID, stateOf(db.CountSendBounceRow(c)))
		return err
	})
	return res, err
}

// KeepInbound stores an inbound message for inspection (its first
// MaxInboundKept bytes) and answers its id.
func (d *DB) KeepInbound(ctx context.Context, m mail.InboundMessage) (int64, error) {
	raw := m.Raw
	if len(raw) > MaxInboundKept {
		raw = raw[:MaxInboundKept]
	}
	if raw == nil {
		raw = []byte{}
	}
	p := db.KeepInboundParams{MailFrom: cut(m.MailFrom, 320), Rcpt: cut(m.Rcpt, 320), Reason: cut(m.Reason, 500),
		Size: int32(min(m.Size, 1<<31-1)), Raw: raw}
	if m.SendID > 0 {
		p.SendID = &m.SendID
	}
	if m.DeliveryID > 0 {
		p.DeliveryID = &m.DeliveryID
	}
	return d.q.KeepInbound(ctx, p)
}

// MaxInboundKept is how much of an inbound message is kept for
// inspection.
const MaxInboundKept = 64 << 10

// PruneInbound deletes the inbound messages kept longer than keep and
// answers how many.
func (d *DB) PruneInbound(ctx context.Context, keep time.Duration) (int64, error) {
	return d.q.PruneInbound(ctx, keep.Seconds())
}

// cut is s as stored in a text column: valid UTF-8 without NUL, at most n
// bytes, cut at a character boundary.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// bumpProvider counts a reported hard bounce or complaint of a mail of
// send sendID to email in its provider's statistics.
func bumpProvider(ctx context.Context, q *db.Queries, sendID, userID int64, email string, bounced, complained int64) error {
	return q.BumpProviderStats(ctx, db.BumpProviderStatsParams{SendID: sendID, UserID: userID,
		Providers: []int16{int16(mail.ProviderOf(mail.Email(email)))}, Delivered: []int64{0}, Deferred: []int64{0},
		Bounced: []int64{bounced}, Blocked: []int64{0}, Complained: []int64{complained}})
}
