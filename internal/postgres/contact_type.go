package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// ContactTypes returns the account's live contact types by id with their
// live contact counts: all of them when page is nil, else that page and the
// total.
func (d *DB) ContactTypes(ctx context.Context, userID int64, page *mail.Page) ([]mail.ContactType, int64, error) {
	arg := db.ListContactTypesParams{UserID: userID}
	if page != nil {
		arg.RowLimit, arg.RowOffset = &page.Size, page.Offset()
	}
	rows, err := d.q.ListContactTypes(ctx, arg)
	if err != nil {
		return nil, 0, err
	}
	out := make([]mail.ContactType, len(rows))
	for i, r := range rows {
		out[i] = mail.ContactType{ID: r.ID, UserID: r.UserID, Name: r.Name, DeletedAt: r.DeletedAt,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Contacts: r.ContactsCount}
	}
	total := int64(len(out))
	if page != nil {
		if total, err = d.q.CountContactTypes(ctx, userID); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// ContactType returns one of the account's live contact types, or ENOTFOUND.
func (d *DB) ContactType(ctx context.Context, userID, id int64) (mail.ContactType, error) {
	r, err := d.q.ContactType(ctx, db.ContactTypeParams{ID: id, UserID: userID})
	if err != nil {
		return mail.ContactType{}, err
	}
	return mail.ContactType{ID: r.ID, UserID: r.UserID, Name: r.Name, DeletedAt: r.DeletedAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// CreateContactType stores a contact type with a parsed name and returns its id.
func (d *DB) CreateContactType(ctx context.Context, userID int64, name string) (int64, error) {
	id, err := d.q.CreateContactType(ctx, db.CreateContactTypeParams{UserID: userID, Name: name})
	return id, err
}

// RenameContactType sets a live contact type's name, or answers ENOTFOUND.
func (d *DB) RenameContactType(ctx context.Context, userID, id int64, name string) error {
	n, err := d.q.UpdateContactType(ctx, db.UpdateContactTypeParams{ID: id, UserID: userID, Name: name})
	if err != nil {
		return err
	}
	if n == 0 {
		return mail.NotFound()
	}
	return nil
}

// DeleteContactType soft-deletes a live contact type and its live contacts
// in one transaction, or answers ENOTFOUND.
func (d *DB) DeleteContactType(ctx context.Context, userID, id int64) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		if err := q.LockTypesForWriting(ctx, []int64{id}); err != nil {
			return err
		}
		n, err := q.DeleteContactType(ctx, db.DeleteContactTypeParams{ID: id, UserID: userID})
		if err != nil {
			return err
		}
		if n == 0 {
			return mail.NotFound()
		}
		gone, err := q.DeleteContactsOfType(ctx, db.DeleteContactsOfTypeParams{UserID: userID, ContactTypeID: id})
		if err != nil {
			return err
		}
		if err := addCounts(ctx, q, userID, countContacts, map[int64]int64{id: -gone}); err != nil {
			return err
		}
		// Its contacts leave every segment.
		left, err := q.DeleteTypeMemberships(ctx, db.DeleteTypeMembershipsParams{UserID: userID, ContactTypeID: id})
		if err != nil {
			return err
		}
		delta := make(map[int64]int64, len(left))
		for _, r := range left {
			delta[r.SegmentID] = -r.N
		}
		return addCounts(ctx, q, userID, countSegment, delta)
	})
}
