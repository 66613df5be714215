package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// A CSV import runs in one transaction: rows stream from the request
// through COPY into a temporary staging table, then one statement merges
// them into contacts (last row of an address wins; columns the file lacks
// keep their stored values), and the event is recorded. Any error rolls
// the whole file back. The staging table is temporary, so this SQL is
// written here rather than in queries/ (sqlc cannot see temporary tables).

const createStagingSQL = `
CREATE TEMPORARY TABLE contact_import (
    line                  integer NOT NULL,
    email                 text    NOT NULL,
    first_name            text,
    last_name             text,
    alt_email             text,
    country               integer,
    state                 text,
    city                  text,
    address_line1         text,
    address_line2         text,
    state_province_region text,
    postal_code           text,
    custom                jsonb
) ON COMMIT DROP`

var stagingColumns = []string{"line", "email", "first_name", "last_name", "alt_email", "country", "state", "city",
	"address_line1", "address_line2", "state_province_region", "postal_code", "custom"}

// mergeSQL upserts the staged rows. $3…$12 say whether the file has each
// optional reserved column; $13 lists its custom columns, whose stored
// values are replaced (an empty cell removes the value).
const mergeSQL = `
WITH src AS (
    SELECT DISTINCT ON (lower(email)) *
    FROM contact_import
    ORDER BY lower(email), line DESC
), up AS (
    INSERT INTO contacts AS c (user_id, contact_type_id, email, first_name, last_name, alt_email, country,
        state, city, address_line1, address_line2, state_province_region, postal_code, custom)
    SELECT $1, $2, email, COALESCE(first_name, ''), COALESCE(last_name, ''), NULLIF(alt_email, ''), country,
        COALESCE(state, ''), COALESCE(city, ''), COALESCE(address_line1, ''), COALESCE(address_line2, ''),
        COALESCE(state_province_region, ''), COALESCE(postal_code, ''), COALESCE(custom, '{}')
    FROM src
    ON CONFLICT (contact_type_id, email_lc) WHERE deleted_at IS NULL DO UPDATE SET
        email = EXCLUDED.email,
        first_name = CASE WHEN $3 THEN EXCLUDED.first_name ELSE c.first_name END,
        last_name = CASE WHEN $4 THEN EXCLUDED.last_name ELSE c.last_name END,
        alt_email = CASE WHEN $5 THEN EXCLUDED.alt_email ELSE c.alt_email END,
        country = CASE WHEN $6 THEN EXCLUDED.country ELSE c.country END,
        state = CASE WHEN $7 THEN EXCLUDED.state ELSE c.state END,
        city = CASE WHEN $8 THEN EXCLUDED.city ELSE c.city END,
        address_line1 = CASE WHEN $9 THEN EXCLUDED.address_line1 ELSE c.address_line1 END,
        address_line2 = CASE WHEN $10 THEN EXCLUDED.address_line2 ELSE c.address_line2 END,
        state_province_region = CASE WHEN $11 THEN EXCLUDED.state_province_region ELSE c.state_province_region END,
        postal_code = CASE WHEN $12 THEN EXCLUDED.postal_code ELSE c.postal_code END,
        custom = (c.custom - $13::text[]) || EXCLUDED.custom,
        updated_at = now()
    RETURNING (c.xmax = 0) AS inserted
)
SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM up`

// ImportResult counts what an import did.
type ImportResult struct {
	Rows    int   `json:"rows"`    // data rows in the file
	Added   int64 `json:"added"`   // new contacts
	Updated int64 `json:"updated"` // existing contacts changed
	Skipped int   `json:"skipped"` // rows with an invalid address
}

// ContactImport is a CSV import in progress.
type ContactImport struct {
	tx     pgx.Tx
	userID int64
}

// BeginContactImport opens the import's transaction and staging table.
func (d *DB) BeginContactImport(ctx context.Context, userID int64) (*ContactImport, error) {
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, createStagingSQL); err != nil {
		tx.Rollback(ctx)
		return nil, err
	}
	return &ContactImport{tx: tx, userID: userID}, nil
}

// Rollback abandons the import; harmless after Commit.
func (im *ContactImport) Rollback(ctx context.Context) {
	im.tx.Rollback(context.WithoutCancel(ctx))
}

// Copy streams the file's valid rows into the staging table. A row error
// (mail.EINVALID on "file") aborts the COPY and is returned as is.
func (im *ContactImport) Copy(ctx context.Context, src *mail.ContactCSV) error {
	s := &csvSource{src: src, values: make([]any, len(stagingColumns))}
	_, err := im.tx.CopyFrom(ctx, pgx.Identifier{"contact_import"}, stagingColumns, s)
	if s.err != nil {
		return s.err // the reader's error, not COPY's report of it
	}
	return err
}

// Commit merges the staged rows into the contact type, records the
// contacts.imported event and commits.
func (im *ContactImport) Commit(ctx context.Context, typeID int64, src *mail.ContactCSV) (ImportResult, error) {
	var live bool
	err := im.tx.QueryRow(ctx, `SELECT true FROM contact_types
		WHERE id = $1 AND user_id = $2 AND deleted_at IS NULL FOR SHARE`, typeID, im.userID).Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) {
		return ImportResult{}, errUnknownContactType
	}
	if err != nil {
		return ImportResult{}, err
	}
	res := ImportResult{Rows: src.Rows(), Skipped: src.Skipped()}
	custom := src.CustomColumns()
	if err := im.tx.QueryRow(ctx, mergeSQL, im.userID, typeID,
		src.Has(mail.ColFirstName), src.Has(mail.ColLastName), src.Has(mail.ColAltEmail), src.Has(mail.ColCountry),
		src.Has(mail.ColState), src.Has(mail.ColCity), src.Has(mail.ColAddressLine1), src.Has(mail.ColAddressLine2),
		src.Has(mail.ColStateProvinceRegion), src.Has(mail.ColPostalCode), custom,
	).Scan(&res.Added, &res.Updated); err != nil {
		return ImportResult{}, fmt.Errorf("postgres: merge import: %w", translate(err))
	}
	payload, _ := json.Marshal(res)
	if err := db.New(im.tx).InsertEvent(ctx, db.InsertEventParams{
		UserID: im.userID, Kind: EventContactsImported, SubjectType: "contact_type", SubjectID: &typeID, Payload: payload,
	}); err != nil {
		return ImportResult{}, err
	}
	return res, im.tx.Commit(ctx)
}

// EventContactsImported is the event a finished CSV import records.
const EventContactsImported = "contacts.imported"

// csvSource adapts a ContactCSV to pgx.CopyFromSource. Absent columns are
// NULL; present empty cells are "" (or NULL for country).
type csvSource struct {
	src    *mail.ContactCSV
	row    *mail.ContactRow
	values []any
	err    error
}

func (s *csvSource) Next() bool {
	s.row, s.err = s.src.Next()
	if errors.Is(s.err, io.EOF) {
		s.err = nil
		return false
	}
	return s.err == nil
}

func (s *csvSource) Values() ([]any, error) {
	r, v := s.row, s.values
	v[0] = int32(r.Line)
	v[1] = r.Fields[mail.ColEmail]
	for i, col := range []int{mail.ColFirstName, mail.ColLastName, mail.ColAltEmail} {
		v[2+i] = s.text(col)
	}
	v[5] = nil
	if r.Country != 0 {
		v[5] = r.Country
	}
	for i, col := range []int{mail.ColState, mail.ColCity, mail.ColAddressLine1, mail.ColAddressLine2,
		mail.ColStateProvinceRegion, mail.ColPostalCode} {
		v[6+i] = s.text(col)
	}
	v[12] = nil
	if r.Custom != nil {
		v[12] = r.Custom
	}
	return v, nil
}

func (s *csvSource) text(col int) any {
	if !s.src.Has(col) {
		return nil
	}
	return s.row.Fields[col]
}

func (s *csvSource) Err() error { return s.err }
