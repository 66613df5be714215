package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Contact is a stored contact with its contact type.
type Contact struct {
	ID                  int64
	UserID              int64
	ContactTypeID       int64
	FirstName           string
	LastName            string
	Email               string
	AltEmail            *string
	Country             *int32
	State               string
	City                string
	AddressLine1        string
	AddressLine2        string
	StateProvinceRegion string
	PostalCode          string
	Custom              map[string]any
	DeletedAt           *time.Time
	CreatedAt           time.Time
	UpdatedAt           time.Time
	Type                mail.ContactType // filled by ListContacts only
}

var errUnknownContactType = mail.Invalid("contact_type_id", "The selected contact type id is invalid.")

// errContactMoved answers an update that raced another moving the contact.
var errContactMoved = mail.Errorf(mail.ECONFLICT, "The contact was changed by another request; try again.")

// AddContact adds a contact, or updates the live contact with the same
// address in the type. It reports whether a new contact was made.
func (d *DB) AddContact(ctx context.Context, userID int64, in mail.ContactInput) (int64, bool, error) {
	custom, err := json.Marshal(nonNil(in.Custom))
	if err != nil {
		return 0, false, err
	}
	var row db.UpsertContactRow
	now := d.now()
	err = d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		if err := q.LockTypesForWriting(ctx, []int64{in.ContactTypeID}); err != nil {
			return err
		}
		var err error
		row, err = q.UpsertContact(ctx, db.UpsertContactParams{
			Email: string(in.Email), FirstName: in.FirstName, LastName: in.LastName, AltEmail: in.AltEmail,
			Country: in.Country, State: in.State, City: in.City, AddressLine1: in.AddressLine1,
			AddressLine2: in.AddressLine2, StateProvinceRegion: in.StateProvinceRegion, PostalCode: in.PostalCode,
			Custom: custom, ContactTypeID: in.ContactTypeID, UserID: userID,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return errUnknownContactType
		}
		if err != nil {
			return err
		}
		if err := checkCustomFields(ctx, q, userID, in.CustomFieldIDs); err != nil {
			return err
		}
		if row.Inserted {
			if err := addCounts(ctx, q, userID, countContacts, map[int64]int64{in.ContactTypeID: 1}); err != nil {
				return err
			}
			// A new contact joins the type: live automations enroll it.
			if err := enrollJoined(ctx, tx, userID, in.ContactTypeID, []int64{row.ID}, now); err != nil {
				return err
			}
		}
		return refreshSegments(ctx, tx, userID, []int64{in.ContactTypeID}, changed{ids: []int64{row.ID}, new: row.Inserted, at: now})
	})
	return row.ID, row.Inserted, err
}

// UpdateContact changes a live contact of the account.
func (d *DB) UpdateContact(ctx context.Context, userID, id int64, in mail.ContactInput) error {
	custom, err := json.Marshal(nonNil(in.Custom))
	if err != nil {
		return err
	}
	now := d.now()
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		types, err := q.ContactTypesOf(ctx, db.ContactTypesOfParams{Ids: []int64{id}, UserID: userID})
		if err != nil {
			return err
		}
		if len(types) == 0 {
			return mail.NotFound()
		}
		if err := lockTypes(ctx, q, userID, append(types, in.ContactTypeID)); err != nil {
			return err
		}
		oldType, err := q.LockContact(ctx, db.LockContactParams{ID: id, UserID: userID})
		if err != nil {
			return err
		}
		if oldType != types[0] {
			return errContactMoved
		}
		_, err = q.UpdateContact(ctx, db.UpdateContactParams{
			ID: id, Email: string(in.Email), FirstName: in.FirstName, LastName: in.LastName, AltEmail: in.AltEmail,
			Country: in.Country, State: in.State, City: in.City, AddressLine1: in.AddressLine1,
			AddressLine2: in.AddressLine2, StateProvinceRegion: in.StateProvinceRegion, PostalCode: in.PostalCode,
			Custom: custom, ContactTypeID: in.ContactTypeID, UserID: userID,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return errUnknownContactType // the contact is locked above: the type is missing
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return mail.Invalid("email", "The email has already been taken.")
		}
		if err != nil {
			return err
		}
		if err := checkCustomFields(ctx, q, userID, in.CustomFieldIDs); err != nil {
			return err
		}
		if oldType != in.ContactTypeID {
			if err := addCounts(ctx, q, userID, countContacts, map[int64]int64{oldType: -1, in.ContactTypeID: 1}); err != nil {
				return err
			}
			// Moved into another type: it joins that type's automations.
			if err := enrollJoined(ctx, tx, userID, in.ContactTypeID, []int64{id}, now); err != nil {
				return err
			}
		}
		return refreshSegments(ctx, tx, userID, []int64{oldType, in.ContactTypeID}, changed{ids: []int64{id}, at: now})
	})
}

// checkCustomFields runs once the writer holds its types' locks: the custom
// fields whose values it wrote were validated before, and one may have been
// deleted since (a field delete waits for the type locks, so after this
// check it cannot miss the values).
func checkCustomFields(ctx context.Context, q *db.Queries, userID int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	n, err := q.CountCustomFieldsByID(ctx, db.CountCustomFieldsByIDParams{UserID: userID, Ids: ids})
	if err != nil {
		return err
	}
	if n != int64(len(ids)) {
		return mail.Invalid("custom_field", "A custom field was deleted while the contact was written; send it again.")
	}
	return nil
}

// ContactDetails returns one live contact of the account.
func (d *DB) ContactDetails(ctx context.Context, userID, id int64) (Contact, error) {
	r, err := d.q.ContactDetails(ctx, db.ContactDetailsParams{ID: id, UserID: userID})
	if err != nil {
		return Contact{}, err
	}
	c := Contact{
		ID: r.ID, UserID: r.UserID, ContactTypeID: r.ContactTypeID, FirstName: r.FirstName, LastName: r.LastName,
		Email: r.Email, AltEmail: r.AltEmail, Country: r.Country, State: r.State, City: r.City,
		AddressLine1: r.AddressLine1, AddressLine2: r.AddressLine2, StateProvinceRegion: r.StateProvinceRegion,
		PostalCode: r.PostalCode, DeletedAt: r.DeletedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	c.Custom, err = decodeCustom(r.Custom)
	return c, err
}

// DeleteContacts soft-deletes the given live contacts of the account, all
// or none: when any id is not one, nothing changes and the answer is
// ENOTFOUND. However many ids there are, it is four statements: the ids'
// types, their locks, one UPDATE, and one DELETE of their memberships.
func (d *DB) DeleteContacts(ctx context.Context, userID int64, ids []int64) error {
	ids = sortedUnique(ids) // in index order: the reads walk contacts_pkey forward
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		if err := probeByID(ctx, tx, len(ids)); err != nil {
			return err
		}
		types, err := q.ContactTypesOf(ctx, db.ContactTypesOfParams{Ids: ids, UserID: userID})
		if err != nil {
			return err
		}
		if err := lockTypes(ctx, q, userID, types); err != nil {
			return err
		}
		deleted, err := q.DeleteContacts(ctx, db.DeleteContactsParams{Ids: ids, UserID: userID})
		if err != nil {
			return err
		}
		var n int64
		left := make(map[int64]int64, len(deleted))
		var moved []int64
		for _, r := range deleted {
			n += r.N
			left[r.ContactTypeID] = -r.N
			if !slices.Contains(types, r.ContactTypeID) {
				moved = append(moved, r.ContactTypeID)
			}
		}
		if n != int64(len(ids)) {
			return mail.NotFound()
		}
		if len(moved) > 0 {
			// A contact moved by a concurrent update was deleted from its
			// new type: take that type too (a rebuild step on it may have
			// seen the contact live) before its segments are refreshed.
			if err := lockTypes(ctx, q, userID, moved); err != nil {
				return err
			}
			types = append(types, moved...)
		}
		if err := addCounts(ctx, q, userID, countContacts, left); err != nil {
			return err
		}
		return refreshSegments(ctx, tx, userID, types, changed{ids: ids, deleted: true})
	})
}

// lockTypes is what every contact writer takes before it changes
// contacts of these types (the types it writes into or out of): their
// writer locks shared (so segment rebuild steps wait for it, and it for
// them; see segment.go), then their rows FOR SHARE (so imports' merges and
// type deletes see it), each in id order.
func lockTypes(ctx context.Context, q *db.Queries, userID int64, ids []int64) error {
	if err := q.LockTypesForWriting(ctx, ids); err != nil {
		return err
	}
	_, err := q.LockContactTypes(ctx, db.LockContactTypesParams{Ids: ids, UserID: userID})
	return err
}

// listContactsSQL reads the account's live contacts with their types: the
// page's ids from contacts_user alone (an index-only walk, however far the
// offset), then those rows.
var listContactsSQL = `
SELECT c.id, c.user_id, c.contact_type_id, c.first_name, c.last_name, c.email, c.alt_email, c.country,
    c.state, c.city, c.address_line1, c.address_line2, c.state_province_region, c.postal_code, c.custom,
    c.deleted_at, c.created_at, c.updated_at,
    t.id, t.user_id, t.name, t.deleted_at, t.created_at, t.updated_at
FROM (SELECT id FROM contacts WHERE user_id = $1 AND deleted_at IS NULL AND ` + keyset("id", 1) + `) page
JOIN contacts c ON c.id = page.id
JOIN contact_types t ON t.id = c.contact_type_id
ORDER BY c.id`

// ListContacts calls fn with each live contact of the account, in id
// order, and returns the account's kept contact count when paged.
func (d *DB) ListContacts(ctx context.Context, userID int64, page *mail.Page, fn func(*Contact) error) (total int64, err error) {
	if page != nil {
		if total, err = d.q.CountAll(ctx, db.CountAllParams{UserID: userID, Kind: countContacts}); err != nil {
			return 0, err
		}
	}
	var custom []byte
	err = streamList(ctx, d, listContactsSQL, []any{userID}, page, func(rows pgx.Rows, c *Contact) error {
		t := &c.Type
		if err := rows.Scan(&c.ID, &c.UserID, &c.ContactTypeID, &c.FirstName, &c.LastName, &c.Email, &c.AltEmail,
			&c.Country, &c.State, &c.City, &c.AddressLine1, &c.AddressLine2, &c.StateProvinceRegion, &c.PostalCode,
			&custom, &c.DeletedAt, &c.CreatedAt, &c.UpdatedAt,
			&t.ID, &t.UserID, &t.Name, &t.DeletedAt, &t.CreatedAt, &t.UpdatedAt); err != nil {
			return err
		}
		c.Custom, err = decodeCustom(custom)
		return err
	}, func(c *Contact) int64 { return c.ID }, fn)
	return total, err
}

// decodeCustom reads a contact's custom values, numbers as json.Number so
// they render as stored; nil when there are none.
func decodeCustom(b []byte) (map[string]any, error) {
	if len(b) <= 2 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	err := dec.Decode(&m)
	return m, err
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// sortedUnique is ids sorted, each once (a new slice).
func sortedUnique(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// LiveContactType reports whether id is a live contact type of the account.
func (d *DB) LiveContactType(ctx context.Context, userID, id int64) (bool, error) {
	return d.q.LiveContactType(ctx, db.LiveContactTypeParams{ID: id, UserID: userID})
}
