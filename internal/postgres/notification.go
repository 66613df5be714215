package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// NotificationRecipients returns the account's notification recipients by
// id: all of them when page is nil, else that page and the total.
func (d *DB) NotificationRecipients(ctx context.Context, userID int64, page *mail.Page) ([]mail.NotificationRecipient, int64, error) {
	arg := db.ListNotificationRecipientsParams{UserID: userID}
	if page != nil {
		arg.RowLimit, arg.RowOffset, arg.AfterID = &page.Size, page.Offset(), page.After
	}
	rows, err := d.q.ListNotificationRecipients(ctx, arg)
	if err != nil {
		return nil, 0, err
	}
	out := make([]mail.NotificationRecipient, len(rows))
	for i, r := range rows {
		out[i] = mail.NotificationRecipient{ID: r.ID, UserID: r.UserID, Email: r.EmailAddress, Owner: r.EmailOwner,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	}
	total := int64(len(out))
	if page != nil {
		if total, err = d.count(ctx, userID, countNotifications, 0); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// SaveNotificationRecipient adds an address to the account's notification
// recipients and returns its id. An address the account has already, in
// any case, is not added twice: that recipient takes the new spelling and
// owner.
func (d *DB) SaveNotificationRecipient(ctx context.Context, userID int64, in mail.NotificationRecipientInput) (int64, error) {
	var id int64
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		r, err := q.SaveNotificationRecipient(ctx, db.SaveNotificationRecipientParams{
			UserID: userID, EmailAddress: string(in.Email), EmailOwner: in.Owner,
		})
		id = r.ID
		if err != nil || !r.Inserted {
			return err
		}
		return addCounts(ctx, q, userID, countNotifications, map[int64]int64{0: 1})
	})
	return id, err
}

// DeleteNotificationRecipients deletes the given notification recipients
// of the account, all or none: when any id is not one, nothing changes and
// the answer is ENOTFOUND.
func (d *DB) DeleteNotificationRecipients(ctx context.Context, userID int64, ids []int64) error {
	ids = sortedUnique(ids)
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		if err := probeByID(ctx, tx, len(ids)); err != nil {
			return err
		}
		n, err := q.DeleteNotificationRecipients(ctx, db.DeleteNotificationRecipientsParams{Ids: ids, UserID: userID})
		if err != nil {
			return err
		}
		if n != int64(len(ids)) {
			return mail.NotFound()
		}
		return addCounts(ctx, q, userID, countNotifications, map[int64]int64{0: -n})
	})
}
