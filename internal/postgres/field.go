package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// CustomFields returns the account's custom fields by id: all of them when
// page is nil, else that page and the total.
func (d *DB) CustomFields(ctx context.Context, userID int64, page *mail.Page) ([]mail.CustomFieldRecord, int64, error) {
	arg := db.ListCustomFieldsParams{UserID: userID}
	if page != nil {
		arg.RowLimit, arg.RowOffset = &page.Size, page.Offset()
	}
	rows, err := d.q.ListCustomFields(ctx, arg)
	if err != nil {
		return nil, 0, err
	}
	out := make([]mail.CustomFieldRecord, len(rows))
	for i, r := range rows {
		out[i] = mail.CustomFieldRecord{
			CustomField: mail.CustomField{ID: r.ID, Name: r.FieldName, Type: r.FieldType},
			UserID:      r.UserID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		}
	}
	total := int64(len(out))
	if page != nil {
		if total, err = d.q.CountCustomFields(ctx, userID); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// fieldNameTaken is a second field of one name (any case) in an account.
var fieldNameTaken = mail.Invalid("field_name", "The field name has already been taken.")

// CreateCustomField stores a parsed custom field and returns its id. A name
// the account already has, in any case, is a field_name validation failure
// (the unique index decides, so concurrent saves cannot both win).
func (d *DB) CreateCustomField(ctx context.Context, userID int64, f mail.CustomField) (int64, error) {
	id, err := d.q.CreateCustomField(ctx, db.CreateCustomFieldParams{UserID: userID, FieldName: f.Name, FieldType: f.Type})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "custom_fields_name" {
		return 0, fieldNameTaken
	}
	return id, err
}

// DeleteCustomField deletes one of the account's custom fields and, in the
// same transaction, its value from every contact of the account; an unknown
// id is ENOTFOUND.
func (d *DB) DeleteCustomField(ctx context.Context, userID, id int64) error {
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		if err := q.LockAccountTypesForWriting(ctx, userID); err != nil {
			return err
		}
		if err := q.LockAccountContactTypes(ctx, userID); err != nil {
			return err
		}
		name, err := q.DeleteCustomField(ctx, db.DeleteCustomFieldParams{ID: id, UserID: userID})
		if err != nil {
			return err
		}
		if _, err = q.RemoveCustomValues(ctx, db.RemoveCustomValuesParams{UserID: userID, FieldName: name}); err != nil {
			return err
		}
		// The values are gone: segments with conditions on the field change.
		return rebuildSegmentsUsingField(ctx, tx, userID, id, d.now())
	})
}
