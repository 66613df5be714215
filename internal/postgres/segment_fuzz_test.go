package postgres

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/mail"
)

// SegmentPredicate compiles conditions as a segment query does, for this
// package's tests (the external ones in segment_sql_test.go too): the
// boolean SQL expression, reading a contact as "c", and its $n arguments.
func SegmentPredicate(conds []mail.Condition, or bool) (string, []any) {
	p := &predicate{}
	return p.compile(conds, or), p.args
}

var (
	placeholderRE = regexp.MustCompile(`\$([0-9]+)`)
	timestampRE   = regexp.MustCompile(`\$([0-9]+)::timestamp`)
)

// PredicateProblem says what is wrong with a compiled predicate, "" when
// nothing is: its placeholders must be exactly $1…$len(args) (PostgreSQL
// refuses a statement with an argument no $n names), every text argument
// UTF-8 without NUL, and every argument cast to timestamp a time of the
// years 0001-9999 (PostgreSQL refuses year 0).
func PredicateProblem(sql string, args []any) string {
	seen := map[int]bool{}
	for _, m := range placeholderRE.FindAllStringSubmatch(sql, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 1 || n > len(args) {
			return fmt.Sprintf("placeholder $%s with %d arguments", m[1], len(args))
		}
		seen[n] = true
	}
	if len(seen) != len(args) {
		return fmt.Sprintf("%d distinct placeholders for %d arguments", len(seen), len(args))
	}
	for i, a := range args {
		if s, ok := a.(string); ok && (!utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0) {
			return fmt.Sprintf("argument $%d %q is not text PostgreSQL stores", i+1, s)
		}
	}
	for _, m := range timestampRE.FindAllStringSubmatch(sql, -1) {
		n, _ := strconv.Atoi(m[1])
		s, _ := args[n-1].(string)
		if tm, err := time.Parse("2006-01-02 15:04:05", s); err != nil || !mail.InYearRange(tm) {
			return fmt.Sprintf("argument $%d %q is not a timestamp of years 0001-9999", n, s)
		}
	}
	return ""
}

// neutral is conds with every value (operands and custom field names)
// replaced: the SQL text must not change, as values reach it only as $n.
func neutral(conds []mail.Condition) []mail.Condition {
	out := make([]mail.Condition, len(conds))
	for i, c := range conds {
		if c.Field.Custom != "" {
			c.Field.Custom = "k"
		}
		ops := make([]mail.Operand, len(c.Operands))
		for j, o := range c.Operands {
			ops[j] = mail.Operand{Text: "v", Number: 1, Time: time.Date(2000, 1, 2, 3, 4, 0, 0, time.UTC), Day: o.Day, Days: 1}
		}
		c.Operands = ops
		out[i] = c
	}
	return out
}

// fuzzFields are the custom fields the fuzzed segments may name: one of
// each type.
var fuzzFields = []mail.CustomField{
	{ID: 1001, Name: "plan", Type: mail.FieldText},
	{ID: 1002, Name: "score", Type: mail.FieldNumber},
	{ID: 1003, Name: "joined", Type: mail.FieldDatetime},
}

// FuzzSegmentPredicate parses a segment of up to two conditions as the API
// does and compiles it: no panic; a refusal is an EINVALID *mail.Error;
// the SQL text does not depend on the values (so never contains them) and
// names exactly len(args) distinct placeholders. The stored form is
// compiled again with a field deleted, as a segment rebuild would.
// Seeds: testdata/fuzz/FuzzSegmentPredicate.
func FuzzSegmentPredicate(f *testing.F) {
	f.Fuzz(func(t *testing.T, field0, op0, v0, w0, field1, op1, v1, queryType string) {
		form := mail.SegmentForm{ContactTypeID: "1", Name: "fuzz", Fields: []string{field0}, Operators: []string{op0}, QueryType: queryType}
		vals0 := []string{v0}
		if w0 != "" {
			vals0 = append(vals0, w0)
		}
		form.Values = [][]string{vals0}
		if field1 != "" || op1 != "" {
			form.Fields = append(form.Fields, field1)
			form.Operators = append(form.Operators, op1)
			form.Values = append(form.Values, []string{v1})
		}
		in, err := mail.ParseSegment(form, fuzzFields)
		if err != nil {
			var e *mail.Error
			if !errors.As(err, &e) || e.Code != mail.EINVALID || len(e.Fields) == 0 {
				t.Fatalf("ParseSegment: %#v is not an EINVALID *mail.Error with fields", err)
			}
			return
		}
		if len(in.Conditions) != len(form.Fields) {
			t.Fatalf("%d conditions from %d fields", len(in.Conditions), len(form.Fields))
		}
		checkCompiled(t, in.Conditions, in.Or(), v0, w0, v1)

		// As stored, and read back after a custom field was deleted.
		for _, fields := range [][]mail.CustomField{fuzzFields, fuzzFields[:1], nil} {
			stored := mail.StoredConditions(in.Fields, in.Operators, in.Values, fields)
			if len(stored) != len(in.Conditions) {
				t.Fatalf("%d stored conditions from %d", len(stored), len(in.Conditions))
			}
			if len(fields) == len(fuzzFields) && !reflect.DeepEqual(stored, in.Conditions) {
				t.Fatalf("the stored segment reads back as\n%#v\nnot\n%#v", stored, in.Conditions)
			}
			checkCompiled(t, stored, in.Or(), v0, w0, v1)
		}
	})
}

// checkCompiled compiles conds and fails t on a PredicateProblem, or when
// the SQL text changes with the values or holds one of the raw values
// (one the value-free SQL does not hold anyway, like "c" or "AND").
func checkCompiled(t *testing.T, conds []mail.Condition, or bool, raw ...string) {
	t.Helper()
	sql, args := SegmentPredicate(conds, or)
	if msg := PredicateProblem(sql, args); msg != "" {
		t.Fatalf("%s\nsql: %s\nargs: %#v", msg, sql, args)
	}
	blank, _ := SegmentPredicate(neutral(conds), or)
	if blank != sql {
		t.Fatalf("the SQL text depends on the values:\n%s\n%s", sql, blank)
	}
	for _, v := range raw {
		if v = strings.TrimSpace(v); v != "" && !strings.Contains(blank, v) && strings.Contains(sql, v) {
			t.Fatalf("value %q is in the SQL: %s", v, sql)
		}
	}
}
