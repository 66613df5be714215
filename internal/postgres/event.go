package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// NotifyEvents claims up to n events not yet notified (others' claims are
// skipped), and for each calls send with the event and its account's
// notification addresses; an event is marked notified once send returns
// nil for it. On the first failure it stops, keeps the marks made so far,
// and returns the error: only that event is tried again (its addresses
// already mailed get it twice). A crash between a send and the commit
// sends that batch again: at most one duplicate per crash. It returns how
// many events it marked.
func (d *DB) NotifyEvents(ctx context.Context, n int, send func(ctx context.Context, e mail.Event, to []string) error) (int, error) {
	marked := 0
	var sendErr error
	err := d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		marked, sendErr = 0, nil
		rows, err := q.ClaimEvents(ctx, int32(n))
		if err != nil || len(rows) == 0 {
			return err
		}
		accounts := make([]int64, 0, len(rows))
		for _, r := range rows {
			accounts = append(accounts, r.UserID)
		}
		addrs, err := q.NotificationAddresses(ctx, sortedUnique(accounts))
		if err != nil {
			return err
		}
		to := map[int64][]string{}
		for _, a := range addrs {
			to[a.UserID] = append(to[a.UserID], a.EmailAddress)
		}
		for _, r := range rows {
			e := mail.Event{ID: r.ID, UserID: r.UserID, Kind: r.Kind, SubjectType: r.SubjectType,
				SubjectID: r.SubjectID, Payload: r.Payload, CreatedAt: r.CreatedAt}
			if len(to[r.UserID]) > 0 {
				if sendErr = send(ctx, e, to[r.UserID]); sendErr != nil {
					return nil // commit the marks made so far
				}
			}
			if err := q.MarkNotified(ctx, r.ID); err != nil {
				return err
			}
			marked++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return marked, sendErr
}
