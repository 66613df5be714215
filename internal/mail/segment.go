package mail

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Segment operators.
const (
	OpIs            = "is"
	OpIsNot         = "is not"
	OpContains      = "contains"
	OpNotContains   = "does not contain"
	OpStartsWith    = "starts with"
	OpEndsWith      = "ends with"
	OpEmpty         = "is empty"
	OpNotEmpty      = "is not empty"
	OpGreater       = "is greater than"
	OpLess          = "is less than"
	OpBefore        = "is before"
	OpAfter         = "is after"
	OpBetween       = "is between"
	OpWithinLastDay = "is within the last"
)

// CreatedAtFieldID is the field id segments use for a contact's created_at.
const CreatedAtFieldID = 0

// Kinds of value a segment condition compares.
const (
	KindText     = "text"
	KindNumber   = "number"
	KindDatetime = "datetime"
)

// operatorsOf are the operators each kind of field takes.
var operatorsOf = map[string][]string{
	KindText:     {OpIs, OpIsNot, OpContains, OpNotContains, OpStartsWith, OpEndsWith, OpEmpty, OpNotEmpty},
	KindNumber:   {OpIs, OpIsNot, OpGreater, OpLess, OpBetween, OpEmpty, OpNotEmpty},
	KindDatetime: {OpIs, OpIsNot, OpBefore, OpAfter, OpBetween, OpWithinLastDay, OpEmpty, OpNotEmpty},
}

// Arity is the number of values an operator takes.
func Arity(op string) int {
	switch op {
	case OpEmpty, OpNotEmpty:
		return 0
	case OpBetween:
		return 2
	}
	return 1
}

// SegmentField is what a condition's field id names: a reserved column
// (Column), created_at, or a custom field (Custom, by name).
type SegmentField struct {
	ID     int64
	Kind   string
	Column string // reserved field name, or "created_at"
	Custom string // custom field name
}

// Operand is one typed condition value.
type Operand struct {
	Text   string    // KindText (for country with is / is not: an id, ISO code or name)
	Number float64   // KindNumber
	Time   time.Time // KindDatetime (UTC)
	Day    bool      // KindDatetime given as a date: the whole day
	Days   int       // OpWithinLastDay
}

// Condition is one validated segment condition.
type Condition struct {
	Field    SegmentField
	Operator string
	Operands []Operand
}

// SegmentInput is a validated segment create or update. Fields, Operators
// and Values are kept as given for display; Conditions are what compiles.
type SegmentInput struct {
	ContactTypeID int64
	Name          string
	Fields        []string
	Operators     []string
	Values        []string // flattened: each condition's operands in order
	QueryType     *string  // nil: "and", as given
	Conditions    []Condition
}

// Or reports whether the conditions combine with "or".
func (s SegmentInput) Or() bool { return s.QueryType != nil && *s.QueryType == "or" }

// SegmentForm is a segment write as received.
type SegmentForm struct {
	ContactTypeID string
	Name          string
	Fields        []string
	Operators     []string
	Values        [][]string // per condition: its operands (a,b split for between)
	QueryType     string
}

// ParseSegment validates a segment. fields are the account's custom fields.
func ParseSegment(f SegmentForm, fields []CustomField) (SegmentInput, error) {
	var p Problems
	in := SegmentInput{Name: strings.TrimSpace(f.Name)}
	if v := strings.TrimSpace(f.ContactTypeID); v == "" {
		p.Required("contact_type_id")
	} else if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
		p.Add("contact_type_id", "The contact type id must be an integer.")
	} else {
		in.ContactTypeID = n
	}
	switch {
	case in.Name == "":
		p.Required("segment_name")
	default:
		p.checkLine("segment_name", in.Name)
	}
	if len(f.Fields) == 0 {
		p.Required("select_field")
	}
	if len(f.Operators) == 0 {
		p.Required("select_operator")
	}
	switch qt := strings.ToLower(strings.TrimSpace(f.QueryType)); qt {
	case "":
	case "and", "or":
		in.QueryType = &qt
	default:
		p.Add("query_type", "The selected query type is invalid.")
	}
	if len(f.Fields) > 0 && len(f.Operators) > 0 && len(f.Fields) != len(f.Operators) {
		p.Add("select_operator", "The select operator must have as many items as the select field.")
	}
	if len(f.Fields) > 100 {
		p.Add("select_field", "The select field may not have more than 100 items.")
	}
	if err := p.Err(); err != nil {
		return in, err
	}

	needValues := false
	for _, op := range f.Operators {
		if Arity(strings.TrimSpace(op)) > 0 {
			needValues = true
		}
	}
	if needValues && len(f.Values) == 0 {
		p.Required("value")
		return in, p.Err()
	}
	for i := range f.Fields {
		field, err := parseSegmentField(f.Fields[i], fields)
		if err != nil {
			p.Add(fmt.Sprintf("select_field.%d", i), err.Error())
			continue
		}
		op := strings.ToLower(strings.TrimSpace(f.Operators[i]))
		if !contains(operatorsOf[field.Kind], op) {
			p.Add(fmt.Sprintf("select_operator.%d", i), fmt.Sprintf("The operator %q does not apply to this field.", f.Operators[i]))
			continue
		}
		var raw []string
		if i < len(f.Values) {
			raw = f.Values[i]
		}
		operands, display, err := parseOperands(field, op, raw)
		if err != nil {
			p.Add(fmt.Sprintf("value.%d", i), err.Error())
			continue
		}
		in.Fields = append(in.Fields, strconv.FormatInt(field.ID, 10))
		in.Operators = append(in.Operators, op)
		in.Values = append(in.Values, display...)
		in.Conditions = append(in.Conditions, Condition{Field: field, Operator: op, Operands: operands})
	}
	return in, p.Err()
}

func parseSegmentField(v string, fields []CustomField) (SegmentField, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return SegmentField{}, messagef("The selected field is invalid.")
	}
	if id == CreatedAtFieldID {
		return SegmentField{ID: 0, Kind: KindDatetime, Column: "created_at"}, nil
	}
	for _, r := range ReservedFields {
		if r.ID == id {
			return SegmentField{ID: id, Kind: KindText, Column: r.Name}, nil
		}
	}
	for _, c := range fields {
		if c.ID == id {
			kind := KindText
			switch c.Type {
			case FieldNumber:
				kind = KindNumber
			case FieldDatetime:
				kind = KindDatetime
			}
			return SegmentField{ID: id, Kind: kind, Custom: c.Name}, nil
		}
	}
	return SegmentField{}, messagef("The selected field is invalid.")
}

// ReservedFieldID reports whether id names created_at or a reserved field,
// which resolve without the account's custom fields.
func ReservedFieldID(id int64) bool {
	if id == CreatedAtFieldID {
		return true
	}
	for _, r := range ReservedFields {
		if r.ID == id {
			return true
		}
	}
	return false
}

// SegmentFieldByID resolves a stored condition's field id against the
// account's current custom fields; a deleted custom field resolves to a
// custom field with no name (it matches as an absent value).
func SegmentFieldByID(id int64, fields []CustomField) SegmentField {
	f, err := parseSegmentField(strconv.FormatInt(id, 10), fields)
	if err != nil {
		return SegmentField{ID: id, Kind: KindText}
	}
	return f
}

// Date and time forms a segment value may take.
var timeLayouts = []struct {
	layout string
	day    bool
}{
	{"2006-01-02", true},
	{"2006-01-02T15:04", false},
	{"2006-01-02 15:04", false},
	{"2006-01-02T15:04:05", false},
	{"2006-01-02 15:04:05", false},
	{time.RFC3339, false},
}

// InYearRange reports whether t falls in the years 1 to 9999 (of its own
// location: convert to UTC first), the dates PostgreSQL's timestamp and
// its ISO text form share: year 0 is out of range there, and a year past
// 9999 would not be YYYY.
func InYearRange(t time.Time) bool {
	y := t.Year()
	return y >= 1 && y <= 9999
}

func parseOperands(f SegmentField, op string, raw []string) ([]Operand, []string, error) {
	want := Arity(op)
	vals := make([]string, 0, len(raw))
	for _, v := range raw {
		vals = append(vals, strings.TrimSpace(v))
	}
	if want == 2 && len(vals) == 1 && strings.Contains(vals[0], ",") {
		a, b, _ := strings.Cut(vals[0], ",")
		vals = []string{strings.TrimSpace(a), strings.TrimSpace(b)}
	}
	if want == 0 {
		return nil, nil, nil
	}
	if len(vals) != want || (want == 1 && vals[0] == "") || (want == 2 && (vals[0] == "" || vals[1] == "")) {
		if want == 2 {
			return nil, nil, messagef("The value must hold two values for %q.", op)
		}
		return nil, nil, messagef("The value field is required.")
	}
	out := make([]Operand, want)
	for i, v := range vals {
		if utf8.RuneCountInString(v) > 1000 {
			return nil, nil, messagef("The value may not be greater than 1000 characters.")
		}
		switch {
		case op == OpWithinLastDay:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 36500 {
				return nil, nil, messagef("The value must be a number of days.")
			}
			out[i].Days = n
		case f.Kind == KindNumber:
			n, err := strconv.ParseFloat(v, 64)
			if err != nil || n != n || n > 1e300 || n < -1e300 {
				return nil, nil, messagef("The value must be a number.")
			}
			out[i].Number = n
		case f.Kind == KindDatetime:
			ok := false
			for _, l := range timeLayouts {
				if t, err := time.Parse(l.layout, v); err == nil {
					out[i].Time, out[i].Day, ok = t.UTC(), l.day, true
					break
				}
			}
			if !ok {
				return nil, nil, messagef("The value must be a date (YYYY-MM-DD) or a date and time (YYYY-MM-DDTHH:MM).")
			}
			if !InYearRange(out[i].Time) {
				return nil, nil, messagef("The value must be a date from year 0001 to 9999 (UTC).")
			}
		default:
			if !utf8.ValidString(v) {
				return nil, nil, messagef("The value must be UTF-8 text.")
			}
			if strings.IndexByte(v, 0) >= 0 {
				return nil, nil, messagef("The value may not contain a NUL character.")
			}
			out[i].Text = v
		}
	}
	if op == OpBetween {
		if f.Kind == KindNumber && out[0].Number > out[1].Number {
			out[0], out[1] = out[1], out[0]
			vals[0], vals[1] = vals[1], vals[0]
		}
		if f.Kind == KindDatetime && out[0].Time.After(out[1].Time) {
			out[0], out[1] = out[1], out[0]
			vals[0], vals[1] = vals[1], vals[0]
		}
	}
	return out, vals, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// SegmentRecipientInput is a recipient stored by hand.
type SegmentRecipientInput struct {
	SegmentID int64
	FirstName string
	LastName  string
	Email     Email
}

// ParseSegmentRecipient validates a hand-stored segment recipient.
func ParseSegmentRecipient(segmentID, first, last, email string) (SegmentRecipientInput, error) {
	var p Problems
	var in SegmentRecipientInput
	if v := strings.TrimSpace(segmentID); v == "" {
		p.Required("segment_id")
	} else if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
		p.Add("segment_id", "The segment id must be an integer.")
	} else {
		in.SegmentID = n
	}
	if in.FirstName = strings.TrimSpace(first); in.FirstName == "" {
		p.Required("first_name")
	} else {
		p.checkLine("first_name", in.FirstName)
	}
	if in.LastName = strings.TrimSpace(last); in.LastName == "" {
		p.Required("last_name")
	} else {
		p.checkLine("last_name", in.LastName)
	}
	if v := strings.TrimSpace(email); v == "" {
		p.Required("email")
	} else if e, why := CheckEmail(v); why != EmailOK {
		p.Add("email", why.Message("email"))
	} else {
		in.Email = e
	}
	return in, p.Err()
}

// StoredConditions rebuilds a stored segment's conditions against the
// account's current custom fields. A condition that no longer parses (its
// custom field was deleted and remade with another type) has no Operator
// and matches nothing.
func StoredConditions(fieldIDs, ops, values []string, custom []CustomField) []Condition {
	out := make([]Condition, 0, len(fieldIDs))
	next := 0
	for i, fid := range fieldIDs {
		if i >= len(ops) {
			break
		}
		op := ops[i]
		n := Arity(op)
		var vals []string
		if next+n <= len(values) {
			vals = values[next : next+n]
		}
		next += n
		id, _ := strconv.ParseInt(fid, 10, 64)
		field := SegmentFieldByID(id, custom)
		c := Condition{Field: field}
		if contains(operatorsOf[field.Kind], op) {
			if operands, _, err := parseOperands(field, op, vals); err == nil {
				c.Operator, c.Operands = op, operands
			}
		}
		out = append(out, c)
	}
	return out
}

// Segment is a stored segment.
type Segment struct {
	ID            int64
	UserID        int64
	ContactTypeID int64
	Name          string
	Fields        []string
	Operators     []string
	Values        []string
	QueryType     *string
	DeletedAt     *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time

	Recipients int64 // set by the list only
}

// SegmentRecipient is a segment member: a matching contact (ContactID set)
// or an address stored by hand.
type SegmentRecipient struct {
	ID           int64
	UserID       int64
	SegmentID    int64
	ContactID    *int64
	FirstName    string
	LastName     string
	Email        string
	Country      *int32
	State        *string
	City         *string
	AddressLine1 *string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}
