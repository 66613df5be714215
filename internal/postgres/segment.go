package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// A segment's members that are contacts are materialized in
// segment_recipients: rebuilt whole when the segment is made or changed,
// and re-evaluated for just the changed contacts after every contact write
// (refreshSegments), in the writer's transaction. A rebuild holds its
// contact type FOR UPDATE and writers hold theirs FOR SHARE, so each sees
// the other's work: no contact is evaluated against conditions that are
// being replaced.

// CreateSegment stores a segment and fills it with the matching contacts.
func (d *DB) CreateSegment(ctx context.Context, userID int64, in mail.SegmentInput) (int64, error) {
	var id int64
	err := d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		var err error
		id, err = q.CreateSegment(ctx, db.CreateSegmentParams{
			SegmentName: in.Name, SelectField: in.Fields, SelectOperator: in.Operators, Value: nonNilStrings(in.Values),
			QueryType: in.QueryType, ContactTypeID: in.ContactTypeID, UserID: userID,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return errUnknownContactType
		}
		if err != nil {
			return err
		}
		_, err = rebuildSegment(ctx, tx, userID, id, in.ContactTypeID, in.Conditions, in.Or())
		return err
	})
	return id, err
}

// UpdateSegment changes a segment and rebuilds its contact members.
func (d *DB) UpdateSegment(ctx context.Context, userID, id int64, in mail.SegmentInput) error {
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		old, err := q.LockSegment(ctx, db.LockSegmentParams{ID: id, UserID: userID})
		if err != nil {
			return translate(err)
		}
		if err := q.LockContactTypesForRebuild(ctx, db.LockContactTypesForRebuildParams{
			Ids: []int64{old.ContactTypeID, in.ContactTypeID}, UserID: userID}); err != nil {
			return err
		}
		n, err := q.UpdateSegment(ctx, db.UpdateSegmentParams{
			SegmentName: in.Name, SelectField: in.Fields, SelectOperator: in.Operators, Value: nonNilStrings(in.Values),
			QueryType: in.QueryType, ID: id, UserID: userID, ContactTypeID: in.ContactTypeID,
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return errUnknownContactType
		}
		_, err = rebuildSegment(ctx, tx, userID, id, in.ContactTypeID, in.Conditions, in.Or())
		return err
	})
}

// SegmentDetails returns one live segment of the account.
func (d *DB) SegmentDetails(ctx context.Context, userID, id int64) (mail.Segment, error) {
	r, err := d.q.SegmentByID(ctx, db.SegmentByIDParams{ID: id, UserID: userID})
	if err != nil {
		return mail.Segment{}, translate(err)
	}
	return mail.Segment{ID: r.ID, UserID: r.UserID, ContactTypeID: r.ContactTypeID, Name: r.SegmentName,
		Fields: r.SelectField, Operators: r.SelectOperator, Values: r.Value, QueryType: r.QueryType,
		DeletedAt: r.DeletedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// Segments returns the account's live segments with their recipient
// counts: all when page is nil, else that page and the total.
func (d *DB) Segments(ctx context.Context, userID int64, page *mail.Page) ([]mail.Segment, int64, error) {
	arg := db.ListSegmentsParams{UserID: userID}
	if page != nil {
		arg.RowLimit, arg.RowOffset = &page.Size, page.Offset()
	}
	rows, err := d.q.ListSegments(ctx, arg)
	if err != nil {
		return nil, 0, err
	}
	out := make([]mail.Segment, len(rows))
	for i, r := range rows {
		out[i] = mail.Segment{ID: r.ID, UserID: r.UserID, ContactTypeID: r.ContactTypeID, Name: r.SegmentName,
			Fields: r.SelectField, Operators: r.SelectOperator, Values: r.Value, QueryType: r.QueryType,
			DeletedAt: r.DeletedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Recipients: r.SegmentEmailsCount}
	}
	total := int64(len(out))
	if page != nil {
		if total, err = d.q.CountSegments(ctx, userID); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// DeleteSegment soft-deletes a segment and drops its recipients.
func (d *DB) DeleteSegment(ctx context.Context, userID, id int64) error {
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		n, err := q.DeleteSegment(ctx, db.DeleteSegmentParams{ID: id, UserID: userID})
		if err != nil {
			return err
		}
		if n == 0 {
			return mail.NotFound()
		}
		gone, err := q.DeleteSegmentRecipientsOf(ctx, id)
		if err != nil {
			return err
		}
		return addCounts(ctx, q, userID, countSegment, map[int64]int64{id: -gone})
	})
}

// StoreSegmentRecipient adds an address to a segment by hand (or renames
// the one stored with that address).
func (d *DB) StoreSegmentRecipient(ctx context.Context, userID int64, in mail.SegmentRecipientInput) error {
	return translate(d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		r, err := q.StoreSegmentRecipient(ctx, db.StoreSegmentRecipientParams{
			FirstName: in.FirstName, LastName: in.LastName, Email: string(in.Email), SegmentID: in.SegmentID, UserID: userID,
		})
		if err != nil || !r.Inserted {
			return err
		}
		return addCounts(ctx, q, userID, countSegment, map[int64]int64{in.SegmentID: 1})
	}))
}

// DeleteSegmentRecipient removes one recipient of a live segment.
func (d *DB) DeleteSegmentRecipient(ctx context.Context, userID, id int64) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		segs, err := q.DeleteSegmentRecipient(ctx, db.DeleteSegmentRecipientParams{ID: id, UserID: userID})
		if err != nil {
			return err
		}
		if len(segs) == 0 {
			return mail.NotFound()
		}
		return addCounts(ctx, q, userID, countSegment, map[int64]int64{segs[0]: -1})
	})
}

// listSegmentRecipientsSQL reads a segment's recipients: the page's ids
// from segment_recipients_segment alone (an index-only walk, however far
// the offset), then those rows. A member whose contact is deleted (never
// kept: deletes take their contacts out of every segment) is read but not
// listed.
var listSegmentRecipientsSQL = `
SELECT r.id, r.user_id, r.segment_id, r.contact_id,
    COALESCE(c.first_name, r.first_name, ''), COALESCE(c.last_name, r.last_name, ''), COALESCE(c.email, r.email, ''),
    c.country, c.state, c.city, c.address_line1, r.created_at, r.updated_at,
    r.contact_id IS NULL OR c.deleted_at IS NULL
FROM (SELECT id FROM segment_recipients WHERE segment_id = $1 AND ` + keyset("id", 1) + `) page
JOIN segment_recipients r ON r.id = page.id
LEFT JOIN contacts c ON c.id = r.contact_id
ORDER BY r.id`

// SegmentRecipients calls fn with each recipient of a live segment of the
// account, in id order; ENOTFOUND when there is no such segment.
func (d *DB) SegmentRecipients(ctx context.Context, userID, segmentID int64, page *mail.Page, fn func(*mail.SegmentRecipient) error) (total int64, err error) {
	ok, err := d.q.SegmentExists(ctx, db.SegmentExistsParams{ID: segmentID, UserID: userID})
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, mail.NotFound()
	}
	if page != nil {
		if total, err = d.count(ctx, userID, countSegment, segmentID); err != nil {
			return 0, err
		}
	}
	err = streamList(ctx, d, listSegmentRecipientsSQL, []any{segmentID}, page, func(rows pgx.Rows, r *mail.SegmentRecipient) error {
		var live bool
		if err := rows.Scan(&r.ID, &r.UserID, &r.SegmentID, &r.ContactID, &r.FirstName, &r.LastName, &r.Email,
			&r.Country, &r.State, &r.City, &r.AddressLine1, &r.CreatedAt, &r.UpdatedAt, &live); err != nil {
			return err
		}
		if !live {
			return errSkipRow
		}
		return nil
	}, func(r *mail.SegmentRecipient) int64 { return r.ID }, fn)
	return total, err
}

// membershipSQL re-evaluates one segment for a set of contacts (src: a
// subquery of contact ids, or all the type's contacts when empty): members
// that no longer match leave, matching contacts join. It answers how many
// left and joined.
const membershipSQL = `
WITH m AS MATERIALIZED (
    SELECT c.id FROM contacts c
    WHERE c.contact_type_id = %[1]s AND c.user_id = %[2]s AND c.deleted_at IS NULL %[4]s AND %[5]s
), gone AS (
    DELETE FROM segment_recipients r
    WHERE r.segment_id = %[3]s AND r.contact_id IS NOT NULL %[6]s
      AND NOT EXISTS (SELECT 1 FROM m WHERE m.id = r.contact_id)
    RETURNING r.contact_id
), joined AS (
    INSERT INTO segment_recipients (user_id, segment_id, contact_id)
    SELECT %[2]s, %[3]s, m.id FROM m
    ON CONFLICT (segment_id, contact_id) WHERE contact_id IS NOT NULL DO NOTHING
    RETURNING contact_id
)
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM joined)`

// changed names the contacts a write touched: ids, or (for a CSV import)
// the temporary table of ids; the zero value means every contact. deleted
// says the ids were just deleted: they leave every segment, with no
// condition to evaluate.
type changed struct {
	ids     []int64
	table   string
	deleted bool
}

// membership builds membershipSQL for one segment over the changed contacts.
func membership(userID, segmentID, typeID int64, conds []mail.Condition, or bool, ch changed) (string, []any) {
	p := &predicate{}
	ct, uid, seg := p.arg(typeID), p.arg(userID), p.arg(segmentID)
	var onContacts, onMembers string
	switch {
	case ch.table != "":
		onContacts = "AND c.id IN (SELECT id FROM " + ch.table + ")"
		onMembers = "AND r.contact_id IN (SELECT id FROM " + ch.table + ")"
	case ch.ids != nil:
		set := p.arg(ch.ids)
		onContacts = "AND c.id = ANY(" + set + "::bigint[])"
		onMembers = "AND r.contact_id = ANY(" + set + "::bigint[])"
	}
	pred := p.compile(conds, or)
	return fmt.Sprintf(membershipSQL, ct, uid, seg, onContacts, pred, onMembers), p.args
}

// rebuildSegment re-evaluates a segment over its whole contact type.
func rebuildSegment(ctx context.Context, tx pgx.Tx, userID, segmentID, typeID int64, conds []mail.Condition, or bool) (joined int64, err error) {
	if _, err := tx.Exec(ctx, "SET LOCAL work_mem = '256MB'"); err != nil {
		return 0, err
	}
	sql, args := membership(userID, segmentID, typeID, conds, or, changed{})
	var gone int64
	if err = tx.QueryRow(ctx, sql, args...).Scan(&gone, &joined); err != nil {
		return 0, err
	}
	return joined, addCounts(ctx, db.New(tx), userID, countSegment, map[int64]int64{segmentID: joined - gone})
}

// refreshSegments re-evaluates, for the changed contacts, every live
// segment of the account over the given contact types (the contacts' types
// before and after the write), all in one round trip, and records how many
// left and joined each. Every contact write calls it in its own
// transaction. Deleted contacts just leave: one statement for all the
// segments, the ids joined as a set (a bulk delete's 100,000 ids cost no
// planning per id, as = ANY would).
func refreshSegments(ctx context.Context, tx pgx.Tx, userID int64, typeIDs []int64, ch changed) error {
	if len(typeIDs) == 0 || (ch.table == "" && len(ch.ids) == 0) {
		return nil
	}
	q := db.New(tx)
	segs, err := q.LiveSegmentsOfTypes(ctx, db.LiveSegmentsOfTypesParams{UserID: userID, TypeIds: unique(typeIDs)})
	if err != nil || len(segs) == 0 {
		return err
	}
	delta := make(map[int64]int64, len(segs))
	if ch.deleted {
		ids := make([]int64, len(segs))
		for i, s := range segs {
			ids[i] = s.ID
		}
		left, err := q.LeaveSegments(ctx, db.LeaveSegmentsParams{ContactIds: ch.ids, SegmentIds: ids})
		if err != nil {
			return err
		}
		for _, r := range left {
			delta[r.SegmentID] = -r.N
		}
		return addCounts(ctx, q, userID, countSegment, delta)
	}
	custom, err := customFieldDefs(ctx, q, userID)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, s := range segs {
		conds := mail.StoredConditions(s.SelectField, s.SelectOperator, s.Value, custom)
		sql, args := membership(userID, s.ID, s.ContactTypeID, conds, s.QueryType != nil && *s.QueryType == "or", ch)
		b.Queue(sql, args...).QueryRow(func(row pgx.Row) error {
			var gone, joined int64
			if err := row.Scan(&gone, &joined); err != nil {
				return err
			}
			delta[s.ID] = joined - gone
			return nil
		})
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return addCounts(ctx, q, userID, countSegment, delta)
}

// rebuildSegmentsUsingField rebuilds the segments with a condition on a
// custom field (after the field was deleted and its values with it).
func rebuildSegmentsUsingField(ctx context.Context, tx pgx.Tx, userID, fieldID int64) error {
	q := db.New(tx)
	segs, err := q.SegmentsUsingField(ctx, db.SegmentsUsingFieldParams{UserID: userID, FieldID: strconv.FormatInt(fieldID, 10)})
	if err != nil || len(segs) == 0 {
		return err
	}
	custom, err := customFieldDefs(ctx, q, userID)
	if err != nil {
		return err
	}
	for _, s := range segs {
		conds := mail.StoredConditions(s.SelectField, s.SelectOperator, s.Value, custom)
		if _, err := rebuildSegment(ctx, tx, userID, s.ID, s.ContactTypeID, conds, s.QueryType != nil && *s.QueryType == "or"); err != nil {
			return err
		}
	}
	return nil
}

// CustomFieldDefs are the account's custom field definitions, oldest first.
func (d *DB) CustomFieldDefs(ctx context.Context, userID int64) ([]mail.CustomField, error) {
	return customFieldDefs(ctx, d.q, userID)
}

// customFieldDefs are the account's custom field definitions, read with q.
func customFieldDefs(ctx context.Context, q *db.Queries, userID int64) ([]mail.CustomField, error) {
	rows, err := q.ListCustomFields(ctx, db.ListCustomFieldsParams{UserID: userID})
	if err != nil {
		return nil, err
	}
	out := make([]mail.CustomField, len(rows))
	for i, r := range rows {
		out[i] = mail.CustomField{ID: r.ID, Name: r.FieldName, Type: r.FieldType}
	}
	return out, nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
