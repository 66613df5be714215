package postgres

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mailroom/mailroom/internal/mail"
)

// Segment conditions are chosen at run time, so their WHERE clause is built
// here by hand: columns and operators come only from the whitelists below,
// every value is a $n parameter. The predicate reads a contact as "c".

// reservedColumns maps a reserved field to its text expression.
var reservedColumns = map[string]string{
	"email":                 "c.email",
	"first_name":            "c.first_name",
	"last_name":             "c.last_name",
	"alt_email":             "COALESCE(c.alt_email, '')",
	"country":               "COALESCE((SELECT co.name FROM countries co WHERE co.id = c.country), '')",
	"state":                 "c.state",
	"city":                  "c.city",
	"address_line1":         "c.address_line1",
	"address_line2":         "c.address_line2",
	"state_province_region": "c.state_province_region",
	"postal_code":           "c.postal_code",
}

// predicate compiles conditions into one boolean SQL expression, appending
// their values to args (whose length gives the next $n).
type predicate struct {
	args []any
}

func (p *predicate) arg(v any) string {
	p.args = append(p.args, v)
	return "$" + strconv.Itoa(len(p.args))
}

// compile returns the conditions joined by AND (or OR when or).
func (p *predicate) compile(conds []mail.Condition, or bool) string {
	if len(conds) == 0 {
		return "TRUE"
	}
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = "(" + p.condition(c) + ")"
	}
	sep := " AND "
	if or {
		sep = " OR "
	}
	return "(" + strings.Join(parts, sep) + ")"
}

// expr is the SQL expression of a field's value: text (never NULL),
// numeric or timestamp (NULL when the contact has none).
func (p *predicate) expr(f mail.SegmentField) string {
	switch {
	case f.Column == "created_at":
		return "(c.created_at AT TIME ZONE 'UTC')"
	case f.Column != "":
		return reservedColumns[f.Column]
	case f.Custom == "":
		// A custom field deleted since: its values are gone.
		switch f.Kind {
		case mail.KindNumber:
			return "NULL::numeric"
		case mail.KindDatetime:
			return "NULL::timestamp"
		}
		return "''"
	}
	key := p.arg(f.Custom)
	switch f.Kind {
	case mail.KindNumber:
		return fmt.Sprintf("(CASE WHEN jsonb_typeof(c.custom -> %[1]s::text) = 'number' THEN (c.custom ->> %[1]s::text)::numeric END)", key)
	case mail.KindDatetime:
		return fmt.Sprintf(`(CASE WHEN (c.custom ->> %[1]s::text) ~ '%[2]s' THEN (c.custom ->> %[1]s::text)::timestamp END)`, key, storedDatetimeRE)
	}
	return fmt.Sprintf("COALESCE(c.custom ->> %s::text, '')", key)
}

// storedDatetimeRE matches exactly the YYYY-MM-DDTHH:MM values PostgreSQL
// casts to timestamp without an error: years 0001-9999 (year 0000 is out of
// range), the days each month has, February 29 in leap years only, hours
// 00-23. A custom datetime value is compared only when it matches, so a
// value stored some other way (before a check, or by hand) reads as absent
// and can never make a segment query fail. ASCII digits, as \d may take
// other scripts' digits in some locales.
const storedDatetimeRE = `^(?!0000)(` +
	`[0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))` +
	`|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29` +
	`)T([01][0-9]|2[0-3]):[0-5][0-9]$`

// contains is "c.custom @> {field: v} AND " for a custom field, so the
// GIN index on custom can find an exact value; "" for other fields. v is
// an expression already bound: bind a parameter for it only when the field
// is custom, or the statement has a parameter no $n names.
func (p *predicate) contains(f mail.SegmentField, v string) string {
	if f.Custom == "" {
		return ""
	}
	return "c.custom @> jsonb_build_object(" + p.arg(f.Custom) + "::text, " + v + ") AND "
}

func (p *predicate) condition(c mail.Condition) string {
	if c.Operator == "" {
		return "FALSE"
	}
	e := p.expr(c.Field)
	switch c.Field.Kind {
	case mail.KindNumber:
		return p.number(e, c)
	case mail.KindDatetime:
		return p.datetime(e, c)
	}
	return p.text(e, c)
}

func (p *predicate) text(e string, c mail.Condition) string {
	lower := "lower(" + e + ")"
	switch c.Operator {
	case mail.OpEmpty:
		return e + " = ''"
	case mail.OpNotEmpty:
		return e + " <> ''"
	}
	v := "lower(" + p.arg(c.Operands[0].Text) + "::text)"
	if c.Field.Column == "country" && (c.Operator == mail.OpIs || c.Operator == mail.OpIsNot) {
		// A country is named by id, ISO 3166-1 alpha-2 code or name.
		in := "COALESCE(c.country IN (SELECT co.id FROM countries co WHERE co.id::text = " + v +
			" OR lower(co.iso2) = " + v + " OR lower(co.name) = " + v + "), false)"
		if c.Operator == mail.OpIsNot {
			return "NOT " + in
		}
		return in
	}
	switch c.Operator {
	case mail.OpIs:
		return lower + " = " + v
	case mail.OpIsNot:
		return lower + " <> " + v
	case mail.OpContains:
		return "strpos(" + lower + ", " + v + ") > 0"
	case mail.OpNotContains:
		return "strpos(" + lower + ", " + v + ") = 0"
	case mail.OpStartsWith:
		return "starts_with(" + lower + ", " + v + ")"
	case mail.OpEndsWith:
		return "right(" + lower + ", char_length(" + v + ")) = " + v
	}
	return "FALSE"
}

func (p *predicate) number(e string, c mail.Condition) string {
	num := func(i int) string {
		return p.arg(strconv.FormatFloat(c.Operands[i].Number, 'g', -1, 64)) + "::numeric"
	}
	switch c.Operator {
	case mail.OpEmpty:
		return e + " IS NULL"
	case mail.OpNotEmpty:
		return e + " IS NOT NULL"
	case mail.OpIs:
		v := num(0)
		return p.contains(c.Field, v) + e + " = " + v
	case mail.OpIsNot:
		return e + " IS DISTINCT FROM " + num(0)
	case mail.OpGreater:
		return e + " > " + num(0)
	case mail.OpLess:
		return e + " < " + num(0)
	case mail.OpBetween:
		return e + " BETWEEN " + num(0) + " AND " + num(1)
	}
	return "FALSE"
}

// datetime compares timestamps in UTC. A value given as a date means the
// whole day: "is" that day, "after" it, "between" it inclusive.
func (p *predicate) datetime(e string, c mail.Condition) string {
	// Each operand is one parameter: at is its instant, end the first
	// instant after it (the next day for a date, else the next minute).
	var at, end [2]string
	for i, o := range c.Operands {
		if c.Operator == mail.OpWithinLastDay {
			break // its operand is a number of days
		}
		at[i] = p.arg(o.Time.Format("2006-01-02 15:04:05")) + "::timestamp"
		if o.Day {
			end[i] = "(" + at[i] + " + interval '1 day')"
		} else {
			end[i] = "(" + at[i] + " + interval '1 minute')"
		}
	}
	switch c.Operator {
	case mail.OpEmpty:
		return e + " IS NULL"
	case mail.OpNotEmpty:
		return e + " IS NOT NULL"
	case mail.OpIs:
		within := e + " >= " + at[0] + " AND " + e + " < " + end[0]
		if c.Operands[0].Day {
			return within
		}
		if c.Field.Custom == "" {
			return within
		}
		// A custom value to the minute is stored exactly (YYYY-MM-DDTHH:MM).
		return p.contains(c.Field, p.arg(c.Operands[0].Time.Format("2006-01-02T15:04"))+"::text") + within
	case mail.OpIsNot:
		return "NOT COALESCE(" + e + " >= " + at[0] + " AND " + e + " < " + end[0] + ", false)"
	case mail.OpBefore:
		return e + " < " + at[0]
	case mail.OpAfter:
		return e + " >= " + end[0]
	case mail.OpBetween:
		return e + " >= " + at[0] + " AND " + e + " < " + end[1]
	case mail.OpWithinLastDay:
		days := p.arg(int32(c.Operands[0].Days))
		return e + " >= (now() AT TIME ZONE 'UTC') - " + days + "::int * interval '1 day' AND " + e + " <= (now() AT TIME ZONE 'UTC')"
	}
	return "FALSE"
}
