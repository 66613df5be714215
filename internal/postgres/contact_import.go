package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// A CSV import runs in one transaction: rows stream from the request
// through COPY into a temporary staging table, then the merge updates the
// type's contacts that the file names and inserts the rest (last row of an
// address wins; columns the file lacks keep their stored values), and the
// event is recorded. Any error rolls the whole file back. The staging table
// is temporary, so this SQL is written here rather than in queries/ (sqlc
// cannot see temporary tables).
//
// The merge holds the type's row FOR SHARE, as every contact writer does,
// so single writers go on beside an import: a writer waits for one only
// when it writes a contact the import is changing (then until the import
// commits, which all-or-nothing imports require). Imports into one type
// run one at a time (an advisory lock keyed by the type), so two merges
// never lock the same rows in different orders. The UPDATE changes the
// addresses the type has; the INSERT adds the rest with ON CONFLICT, for an
// address a single writer added since the UPDATE looked. Segment rebuilds,
// type deletes and custom field deletes take the type FOR UPDATE and so
// still wait for a merge in flight (docs/contacts.md).

const createStagingSQL = `
CREATE TEMPORARY TABLE contact_import (
    line                  integer NOT NULL,
    email                 text    NOT NULL,
    email_lc              text    GENERATED ALWAYS AS (lower(email)) STORED,
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

// createChangedSQL holds the contacts the import changed, as its
// statements returned them, for the segments of the type to re-evaluate
// and the automations to enroll: %s, the columns the segments read
// (importColumns), and new, whether the contact is new (in no segment
// yet). The refresh reads them from here instead of looking each contact
// up again; only those columns, as whole rows made the merge of a
// million contacts 2.7 s slower.
const createChangedSQL = `CREATE TEMPORARY TABLE import_changed ON COMMIT DROP AS
SELECT %s, true AS new FROM contacts c WITH NO DATA`

// returning is the RETURNING list of cols of contacts c.
func returning(cols []string) string {
	return "c." + strings.Join(cols, ", c.")
}

// collectChanged wraps a statement on contacts c so that cols of the rows
// it writes go into import_changed, with new saying whether the statement
// inserts them; the statement's row count stays the answer.
func collectChanged(stmt string, cols []string, new bool) string {
	return "WITH x AS (" + stmt + " RETURNING " + returning(cols) + ") INSERT INTO import_changed SELECT x.*, " +
		strconv.FormatBool(new) + " FROM x"
}

// email_lc is lower(email) computed by PostgreSQL, as in contacts, so the
// two compare alike in any locale.
var stagingColumns = []string{"line", "email", "first_name", "last_name", "alt_email", "country", "state",
	"city", "address_line1", "address_line2", "state_province_region", "postal_code", "custom"}

// dedupedSQL is the staged rows, one per address: the last in the file.
// Sorted by address, it also feeds the unique index in order.
const dedupedSQL = `(SELECT DISTINCT ON (email_lc) * FROM contact_import ORDER BY email_lc, line DESC)`

// updateImportedSQL changes the type's live contacts the file names. $2…$11
// say whether the file has each optional reserved column; $12 lists its
// custom columns, whose stored values are replaced (an empty cell removes
// the value).
const updateImportedSQL = `
UPDATE contacts c SET
    email = s.email,
    first_name = CASE WHEN $2 THEN s.first_name ELSE c.first_name END,
    last_name = CASE WHEN $3 THEN s.last_name ELSE c.last_name END,
    alt_email = CASE WHEN $4 THEN NULLIF(s.alt_email, '') ELSE c.alt_email END,
    country = CASE WHEN $5 THEN s.country ELSE c.country END,
    state = CASE WHEN $6 THEN s.state ELSE c.state END,
    city = CASE WHEN $7 THEN s.city ELSE c.city END,
    address_line1 = CASE WHEN $8 THEN s.address_line1 ELSE c.address_line1 END,
    address_line2 = CASE WHEN $9 THEN s.address_line2 ELSE c.address_line2 END,
    state_province_region = CASE WHEN $10 THEN s.state_province_region ELSE c.state_province_region END,
    postal_code = CASE WHEN $11 THEN s.postal_code ELSE c.postal_code END,
    custom = (c.custom - $12::text[]) || COALESCE(s.custom, '{}'),
    updated_at = now()
FROM ` + dedupedSQL + ` s
WHERE c.contact_type_id = $1 AND c.email_lc = s.email_lc AND c.deleted_at IS NULL`

// Both statements end without RETURNING so collectChanged can add one; the
// UPDATE's "id" is the contact's (the staging table has none).

// insertNewSQL adds the addresses the UPDATE did not change (rows whose
// version this transaction wrote, xmin); with $3 false (the type had no
// live contacts) it skips looking. A plain INSERT: the fast path, which
// fails only when a single writer added one of the file's addresses since
// the UPDATE looked; then insertRacedSQL runs instead, and updates that
// contact with the file's row.
const insertNewSQL = `
INSERT INTO contacts AS c (user_id, contact_type_id, email, first_name, last_name, alt_email, country,
    state, city, address_line1, address_line2, state_province_region, postal_code, custom)
SELECT $1, $2, s.email, COALESCE(s.first_name, ''), COALESCE(s.last_name, ''), NULLIF(s.alt_email, ''), s.country,
    COALESCE(s.state, ''), COALESCE(s.city, ''), COALESCE(s.address_line1, ''), COALESCE(s.address_line2, ''),
    COALESCE(s.state_province_region, ''), COALESCE(s.postal_code, ''), COALESCE(s.custom, '{}')
FROM ` + dedupedSQL + ` s
WHERE NOT $3 OR NOT EXISTS (SELECT 1 FROM contacts c
    WHERE c.contact_type_id = $2 AND c.email_lc = s.email_lc AND c.deleted_at IS NULL
      AND c.xmin = pg_current_xact_id()::xid)`

// insertRacedSQL is insertNewSQL for when a single writer raced the
// merge: an address added since is updated as updateImportedSQL would
// ($4…$14 are its $2…$12). It answers how many rows it inserted and
// updated; with $15 the changed contacts' columns (%[1]s) go to
// import_changed. ON CONFLICT
// costs a fifth of the import's time on a million rows, hence the fast
// path.
const insertRacedSQL = `
WITH x AS (` + insertNewSQL + `
    ON CONFLICT (contact_type_id, email_lc) WHERE deleted_at IS NULL DO UPDATE SET
        email = EXCLUDED.email,
        first_name = CASE WHEN $4 THEN EXCLUDED.first_name ELSE c.first_name END,
        last_name = CASE WHEN $5 THEN EXCLUDED.last_name ELSE c.last_name END,
        alt_email = CASE WHEN $6 THEN EXCLUDED.alt_email ELSE c.alt_email END,
        country = CASE WHEN $7 THEN EXCLUDED.country ELSE c.country END,
        state = CASE WHEN $8 THEN EXCLUDED.state ELSE c.state END,
        city = CASE WHEN $9 THEN EXCLUDED.city ELSE c.city END,
        address_line1 = CASE WHEN $10 THEN EXCLUDED.address_line1 ELSE c.address_line1 END,
        address_line2 = CASE WHEN $11 THEN EXCLUDED.address_line2 ELSE c.address_line2 END,
        state_province_region = CASE WHEN $12 THEN EXCLUDED.state_province_region ELSE c.state_province_region END,
        postal_code = CASE WHEN $13 THEN EXCLUDED.postal_code ELSE c.postal_code END,
        custom = (c.custom - $14::text[]) || EXCLUDED.custom,
        updated_at = now()
    RETURNING %[1]s, (c.xmax::text = '0') AS inserted
), changed AS (
    INSERT INTO import_changed SELECT * FROM x WHERE $15
)
SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM x`

// importColumnsRead, set only by a test, runs once an import into a type
// with segments has read the columns they read.
var importColumnsRead func()

// importLockSpace is the first key of the advisory lock that serializes
// imports into one contact type ("impo").
const importLockSpace = 0x696d706f

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
	conn   conn
	userID int64
	now    time.Time // when the import began: enrollments start there
}

// BeginContactImport opens the import's transaction and staging table.
func (d *DB) BeginContactImport(ctx context.Context, userID int64) (*ContactImport, error) {
	ptx, err := d.Pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	tx := txConn{ptx}
	if _, err := tx.Exec(ctx, createStagingSQL); err != nil {
		tx.Rollback(ctx)
		return nil, err
	}
	return &ContactImport{tx: tx, conn: d.conn, userID: userID, now: d.now()}, nil
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
	// The locks first, in statements of their own: the checks after them
	// read a snapshot taken once any import into the type has committed.
	if _, err := im.tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, ($2 % 2147483647)::int)", importLockSpace, typeID); err != nil {
		return ImportResult{}, err
	}
	if err := db.New(im.tx).LockTypesForWriting(ctx, []int64{typeID}); err != nil {
		return ImportResult{}, err
	}
	var locked int64
	err := im.tx.QueryRow(ctx, `SELECT id FROM contact_types
		WHERE id = $1 AND user_id = $2 AND deleted_at IS NULL FOR SHARE`, typeID, im.userID).Scan(&locked)
	if errors.Is(err, pgx.ErrNoRows) {
		return ImportResult{}, errUnknownContactType
	}
	if err != nil {
		return ImportResult{}, err
	}
	var hasContacts, hasSegments, hasAutomations bool
	var fieldsLeft int
	if err := im.tx.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM contacts WHERE contact_type_id = $1 AND deleted_at IS NULL),
			EXISTS (SELECT 1 FROM segments WHERE contact_type_id = $1 AND deleted_at IS NULL),
			(SELECT count(*) FROM custom_fields WHERE user_id = $2 AND id = ANY($3::bigint[])),
			EXISTS (SELECT 1 FROM automations WHERE automation_for_table = 'contacts_' AND automation_for = $1
			        AND status = 1 AND deleted_at IS NULL)`,
		typeID, im.userID, src.CustomFieldIDs()).Scan(&hasContacts, &hasSegments, &fieldsLeft, &hasAutomations); err != nil {
		return ImportResult{}, err
	}
	// The changed contacts' ids are collected for the segments' refresh,
	// and for the live automations' enrollment when the type had contacts
	// (else every contact of the type is new).
	collect := hasSegments || (hasAutomations && hasContacts)
	cols := []string{"id"}
	if hasSegments {
		if cols, err = importColumns(ctx, db.New(im.tx), im.userID, typeID); err != nil {
			return ImportResult{}, err
		}
		if importColumnsRead != nil {
			importColumnsRead()
		}
	}
	if _, err := im.tx.Exec(ctx, fmt.Sprintf(createChangedSQL, returning(cols))); err != nil {
		return ImportResult{}, err
	}
	if fieldsLeft != len(src.CustomFieldIDs()) {
		// A custom field of the header was deleted during the upload.
		return ImportResult{}, mail.Invalid("file", "Line 1: a custom field of the header was deleted during the upload; upload the file again.")
	}
	// Sort the staged rows in memory, and plan with their real size.
	if _, err := im.tx.Exec(ctx, "SET LOCAL work_mem = '256MB'; ANALYZE contact_import"); err != nil {
		return ImportResult{}, err
	}
	res := ImportResult{Rows: src.Rows(), Skipped: src.Skipped()}
	update := updateImportedSQL
	if collect {
		update = collectChanged(update, cols, false)
	}
	columns := []any{src.Has(mail.ColFirstName), src.Has(mail.ColLastName), src.Has(mail.ColAltEmail), src.Has(mail.ColCountry),
		src.Has(mail.ColState), src.Has(mail.ColCity), src.Has(mail.ColAddressLine1), src.Has(mail.ColAddressLine2),
		src.Has(mail.ColStateProvinceRegion), src.Has(mail.ColPostalCode), src.CustomColumns()}
	if hasContacts {
		tag, err := im.tx.Exec(ctx, update, append([]any{typeID}, columns...)...)
		if err != nil {
			return ImportResult{}, fmt.Errorf("postgres: update imported contacts: %w", err)
		}
		res.Updated = tag.RowsAffected()
	}
	if res.Added, err = im.insert(ctx, typeID, hasContacts, collect, cols); errors.Is(err, errRaced) {
		var raced int64
		args := append(append([]any{im.userID, typeID, hasContacts}, columns...), collect)
		if err := im.tx.QueryRow(ctx, fmt.Sprintf(insertRacedSQL, returning(cols)), args...).Scan(&res.Added, &raced); err != nil {
			return ImportResult{}, fmt.Errorf("postgres: insert imported contacts: %w", err)
		}
		res.Updated += raced
	} else if err != nil {
		return ImportResult{}, err
	}
	if err := addCounts(ctx, db.New(im.tx), im.userID, countContacts, map[int64]int64{typeID: res.Added}); err != nil {
		return ImportResult{}, err
	}
	if res.Added > 0 && hasAutomations { // the new contacts join the type's live automations, in one statement
		if err := enrollImported(ctx, im.tx, im.userID, typeID, hasContacts, im.now); err != nil {
			return ImportResult{}, fmt.Errorf("postgres: enroll imported contacts: %w", err)
		}
	}
	if hasSegments {
		ch := changed{table: "import_changed", columns: cols, old: res.Updated > 0, at: im.now}
		if err := refreshSegments(ctx, im.tx, im.userID, []int64{typeID}, ch); err != nil {
			return ImportResult{}, fmt.Errorf("postgres: refresh segments after import: %w", err)
		}
	}

	payload, _ := json.Marshal(res)
	if err := db.New(im.tx).InsertEvent(ctx, db.InsertEventParams{
		UserID: im.userID, Kind: mail.EventContactsImported, SubjectType: "contact_type", SubjectID: &typeID, Payload: payload,
	}); err != nil {
		return ImportResult{}, err
	}
	if err := im.tx.Commit(ctx); err != nil {
		return ImportResult{}, err
	}
	if res.Added+res.Updated >= analyzeAfter {
		// Fresh statistics now rather than when autovacuum comes by: with
		// the old ones (say, "the account has one contact") the planner
		// walks all of an account's contacts to find one by id, and single
		// updates and deletes took 45 ms instead of 0.1 ms after a 100,000
		// row import. A failure here loses nothing.
		// SKIP_LOCKED: never queue behind another ANALYZE or a VACUUM.
		tables := "contacts"
		if hasSegments {
			tables += ", segment_members"
		}
		im.conn.Exec(context.WithoutCancel(ctx), "ANALYZE (SKIP_LOCKED) "+tables)
	}
	return res, nil
}

// analyzeAfter is how many contacts an import must add or change for it
// to refresh the planner's statistics itself.
const analyzeAfter = 10_000

// errRaced is an import's plain INSERT that met an address a single
// writer added during the merge.
var errRaced = errors.New("postgres: an address was added during the import")

// insert runs insertNewSQL in a savepoint, and answers how many contacts it
// added, or errRaced with the savepoint rolled back.
func (im *ContactImport) insert(ctx context.Context, typeID int64, hasContacts, hasSegments bool, cols []string) (int64, error) {
	if _, err := im.tx.Exec(ctx, "SAVEPOINT import_insert"); err != nil {
		return 0, err
	}
	insert := insertNewSQL
	if hasSegments {
		insert = collectChanged(insert, cols, true)
	}
	tag, err := im.tx.Exec(ctx, insert, im.userID, typeID, hasContacts)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		if _, err := im.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT import_insert"); err != nil {
			return 0, err
		}
		return 0, errRaced
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: insert imported contacts: %w", err)
	}
	_, err = im.tx.Exec(ctx, "RELEASE SAVEPOINT import_insert")
	return tag.RowsAffected(), err
}

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
