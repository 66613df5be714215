package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Unsubscribe puts addresses on the account's global list (groupID nil) or
// in one of its groups, with an event for each address added; an address
// already there, in any case, is left as it is. It returns how many were
// added. An unknown group is ENOTFOUND.
func (d *DB) Unsubscribe(ctx context.Context, userID int64, groupID *int64, emails []mail.Email) (int64, error) {
	return d.unsubscribe(ctx, userID, groupID, emails, nil, 0)
}

// unsubscribe is Unsubscribe with origin (JSON, nil for none) merged into
// each event's payload; with sendID, the send's unsubscribes statistic
// grows by the addresses added, in the same transaction.
func (d *DB) unsubscribe(ctx context.Context, userID int64, groupID *int64, emails []mail.Email, origin []byte, sendID int64) (int64, error) {
	addresses := mail.EmailStrings(emails)
	arg := db.AddUnsubscribesParams{UserID: userID, GroupID: groupID, Addresses: addresses, Kind: mail.EventAddressUnsubscribed, Origin: origin}
	if sendID > 0 {
		arg.SendID = &sendID
	}
	var n int64
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		list := int64(0)
		if groupID != nil {
			if _, err := q.LockUnsubscribeGroup(ctx, db.LockUnsubscribeGroupParams{ID: *groupID, UserID: userID}); err != nil {
				return err
			}
			list = *groupID
		}
		var err error
		counted := false // the send counted this address already
		if sendID > 0 && len(addresses) == 1 {
			var err error
			if counted, err = q.UnsubscribedFromSend(ctx, db.UnsubscribedFromSendParams{UserID: userID, Email: addresses[0], SendID: &sendID}); err != nil {
				return err
			}
		}
		if n, err = q.AddUnsubscribes(ctx, arg); err != nil {
			return err
		}
		if n > 0 && origin != nil { // a recipient's own, from a mail: the webhooks hear of it
			if err := d.emitUnsubscribes(ctx, q, userID, groupID, sendID, addresses); err != nil {
				return err
			}
		}
		if n > 0 && sendID > 0 && !counted {
			// A send of another account (a forged id cannot pass the
			// token's MAC) or a deleted one is left alone by the WHERE.
			// Statistics before the send's row, as every writer takes them.
			if err := bumpSend(ctx, q, sendID, mail.Counts{Unsubscribes: n}); err != nil {
				return err
			}
			if err := q.CountSendUnsubscribe(ctx, db.CountSendUnsubscribeParams{SendID: sendID, UserID: userID, N: n}); err != nil {
				return err
			}
		}
		return addCounts(ctx, q, userID, countUnsubscribes, map[int64]int64{list: n})
	})
	return n, err
}

// DeleteUnsubscribes deletes entries of the account's global list (global
// true) or of its groups (global false), all or none: when any id is not
// such an entry, nothing changes and the answer is ENOTFOUND.
func (d *DB) DeleteUnsubscribes(ctx context.Context, userID int64, global bool, ids []int64) error {
	ids = sortedUnique(ids)
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		if err := probeByID(ctx, tx, len(ids)); err != nil {
			return err
		}
		deleted, err := q.DeleteUnsubscribes(ctx, db.DeleteUnsubscribesParams{Ids: ids, UserID: userID, Global: global})
		if err != nil {
			return err
		}
		var n int64
		left := make(map[int64]int64, len(deleted))
		for _, r := range deleted {
			n += r.N
			left[r.List] = -r.N
		}
		if n != int64(len(ids)) {
			return mail.NotFound()
		}
		return addCounts(ctx, q, userID, countUnsubscribes, left)
	})
}

// listUnsubscribesSQL reads a list of unsubscribes in id order: the page's
// ids from unsubscribes_page alone (an index-only walk, however far the
// offset), then those rows. $2 is the group's id, 0 for the global list.
var listUnsubscribesSQL = `
SELECT u.id, u.user_id, u.unsubscribe_groups_id, u.email_address, u.created_at, u.updated_at
FROM (SELECT id FROM unsubscribes
      WHERE user_id = $1 AND COALESCE(unsubscribe_groups_id, 0) = $2 AND ` + keyset("id", 2) + `) page
JOIN unsubscribes u ON u.id = page.id
ORDER BY u.id`

// ListUnsubscribes calls fn with each address on the account's global list
// (groupID nil) or in one of its groups, streaming from the database, and
// returns the list's length when paged. An unknown group is ENOTFOUND,
// before fn is called.
func (d *DB) ListUnsubscribes(ctx context.Context, userID int64, groupID *int64, page *mail.Page, fn func(*mail.Unsubscribe) error) (total int64, err error) {
	if groupID != nil {
		exists, err := d.q.UnsubscribeGroupExists(ctx, db.UnsubscribeGroupExistsParams{ID: *groupID, UserID: userID})
		if err != nil {
			return 0, err
		}
		if !exists {
			return 0, mail.NotFound()
		}
	}
	list := int64(0)
	if groupID != nil {
		list = *groupID
	}
	if page != nil {
		if total, err = d.count(ctx, userID, countUnsubscribes, list); err != nil {
			return 0, err
		}
	}
	err = streamList(ctx, d, listUnsubscribesSQL, []any{userID, list}, page, func(rows pgx.Rows, u *mail.Unsubscribe) error {
		return rows.Scan(&u.ID, &u.UserID, &u.GroupID, &u.Email, &u.CreatedAt, &u.UpdatedAt)
	}, func(u *mail.Unsubscribe) int64 { return u.ID }, fn)
	return total, err
}

// UnsubscribeGroups returns the account's groups by id, each with its
// number of addresses: all of them when page is nil, else that page and
// the total.
func (d *DB) UnsubscribeGroups(ctx context.Context, userID int64, page *mail.Page) ([]mail.UnsubscribeGroup, int64, error) {
	arg := db.ListUnsubscribeGroupsParams{UserID: userID}
	if page != nil {
		arg.RowLimit, arg.RowOffset = &page.Size, page.Offset()
	}
	rows, err := d.q.ListUnsubscribeGroups(ctx, arg)
	if err != nil {
		return nil, 0, err
	}
	out := make([]mail.UnsubscribeGroup, len(rows))
	for i, r := range rows {
		out[i] = mail.UnsubscribeGroup{ID: r.ID, UserID: r.UserID, RandID: r.RandID, Name: r.GroupName,
			Description: r.Description, Display: r.IsDisplay == 1, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
			Recipients: r.UnsubscribeClientsCount}
	}
	total := int64(len(out))
	if page != nil {
		if total, err = d.q.CountUnsubscribeGroups(ctx, userID); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// UnsubscribeGroup returns one of the account's groups, or ENOTFOUND.
func (d *DB) UnsubscribeGroup(ctx context.Context, userID, id int64) (mail.UnsubscribeGroup, error) {
	r, err := d.q.UnsubscribeGroup(ctx, db.UnsubscribeGroupParams{ID: id, UserID: userID})
	if err != nil {
		return mail.UnsubscribeGroup{}, err
	}
	return mail.UnsubscribeGroup{ID: r.ID, UserID: r.UserID, RandID: r.RandID, Name: r.GroupName,
		Description: r.Description, Display: r.IsDisplay == 1, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// CreateUnsubscribeGroup stores a group with a fresh rand_id and returns
// its id. rand_id is unique across accounts; the rare clash draws again.
func (d *DB) CreateUnsubscribeGroup(ctx context.Context, userID int64, in mail.UnsubscribeGroupInput) (int64, error) {
	for attempt := 0; ; attempt++ {
		id, err := d.q.CreateUnsubscribeGroup(ctx, db.CreateUnsubscribeGroupParams{UserID: userID, RandID: mail.NewRandID(),
			GroupName: in.Name, Description: in.Description, IsDisplay: smallBool(in.Display)})
		var pgErr *pgconn.PgError
		if attempt < 5 && errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "unsubscribe_groups_rand_id" {
			continue
		}
		return id, err
	}
}

// UpdateUnsubscribeGroup sets a group's name, description and display
// flag, or answers ENOTFOUND.
func (d *DB) UpdateUnsubscribeGroup(ctx context.Context, userID, id int64, in mail.UnsubscribeGroupInput) error {
	n, err := d.q.UpdateUnsubscribeGroup(ctx, db.UpdateUnsubscribeGroupParams{ID: id, UserID: userID,
		GroupName: in.Name, Description: in.Description, IsDisplay: smallBool(in.Display)})
	if err != nil {
		return err
	}
	if n == 0 {
		return mail.NotFound()
	}
	return nil
}

// smallBool is a flag as the smallint 0/1 the tables keep.
func smallBool(b bool) int16 {
	if b {
		return 1
	}
	return 0
}

// SuppressedAmong returns the addresses of emails that no mail of account
// userID may reach: its global unsubscribes and hard bounces.
func (d *DB) SuppressedAmong(ctx context.Context, userID int64, emails []mail.Email) ([]mail.Email, error) {
	got, err := d.q.SuppressedAmong(ctx, db.SuppressedAmongParams{UserID: userID, Emails: mail.EmailStrings(emails)})
	out := make([]mail.Email, len(got))
	for i, e := range got {
		out[i] = mail.Email(e)
	}
	return out, err
}
