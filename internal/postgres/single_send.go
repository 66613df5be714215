package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Single sends are written here; the delivery engine (delivery.go) takes
// them from ready to running to completed. Every change of a send locks
// its row, as the dispatcher does, so a send is updated or deleted either
// before it starts or not at all (docs/single-sends.md).

// sendListChunk is how many sends a list reads per query: a send carries
// its templates (up to 1 MB each), so fewer than listChunk.
const sendListChunk = 20

// SendReferences looks up the records a send names among the account's
// live ones, in one query.
func (d *DB) SendReferences(ctx context.Context, userID int64, refs mail.SendRefs) (mail.SendRefsFound, error) {
	r, err := d.q.SendReferences(ctx, db.SendReferencesParams{SenderID: refs.SenderID, UserID: userID, GroupID: refs.GroupID,
		TypeIds: nonNilIDs(refs.TypeIDs), SegmentIds: nonNilIDs(refs.SegmentIDs)})
	if err != nil {
		return mail.SendRefsFound{}, err
	}
	return mail.SendRefsFound{Sender: r.SenderVerified >= 0, SenderVerified: r.SenderVerified == 1, Group: r.GroupExists,
		Types: r.TypeIds, Segments: r.SegmentIds}, nil
}

// CreateSingleSend stores a new send, ready at version 1, and answers the
// dispatch to enqueue (due now, or at its schedule).
func (d *DB) CreateSingleSend(ctx context.Context, userID int64, in mail.SingleSendInput) (mail.Queued, error) {
	recipients, excluded, tokens, err := sendLists(in, nil)
	if err != nil {
		return mail.Queued{}, err
	}
	utr := mail.NewUTR()
	r, err := d.q.CreateSingleSend(ctx, db.CreateSingleSendParams{UserID: userID, Utr: utr, TemplateID: in.TemplateID,
		TemplateJson: in.TemplateJSON, TemplateHtml: in.TemplateHTML, SenderID: in.SenderID, UnsubscribeGroupID: in.GroupID,
		SingleSendName: in.Name, Subject: in.Subject, Preheader: in.Preheader, RecipientID: recipients,
		ExcludeSpecificRecipientID: excluded, ScheduleType: scheduleType(in), ScheduleAt: in.Schedule, UniqueOpenToken: tokens, Relay: in.Relay})
	if err != nil {
		return mail.Queued{}, err
	}
	return mail.Queued{ID: r.ID, UTR: utr, Version: r.Version, DueAt: r.DueAt}, nil
}

// UpdateSingleSend replaces the fields of a live draft or ready send of
// the account; it becomes ready at the next version (the open tokens of
// the lists it keeps stay). ENOTFOUND when there is no such send;
// ECONFLICT when it is running or completed.
func (d *DB) UpdateSingleSend(ctx context.Context, userID int64, utr string, in mail.SingleSendInput) (mail.Queued, error) {
	out := mail.Queued{UTR: utr}
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		s, err := q.LockSingleSend(ctx, db.LockSingleSendParams{Utr: utr, UserID: userID})
		if err != nil {
			return err
		}
		if err := changeable(s.Status, "updated"); err != nil {
			return err
		}
		var old map[string]string
		if err := json.Unmarshal([]byte(s.UniqueOpenToken), &old); err != nil {
			return fmt.Errorf("postgres: send %d unique_open_token: %w", s.ID, err)
		}
		recipients, excluded, tokens, err := sendLists(in, old)
		if err != nil {
			return err
		}
		r, err := q.UpdateSingleSend(ctx, db.UpdateSingleSendParams{TemplateID: in.TemplateID, TemplateJson: in.TemplateJSON,
			TemplateHtml: in.TemplateHTML, SenderID: in.SenderID, UnsubscribeGroupID: in.GroupID, SingleSendName: in.Name,
			Subject: in.Subject, Preheader: in.Preheader, RecipientID: recipients, ExcludeSpecificRecipientID: excluded,
			ScheduleType: scheduleType(in), ScheduleAt: in.Schedule, UniqueOpenToken: tokens, Relay: in.Relay, ID: s.ID})
		if err != nil {
			return err
		}
		out.ID, out.Version, out.DueAt = s.ID, r.Version, r.DueAt
		return nil
	})
	return out, err
}

// changeable is nil for a draft or ready send, else the conflict of
// changing (what: "updated", "deleted") a running or completed one.
func changeable(status int16, what string) error {
	if status == mail.SendRunning || status == mail.SendCompleted {
		return mail.Errorf(mail.ECONFLICT, "This single send is %s and cannot be %s.", startedWord(status), what)
	}
	return nil
}

// startedWord names a running or completed status.
func startedWord(status int16) string {
	if status == mail.SendRunning {
		return "running"
	}
	return "completed"
}

// DuplicateSingleSend copies a live send of the account as a draft (status
// 0) with a new utr, fresh open tokens and every counter at zero; it
// answers the copy's utr.
func (d *DB) DuplicateSingleSend(ctx context.Context, userID int64, utr string) (string, error) {
	copyUTR := mail.NewUTR()
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		src, err := q.LockSingleSendForCopy(ctx, db.LockSingleSendForCopyParams{Utr: utr, UserID: userID})
		if err != nil {
			return err
		}
		lists, err := decodeLists(src.RecipientID)
		if err != nil {
			return fmt.Errorf("postgres: send %d recipient_id: %w", src.ID, err)
		}
		tokens, err := json.Marshal(mail.OpenTokens(lists, nil))
		if err != nil {
			return err
		}
		_, err = q.DuplicateSingleSend(ctx, db.DuplicateSingleSendParams{Utr: copyUTR, UniqueOpenToken: tokens, ID: src.ID})
		return err
	})
	return copyUTR, err
}

// DeleteSingleSend soft-deletes a live send of the account: ENOTFOUND
// when there is none, ECONFLICT when it is running or completed.
func (d *DB) DeleteSingleSend(ctx context.Context, userID int64, utr string) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		s, err := q.LockSingleSend(ctx, db.LockSingleSendParams{Utr: utr, UserID: userID})
		if err != nil {
			return translate(err)
		}
		if err := changeable(s.Status, "deleted"); err != nil {
			return err
		}
		return q.DeleteSingleSends(ctx, []int64{s.ID})
	})
}

// DeleteSingleSends soft-deletes sends of the account, all or none:
// ENOTFOUND when an id is not a live send of the account, ECONFLICT when
// one is running or completed.
func (d *DB) DeleteSingleSends(ctx context.Context, userID int64, ids []int64) error {
	ids = sortedUnique(ids)
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		if err := probeByID(ctx, tx, len(ids)); err != nil {
			return err
		}
		rows, err := q.LockSingleSendsByID(ctx, db.LockSingleSendsByIDParams{Ids: ids, UserID: userID})
		if err != nil {
			return err
		}
		if len(rows) != len(ids) {
			return mail.NotFound()
		}
		for _, r := range rows {
			if changeable(r.Status, "deleted") != nil {
				return mail.Errorf(mail.ECONFLICT, "Single send %d is %s and cannot be deleted; nothing was deleted.",
					r.ID, startedWord(r.Status))
			}
		}
		return q.DeleteSingleSends(ctx, ids)
	})
}

// singleSendColumns are a send as the API shows it, with its sender's
// addresses and the names of its places (the sender row is read even when
// it was deleted since: the engine sends from it all the same).
const singleSendColumns = `
SELECT s.id, s.user_id, s.utr::text, s.template_id, s.template_json, s.template_html, s.sender_id, s.unsubscribe_group_id,
    s.single_send_name, s.subject, s.preheader, s.recipient_id::text, s.exclude_specific_recipient_id::text,
    s.schedule_type, COALESCE(to_char(s.schedule_date, 'YYYY-MM-DD'), '0000-00-00'),
    COALESCE(to_char(s.schedule_time, 'HH24:MI:SS'), '00:00:00'), s.status, s.version,
    s.triggered, s.delivered, s.unique_opens, s.total_opens, s.bounces, s.unsubscribes, s.unique_open_token::text,
    s.sent_at, s.created_at, s.updated_at,
    se.id IS NOT NULL, COALESCE(se.from_name, ''), COALESCE(se.from_email, ''), COALESCE(se.reply_to_email, ''),
    concat_ws(' ', NULLIF(se.company_address, ''), NULLIF(se.company_address2, '')),
    COALESCE(ci.name, ''), COALESCE(st.name, ''), COALESCE(co.name, ''), s.paused_at, COALESCE(s.paused_reason, ''), COALESCE(s.relay, ''), s.cancelled_at`

const singleSendJoins = `
LEFT JOIN senders se ON se.id = s.sender_id AND se.user_id = s.user_id
LEFT JOIN cities ci ON ci.id = se.city_id
LEFT JOIN states st ON st.id = se.state_id
LEFT JOIN countries co ON co.id = se.country_id`

// listSingleSendsSQL reads the account's live sends (not automation runs,
// which are rows of single_sends too): the page's ids from
// single_sends_user alone, then those rows.
var listSingleSendsSQL = singleSendColumns + `
FROM (SELECT id FROM single_sends WHERE user_id = $1 AND deleted_at IS NULL AND automation_id IS NULL AND ` + keyset("id", 1) + `) page
JOIN single_sends s ON s.id = page.id` + singleSendJoins + `
ORDER BY s.id`

var singleSendByUTRSQL = singleSendColumns + `
FROM single_sends s` + singleSendJoins + `
WHERE s.utr = $2::text::uuid AND s.user_id = $1 AND s.deleted_at IS NULL AND s.automation_id IS NULL`

// scanSingleSend reads a row of singleSendColumns.
func scanSingleSend(row pgx.Row, s *mail.SingleSend) error {
	var recipients, excluded, tokens string
	var hasSender bool
	var snd mail.Sender
	var from, replyTo string
	if err := row.Scan(&s.ID, &s.UserID, &s.UTR, &s.TemplateID, &s.TemplateJSON, &s.TemplateHTML, &s.SenderID, &s.GroupID,
		&s.Name, &s.Subject, &s.Preheader, &recipients, &excluded,
		&s.ScheduleType, &s.ScheduleDate, &s.ScheduleTime, &s.Status, &s.Version,
		&s.Triggered, &s.Delivered, &s.UniqueOpens, &s.TotalOpens, &s.Bounces, &s.Unsubscribes, &tokens,
		&s.SentAt, &s.CreatedAt, &s.UpdatedAt,
		&hasSender, &snd.FromName, &from, &replyTo, &snd.Address, &snd.City, &snd.State, &snd.Country,
		&s.PausedAt, &s.PausedReason, &s.Relay, &s.CancelledAt); err != nil {
		return err
	}
	var err error
	if s.Recipients, err = decodeLists(recipients); err != nil {
		return fmt.Errorf("postgres: send %d recipient_id: %w", s.ID, err)
	}
	if s.Excluded, err = decodeLists(excluded); err != nil {
		return fmt.Errorf("postgres: send %d exclude_specific_recipient_id: %w", s.ID, err)
	}
	if err := json.Unmarshal([]byte(tokens), &s.OpenTokens); err != nil {
		return fmt.Errorf("postgres: send %d unique_open_token: %w", s.ID, err)
	}
	if hasSender {
		snd.FromEmail, snd.ReplyTo = mail.Email(from), mail.Email(replyTo)
		s.Sender = &snd
	}
	return nil
}

// SingleSend returns a live send of the account by utr, or ENOTFOUND.
func (d *DB) SingleSend(ctx context.Context, userID int64, utr string) (mail.SingleSend, error) {
	var s mail.SingleSend
	err := scanSingleSend(d.conn.QueryRow(ctx, singleSendByUTRSQL, userID, utr), &s)
	return s, err
}

// ListSingleSends calls fn with each live send of the account, in id
// order, and returns how many there are when paged.
func (d *DB) ListSingleSends(ctx context.Context, userID int64, page *mail.Page, fn func(*mail.SingleSend) error) (total int64, err error) {
	if page != nil {
		if total, err = d.q.CountSingleSends(ctx, userID); err != nil {
			return 0, err
		}
	}
	err = streamChunks(ctx, d, listSingleSendsSQL, []any{userID}, page, sendListChunk,
		func(rows pgx.Rows, s *mail.SingleSend) error { return scanSingleSend(rows, s) },
		func(s *mail.SingleSend) int64 { return s.ID }, fn)
	return total, err
}

// listJSON is a recipient list as a send stores it: {"id":"3","table":"contacts_"}.
type listJSON struct {
	ID    string `json:"id"`
	Table string `json:"table"`
}

// encodeLists is lists as stored (a JSON array, [] when empty).
func encodeLists(lists []mail.ListRef) ([]byte, error) {
	out := make([]listJSON, len(lists))
	for i, l := range lists {
		out[i] = listJSON{ID: strconv.FormatInt(l.ID, 10), Table: l.Table}
	}
	return json.Marshal(out)
}

// decodeLists reads lists as stored.
func decodeLists(raw string) ([]mail.ListRef, error) {
	var in []listJSON
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return nil, err
	}
	out := make([]mail.ListRef, len(in))
	for i, l := range in {
		ref, ok := mail.ParseListRef(l.Table + l.ID)
		if !ok || ref.Table != l.Table {
			return nil, errors.New("not a list: " + l.Table + l.ID)
		}
		out[i] = ref
	}
	return out, nil
}

// sendLists are a send's stored lists and its open tokens (old's kept for
// the lists it keeps).
func sendLists(in mail.SingleSendInput, old map[string]string) (recipients, excluded, tokens []byte, err error) {
	if recipients, err = encodeLists(in.Recipients); err != nil {
		return nil, nil, nil, err
	}
	if excluded, err = encodeLists(in.Excluded); err != nil {
		return nil, nil, nil, err
	}
	tokens, err = json.Marshal(mail.OpenTokens(in.Recipients, old))
	return recipients, excluded, tokens, err
}

func scheduleType(in mail.SingleSendInput) int16 {
	if in.Schedule != nil {
		return 1
	}
	return 0
}

// nonNilIDs is ids, or an empty slice for nil (an empty array, not NULL).
func nonNilIDs(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

// SendSummaries are a page of the account's live sends, newest first,
// without their templates, and how many there are.
func (d *DB) SendSummaries(ctx context.Context, userID int64, page mail.Page) ([]mail.SendSummary, int64, error) {
	total, err := d.q.CountSingleSends(ctx, userID)
	if err != nil {
		return nil, 0, err
	}
	rows, err := d.q.SendSummaries(ctx, db.SendSummariesParams{UserID: userID, N: page.Size, Skip: page.Offset()})
	if err != nil {
		return nil, 0, err
	}
	out := make([]mail.SendSummary, len(rows))
	for i, r := range rows {
		out[i] = mail.SendSummary{ID: r.ID, UTR: r.Utr, Name: r.SingleSendName, Subject: r.Subject, Status: r.Status,
			ScheduleType: r.ScheduleType, DueAt: r.DueAt, StartedAt: r.StartedAt, SentAt: r.SentAt, CreatedAt: r.CreatedAt,
			Triggered: r.Triggered, Delivered: r.Delivered, Bounces: r.Bounces, Remaining: r.Remaining, UniqueOpens: r.UniqueOpens, Paused: r.Paused,
			CancelledAt: r.CancelledAt, Cancelled: r.Cancelled}
	}
	return out, total, nil
}

// SendProgress reads the account's live send utr's counters as it runs,
// or ENOTFOUND.
func (d *DB) SendProgress(ctx context.Context, userID int64, utr string) (mail.SendProgress, error) {
	r, err := d.q.SendProgress(ctx, db.SendProgressParams{UserID: userID, Utr: utr})
	if err != nil {
		return mail.SendProgress{}, err
	}
	return mail.SendProgress{ID: r.ID, Status: r.Status, Triggered: r.Triggered, Delivered: r.Delivered, Bounces: r.Bounces,
		Remaining: r.Remaining, Deferred: r.Deferred, DueAt: r.DueAt, StartedAt: r.StartedAt, SentAt: r.SentAt, ReadAt: r.ReadAt,
		PausedReason: r.PausedReason, CancelledAt: r.CancelledAt, Cancelled: r.Cancelled}, nil
}

// ResumeSingleSend resumes the account's single send utr that a
// reputation guard paused (docs/deliverability.md): the sweeper starts
// its chains at its next pass, and the guards judge its mails from here
// on. ENOTFOUND when there is no such send, ECONFLICT when it is not
// paused.
func (d *DB) ResumeSingleSend(ctx context.Context, userID int64, utr string) error {
	r, err := d.q.ResumeSingleSend(ctx, db.ResumeSingleSendParams{Utr: utr, UserID: userID})
	if errors.Is(err, pgx.ErrNoRows) {
		return mail.NotFound()
	}
	if err != nil {
		return err
	}
	if r.Resumed == 0 {
		return mail.Errorf(mail.ECONFLICT, "Only paused single sends can be resumed.")
	}
	return nil
}

// CancelSingleSend gives up the rest of the account's single send utr
// that a reputation guard paused: its pending deliveries are skipped (5,
// 'cancelled after a pause'), the rest of its audience is not expanded,
// and it completes (status 3, sent_at, cancelled_at) with a
// single_send.cancelled event and the usual single_send.completed. The
// send must be paused (409 otherwise), and no batch may still hold a
// range of it (409 until its mails in flight are recorded: a mail handed
// to the relay is never counted as skipped). ENOTFOUND when there is no
// such send.
func (d *DB) CancelSingleSend(ctx context.Context, userID int64, utr string) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		s, err := q.LockSendToCancel(ctx, db.LockSendToCancelParams{Utr: utr, UserID: userID})
		if errors.Is(err, pgx.ErrNoRows) {
			return mail.NotFound()
		}
		if err != nil {
			return err
		}
		switch {
		case s.Status != mail.SendRunning || !s.Paused:
			return mail.Errorf(mail.ECONFLICT, "Only paused single sends can be cancelled.")
		case s.InFlight:
			return mail.Errorf(mail.ECONFLICT, "The single send still has mails in flight: try again in a few seconds.")
		}
		if _, err := q.SkipPending(ctx, s.ID); err != nil {
			return err
		}
		r, err := q.MarkCancelled(ctx, s.ID)
		if err != nil {
			return err
		}
		if err := q.RecordSendEvent(ctx, db.RecordSendEventParams{UserID: r.UserID, Kind: mail.EventSingleSendCancelled, SendID: &s.ID,
			Payload: fmt.Appendf(nil, `{"cancelled": %d, "delivered": %d, "bounces": %d}`, r.Cancelled, r.Delivered, r.Bounces)}); err != nil {
			return err
		}
		_, err = completeSend(ctx, q, s.ID)
		return err
	})
}
