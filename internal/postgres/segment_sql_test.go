package postgres

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
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
	p := &predicate{}
	sql := p.compile(in.Conditions, in.Or())
	if strings.Contains(sql, "DROP") || strings.Contains(sql, "x'") {
		t.Fatalf("a value is in the SQL: %s", sql)
	}
	want := []any{evil, "plan", evil, evil, "age", "1", "2", int32(3)}
	if len(p.args) != len(want) {
		t.Fatalf("args %#v", p.args)
	}
	for i := range want {
		if p.args[i] != want[i] {
			t.Errorf("arg %d = %#v, want %#v", i+1, p.args[i], want[i])
		}
	}
	if !strings.Contains(sql, ") OR (") || strings.Count(sql, "$") != 11 {
		t.Fatalf("sql: %s", sql)
	}
}
