package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// A contact write re-evaluates every segment of the written contact types
// for the changed contacts in one statement (refreshSQL). A single write's
// contacts are read once by primary key (a lateral subquery kept whole by
// OFFSET 0, so the order holds however stale the statistics are); an
// import's are the rows its statements returned, kept in import_changed
// with the columns the type's segments read (importColumns), so none is
// looked up again (a million lookups took 9 of the 24 s the refresh of a
// million-row import took).
//
// Most segments are not evaluated contact by contact. A segment whose
// conditions all hold together (and, or a single condition) and one of
// which is a text field that "is" a value or "starts with" one has that
// condition as its guard: a contact can be a member only when the field's
// lower-case value (for "is") or its first n characters (for "starts
// with" an n-character value) equals the guard's lower-case value. Each
// changed contact makes one key per guarded field and prefix length of
// its type, and one hash join of those keys with every guard gives the
// candidate memberships: a type with 100 segments on first names costs a
// contact two or three keys and a probe, not 100 predicates. A candidate
// of a segment with more conditions than its guard is then checked against
// them all. The other segments (or of several conditions, no guard) are
// evaluated for each changed contact, each a CASE in one array.

// refreshSQL: %[1]s the CTEs of the changed contacts and of the
// guards, %[2]s the account, %[3]s the candidate and evaluated
// memberships (seg, id, new: true for a contact the write inserted, which
// is in no segment yet), %[4]s the segment ids (bigint[]), %[5]s when the
// write happened, %[6]s the DELETE of the memberships of the changed contacts that no
// longer match (goneImportSQL, goneWriteSQL or none), %[8]s how the
// matching contacts that are not new join (joinOldSQL, or none). Those leave,
// matching contacts join, those that joined are enrolled in their
// segment's live automations, and how many left and joined each segment
// is recorded in its kept count (%[7]s: addCountsSQL over delta).
const refreshSQL = `
WITH %[1]sm AS MATERIALIZED (
    %[3]s
), gone AS (
    %[6]s
), joined_new AS (
    -- a new contact is in no segment yet: no conflict to look for, and
    -- every row goes in (joined reads them from m)
    INSERT INTO segment_members (user_id, segment_id, contact_id)
    SELECT %[2]s, m.seg, m.id FROM m WHERE m.new
), joined_old AS (
    %[8]s
), joined AS (
    SELECT m.seg AS segment_id, m.id AS contact_id FROM m WHERE m.new
    UNION ALL
    SELECT * FROM joined_old
), enrolled AS (
    -- as membershipSQL's, for every segment at once
    INSERT INTO automation_enrollments (automation_id, user_id, contact_id, step, due_at)
    SELECT a.id, a.user_id, j.contact_id, f.id, %[5]s::timestamptz + schedule_wait(f.waiting_period, f.waiting_type)
    FROM automations a
    ` + firstSchedule + `
    JOIN joined j ON j.segment_id = a.automation_for
    WHERE a.automation_for_table = 'segments_' AND a.automation_for = ANY(%[4]s::bigint[]) AND a.user_id = %[2]s
      AND a.status = 1 AND a.deleted_at IS NULL
    FOR SHARE OF a
    ON CONFLICT (automation_id, contact_id) WHERE state = 0 DO NOTHING
), delta AS (
    SELECT segment_id AS key, sum(n)::bigint AS n FROM (
        SELECT segment_id, -count(*) AS n FROM gone GROUP BY segment_id
        UNION ALL
        SELECT segment_id, count(*) FROM joined GROUP BY segment_id
    ) t GROUP BY segment_id
), %[7]s`

// writeChangedSQL is a single write's changed contacts (%[1]s their ids,
// %[2]s whether the write inserted them), each once.
const writeChangedSQL = `ch AS MATERIALIZED (
    SELECT id, bool_and(new) AS new FROM (SELECT unnest(%[1]s::bigint[]) AS id, %[2]s::bool AS new) ch GROUP BY id
)`

// writeContactsSQL finds each of a single write's changed ids (ch) as a
// live contact of the account (%[1]s), by primary key, kept whole by
// OFFSET 0 so that order holds whatever the statistics say; it is c,
// with new. An import's changed contacts are import_changed's rows, or
// are found this way from them when a segment saved during the import
// reads a column import_changed lacks.
const writeContactsSQL = `ch CROSS JOIN LATERAL (SELECT c.*, ch.new FROM contacts c
        WHERE c.id = ch.id AND c.user_id = %[1]s AND c.deleted_at IS NULL OFFSET 0) c`

// goneImportSQL deletes the memberships of an import's changed contacts
// that existed before it (in %[1]s) and no longer match: those of all the
// segments joined with the changed contacts, in the DELETE's own scan (as
// a list of pairs the DELETE then looked up, it read and hashed every
// membership of the table a second time: 32 s for 100,000 updated
// contacts among 7 million memberships). An import that only inserted
// has none to look for.
const goneImportSQL = `DELETE FROM segment_members r
    USING import_changed ch
    WHERE ch.id = r.contact_id AND NOT ch.new AND r.segment_id = ANY(%[1]s::bigint[])
      AND NOT EXISTS (SELECT 1 FROM m WHERE m.id = r.contact_id AND m.seg = r.segment_id)
    RETURNING r.segment_id`

// goneWriteSQL is goneImportSQL for a single write's few ids: each changed
// contact's memberships are looked up by (segment, contact), whatever the
// statistics say (as a join, a plan made while the account's tables were
// small read every membership of the type's segments: 1.8 ms a write at
// the start of the segment load, 21-27 ms 30 s later).
const goneWriteSQL = `DELETE FROM segment_members r
    USING (SELECT x.segment_id, x.contact_id FROM ch
        CROSS JOIN LATERAL (
            SELECT r.segment_id, r.contact_id FROM segment_members r
            WHERE r.segment_id = ANY(%[1]s::bigint[]) AND r.contact_id = ch.id OFFSET 0) x
        WHERE NOT ch.new AND NOT EXISTS (SELECT 1 FROM m WHERE m.id = x.contact_id AND m.seg = x.segment_id)) x
    WHERE r.segment_id = x.segment_id AND r.contact_id = x.contact_id
    RETURNING r.segment_id`

// joinOldSQL adds the memberships of the changed contacts that existed
// before the write (%[1]s the account): those they already have stay.
const joinOldSQL = `INSERT INTO segment_members (user_id, segment_id, contact_id)
    SELECT %[1]s, m.seg, m.id FROM m WHERE NOT m.new
    ON CONFLICT (segment_id, contact_id) DO NOTHING
    RETURNING segment_id, contact_id`

// noneSQL stands for goneImportSQL and joinOldSQL when no changed contact
// existed before the write (an import that only inserted).
const noneSQL = `SELECT NULL::bigint AS segment_id, NULL::bigint AS contact_id WHERE false`

// guardsSQL are the CTEs of the guarded segments: g, each guard (%[1]s
// types, %[2]s field numbers, %[3]s true for "is", %[4]s values, %[5]s
// segments); lens, the keys a contact of each type makes; k, the changed
// contacts' keys (%[6]s the changed contacts, c; %[7]s the field numbers'
// lower-case values). k is materialized: inlined, the planner joined the
// guards with the type first and compared each contact with every guard of
// its type, 100 each: the refresh of 100,000 imported contacts took about
// 2.2 s instead of 0.7 s.
const guardsSQL = `g AS MATERIALIZED (
    SELECT g.typ, g.field, CASE WHEN g.exact THEN -1 ELSE char_length(lower(g.val)) END AS len, lower(g.val) AS key, g.seg
    FROM unnest(%[1]s::bigint[], %[2]s::int[], %[3]s::bool[], %[4]s::text[], %[5]s::bigint[]) g(typ, field, exact, val, seg)
), lens AS MATERIALIZED (
    SELECT DISTINCT typ, field, len FROM g
), k AS MATERIALIZED (
    SELECT c.id, c.new, l.typ, l.field, l.len, CASE WHEN l.len < 0 THEN v.v ELSE left(v.v, l.len) END AS key
    FROM %[6]s
    JOIN lens l ON l.typ = c.contact_type_id
    CROSS JOIN LATERAL (SELECT lower(CASE l.field %[7]s END) AS v) v
)`

// guardedSQL gives the guarded memberships: a key equal to a guard's, and
// (%[1]s, when some guarded segment has more conditions) the segment's
// whole predicate true of the contact.
const guardedSQL = `SELECT g.seg, k.id, k.new FROM k JOIN g USING (typ, field, len, key)%[1]s`

// evaluatedSQL gives the other segments' memberships: each changed
// contact (%[1]s, c) against every segment's CASE (%[2]s), the matches
// kept.
const evaluatedSQL = `SELECT v.seg, c.id, c.new
    FROM %[1]s
    CROSS JOIN LATERAL unnest(array_remove(ARRAY[%[2]s]::bigint[], NULL)) v(seg)`

// guard is the condition of conds that can guard a segment: a text
// field's "is" or "starts with", when every condition must hold (and, or
// a single one). Country names are matched by a subquery, so they guard
// nothing.
func guard(conds []mail.Condition, or bool) (mail.Condition, bool) {
	if or && len(conds) > 1 {
		return mail.Condition{}, false
	}
	for _, c := range conds {
		if c.Field.Kind == mail.KindText && c.Field.Column != "country" && len(c.Operands) == 1 &&
			(c.Operator == mail.OpIs || c.Operator == mail.OpStartsWith) {
			return c, true
		}
	}
	return mail.Condition{}, false
}

// refresh builds refreshSQL for segs over the changed contacts ch (an
// import's table or a write's ids).
func refresh(userID int64, segs []db.LiveSegmentsOfTypesRow, custom []mail.CustomField, ch changed) (string, []any) {
	p := &predicate{}
	uid := p.arg(userID)
	var ctes []string
	contacts := fmt.Sprintf(writeContactsSQL, uid)
	if ch.table == "" {
		ctes = append(ctes, fmt.Sprintf(writeChangedSQL, p.arg(ch.ids), p.arg(ch.new)))
	} else if cols := columnsRead(segs, custom); !slices.ContainsFunc(cols, func(c string) bool { return !slices.Contains(ch.columns, c) }) {
		contacts = ch.table + " c"
	} else {
		contacts = ch.table + " " + contacts
	}
	var (
		gTyp, gSeg         []int64
		gField             []int32
		gExact             []bool
		gVal               []string
		fields             = map[string]int32{}
		fieldCases         []string
		residual, evaluate []string
	)
	ids := make([]int64, len(segs))
	for i, s := range segs {
		ids[i] = s.ID
		conds := mail.StoredConditions(s.SelectField, s.SelectOperator, s.Value, custom)
		or := s.QueryType != nil && *s.QueryType == "or"
		g, ok := guard(conds, or)
		if !ok {
			evaluate = append(evaluate, "CASE WHEN c.contact_type_id = "+p.arg(s.ContactTypeID)+"::bigint AND "+
				p.compile(conds, or)+" THEN "+p.arg(s.ID)+"::bigint END")
			continue
		}
		name := g.Field.Column
		if name == "" {
			name = "custom:" + g.Field.Custom
		}
		n, seen := fields[name]
		if !seen {
			n = int32(len(fields))
			fields[name] = n
			fieldCases = append(fieldCases, "WHEN "+strconv.Itoa(int(n))+" THEN "+p.expr(g.Field))
		}
		gTyp, gField, gSeg = append(gTyp, s.ContactTypeID), append(gField, n), append(gSeg, s.ID)
		gExact, gVal = append(gExact, g.Operator == mail.OpIs), append(gVal, g.Operands[0].Text)
		if len(conds) > 1 {
			residual = append(residual, "WHEN "+p.arg(s.ID)+"::bigint THEN "+p.compile(conds, or))
		}
	}
	var parts []string
	if len(gSeg) > 0 {
		ctes = append(ctes, fmt.Sprintf(guardsSQL, p.arg(gTyp), p.arg(gField), p.arg(gExact), p.arg(gVal), p.arg(gSeg),
			contacts, strings.Join(fieldCases, " ")))
		var check string
		if len(residual) > 0 {
			check = "\n    CROSS JOIN LATERAL (SELECT * FROM contacts c WHERE c.id = k.id OFFSET 0) c" +
				"\n    WHERE CASE g.seg " + strings.Join(residual, "\n        ") + " ELSE TRUE END"
		}
		parts = append(parts, fmt.Sprintf(guardedSQL, check))
	}
	if len(evaluate) > 0 {
		parts = append(parts, fmt.Sprintf(evaluatedSQL, contacts, strings.Join(evaluate, ",\n        ")))
	}
	set := p.arg(ids)
	at := p.arg(ch.at)
	counts := fmt.Sprintf(addCountsSQL, "delta", uid, p.arg(countSegment))
	gone, joinOld := fmt.Sprintf(goneWriteSQL, set), fmt.Sprintf(joinOldSQL, uid)
	if ch.table != "" {
		gone = fmt.Sprintf(goneImportSQL, set)
		if !ch.old {
			gone, joinOld = noneSQL, noneSQL
		}
	}
	var head string
	for _, c := range ctes {
		head += c + ", "
	}
	return fmt.Sprintf(refreshSQL, head, uid, strings.Join(parts, "\n    UNION ALL\n    "), set, at,
		gone, counts, joinOld), p.args
}

// columnsRead are the contacts columns that segs' conditions read, besides
// id and contact_type_id, sorted.
func columnsRead(segs []db.LiveSegmentsOfTypesRow, custom []mail.CustomField) []string {
	read := map[string]bool{}
	for _, s := range segs {
		for _, c := range mail.StoredConditions(s.SelectField, s.SelectOperator, s.Value, custom) {
			switch {
			case c.Field.Column != "":
				read[c.Field.Column] = true
			case c.Field.Custom != "":
				read["custom"] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(read))
}

// importColumns are the contacts columns an import into typeID keeps in
// import_changed for the refresh of the type's segments: id,
// contact_type_id and those the segments read.
func importColumns(ctx context.Context, q *db.Queries, userID, typeID int64) ([]string, error) {
	segs, err := q.LiveSegmentsOfTypes(ctx, db.LiveSegmentsOfTypesParams{UserID: userID, TypeIds: []int64{typeID}})
	if err != nil {
		return nil, err
	}
	custom, err := segmentsCustomFields(ctx, q, userID, segs)
	if err != nil {
		return nil, err
	}
	return append([]string{"id", "contact_type_id"}, columnsRead(segs, custom)...), nil
}
