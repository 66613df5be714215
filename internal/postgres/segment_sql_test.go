package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// Values reach the SQL only as parameters; the text holds whitelisted
// columns, operators and $n.
func TestPredicateParameterizesValues(t *testing.T) {
	t.Parallel()
	evil := `x'); DROP TABLE contacts; --`
	fields := []mail.CustomField{{ID: 1001, Name: "plan", Type: mail.FieldText}, {ID: 1002, Name: "age", Type: mail.FieldNumber}}
	in, err := mail.ParseSegment(mail.SegmentForm{
		ContactTypeID: "1", Name: "n",
		Fields:    []string{"2", "1001", "5", "1002", "0"},
		Operators: []string{"contains", "is", "is not", "is between", "is within the last"},
		Values:    [][]string{{evil}, {evil}, {evil}, {"1", "2"}, {"3"}},
		QueryType: "or",
	}, fields)
	if err != nil {
		t.Fatal(err)
	}
	sql, args := postgres.SegmentPredicate(in.Conditions, in.Or())
	if strings.Contains(sql, "DROP") || strings.Contains(sql, "x'") {
		t.Fatalf("a value is in the SQL: %s", sql)
	}
	want := []any{evil, "plan", evil, evil, "age", "1", "2", int32(3)}
	if len(args) != len(want) {
		t.Fatalf("args %#v", args)
	}
	for i := range want {
		if args[i] != want[i] {
			t.Errorf("arg %d = %#v, want %#v", i+1, args[i], want[i])
		}
	}
	if !strings.Contains(sql, ") OR (") || strings.Count(sql, "$") != 11 {
		t.Fatalf("sql: %s", sql)
	}
}

// allOperators are every segment operator; each kind of field takes some.
var allOperators = []string{
	mail.OpIs, mail.OpIsNot, mail.OpContains, mail.OpNotContains, mail.OpStartsWith, mail.OpEndsWith,
	mail.OpEmpty, mail.OpNotEmpty, mail.OpGreater, mail.OpLess, mail.OpBefore, mail.OpAfter,
	mail.OpBetween, mail.OpWithinLastDay,
}

// valuesFor are the values tried with op on a field of kind: for a
// datetime both a day and a minute (and a between in reverse order and
// across forms), for a number a decimal and a reversed between.
func valuesFor(kind, op string) [][]string {
	switch n := mail.Arity(op); {
	case n == 0:
		return [][]string{nil}
	case op == mail.OpWithinLastDay:
		return [][]string{{"7"}, {"0"}}
	case kind == mail.KindNumber && n == 2:
		return [][]string{{"9", "1.5"}, {"-1e300", "1e300"}}
	case kind == mail.KindNumber:
		return [][]string{{"5"}, {"-0.25"}}
	case kind == mail.KindDatetime && n == 2:
		return [][]string{{"2026-03-10T08:00", "2026-03-01"}, {"0001-01-01", "9999-12-31T23:59"}}
	case kind == mail.KindDatetime:
		return [][]string{{"2026-03-10"}, {"2026-03-10T08:00"}, {"2026-03-10T09:00:00+01:00"}, {"9999-12-31T23:59"}}
	}
	return [][]string{{"Lee"}, {"de"}, {"276"}}
}

// Every operator on every kind of field (reserved text, country,
// created_at, custom text, number and datetime, a deleted custom field of
// each kind) compiles to SQL whose placeholders are exactly $1…$len(args),
// and runs: the segment is saved and filled over contacts whose stored
// custom values include ones PostgreSQL cannot cast.
func TestSegmentPredicateEveryOperatorRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	uid, _, err := d.CreateAccount(ctx, "matrix")
	if err != nil {
		t.Fatal(err)
	}
	var typeID int64
	if err := d.Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'all') RETURNING id", uid).Scan(&typeID); err != nil {
		t.Fatal(err)
	}
	field := func(name, typ string) mail.CustomField {
		var id int64
		if err := d.Pool.QueryRow(ctx, "INSERT INTO custom_fields (user_id, field_name, field_type) VALUES ($1, $2, $3) RETURNING id",
			uid, name, typ).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return mail.CustomField{ID: id, Name: name, Type: typ}
	}
	plan, score, joined := field("plan", mail.FieldText), field("score", mail.FieldNumber), field("joined", mail.FieldDatetime)
	custom := []mail.CustomField{plan, score, joined}
	for i, c := range []string{
		`{}`,
		`{"plan": "Gold", "score": 5, "joined": "2026-03-10T08:00"}`,
		`{"plan": "", "score": 1e300, "joined": "9999-12-31T23:59"}`,
		`{"plan": 7, "score": "abc", "joined": "0000-01-01T00:00"}`,
		`{"plan": null, "score": -0.25, "joined": "2023-02-31T00:00"}`,
		`{"score": 123456789012345678901234567890.5, "joined": "2026-03-10T24:00"}`,
		`{"score": true, "joined": 20260310}`,
	} {
		if _, err := d.Pool.Exec(ctx, `INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name, country, custom)
			VALUES ($1, $2, $3, 'Ann', 'Lee', 276, $4::jsonb)`, uid, typeID, fmt.Sprintf("c%d@example.com", i), c); err != nil {
			t.Fatal(err)
		}
	}

	// Reserved text, country, created_at and the custom fields by id; a
	// custom field deleted since is resolved from its stored id.
	fields := []struct {
		name, id string
		kind     string
		custom   bool
		ops      int // operators its kind takes
	}{
		{"last_name", "3", mail.KindText, false, 8},
		{"country", "5", mail.KindText, false, 8},
		{"created_at", "0", mail.KindDatetime, false, 8},
		{"custom text", fmt.Sprint(plan.ID), mail.KindText, true, 8},
		{"custom number", fmt.Sprint(score.ID), mail.KindNumber, true, 7},
		{"custom datetime", fmt.Sprint(joined.ID), mail.KindDatetime, true, 8},
	}
	var all []mail.Condition
	run := func(name string, conds []mail.Condition, or bool) {
		t.Helper()
		sql, args := postgres.SegmentPredicate(conds, or)
		if msg := postgres.PredicateProblem(sql, args); msg != "" {
			t.Fatalf("%s: %s\nsql: %s\nargs: %#v", name, msg, sql, args)
		}
		in := mail.SegmentInput{ContactTypeID: typeID, Name: name, Fields: []string{}, Operators: []string{}, Conditions: conds}
		if or {
			q := "or"
			in.QueryType = &q
		}
		if _, err := d.CreateSegment(ctx, uid, in); err != nil {
			t.Fatalf("%s: %v\nsql: %s\nargs: %#v", name, err, sql, args)
		}
	}
	for _, f := range fields {
		accepted := 0
		for _, op := range allOperators {
			took := false
			for _, vals := range valuesFor(f.kind, op) {
				form := mail.SegmentForm{ContactTypeID: fmt.Sprint(typeID), Name: "m", Fields: []string{f.id}, Operators: []string{op}, Values: [][]string{vals}}
				in, err := mail.ParseSegment(form, custom)
				if err != nil {
					if e := (*mail.Error)(nil); errors.As(err, &e) && len(e.Fields["select_operator.0"]) == 1 {
						continue // not an operator of this kind
					}
					t.Fatalf("%s %s %q: %v", f.name, op, vals, err)
				}
				took = true
				name := fmt.Sprintf("%s %s %q", f.name, op, vals)
				run(name, in.Conditions, false)
				all = append(all, in.Conditions...)

				// The same condition after its custom field was deleted.
				if f.custom {
					gone := mail.StoredConditions(in.Fields, in.Operators, in.Values, nil)
					run("deleted "+name, gone, false)
					all = append(all, gone...)
					// A deleted field as a condition of its own kind.
					c := in.Conditions[0]
					c.Field = mail.SegmentField{ID: c.Field.ID, Kind: c.Field.Kind}
					run("deleted typed "+name, []mail.Condition{c}, false)
					all = append(all, c)
				}
			}
			if took {
				accepted++
			}
		}
		if accepted != f.ops {
			t.Errorf("%s takes %d operators, want %d", f.name, accepted, f.ops)
		}
	}
	// Everything at once, and with or: hundreds of parameters.
	run("all and", all, false)
	run("all or", all, true)

	// The unreadable stored values read as absent.
	in, err := mail.ParseSegment(mail.SegmentForm{ContactTypeID: fmt.Sprint(typeID), Name: "set",
		Fields: []string{fmt.Sprint(joined.ID)}, Operators: []string{mail.OpNotEmpty}}, custom)
	if err != nil {
		t.Fatal(err)
	}
	id, err := d.CreateSegment(ctx, uid, in)
	if err != nil {
		t.Fatal(err)
	}
	var members string
	if err := d.Pool.QueryRow(ctx, `SELECT string_agg(c.email, ' ' ORDER BY c.email) FROM segment_members r
		JOIN contacts c ON c.id = r.contact_id WHERE r.segment_id = $1`, id).Scan(&members); err != nil {
		t.Fatal(err)
	}
	if members != "c1@example.com c2@example.com" {
		t.Fatalf("joined is not empty: %q", members)
	}
}
