package mail

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestInYearRange(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		t    time.Time
		want bool
	}{
		{time.Date(0, 12, 31, 23, 59, 59, 999999999, time.UTC), false},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), true},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC), false},
	} {
		if got := InYearRange(tt.t); got != tt.want {
			t.Errorf("InYearRange(%v) = %v", tt.t, got)
		}
	}
}

// segmentValue parses one condition on field with op and values, and
// returns its operands or the message on value.0.
func segmentValue(t *testing.T, field, op string, vals ...string) ([]Operand, []string, string) {
	t.Helper()
	fields := []CustomField{{ID: 1001, Name: "joined", Type: FieldDatetime}, {ID: 1002, Name: "score", Type: FieldNumber},
		{ID: 1003, Name: "plan", Type: FieldText}}
	in, err := ParseSegment(SegmentForm{ContactTypeID: "1", Name: "s", Fields: []string{field}, Operators: []string{op},
		Values: [][]string{vals}}, fields)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Code != EINVALID || len(e.Fields["value.0"]) != 1 {
			t.Fatalf("%s %s %q: %v", field, op, vals, err)
		}
		return nil, nil, e.Fields["value.0"][0]
	}
	return in.Conditions[0].Operands, in.Values, ""
}

// Segment dates must be of the years 1-9999 once in UTC: PostgreSQL takes
// no year 0, and YYYY no year 10000.
func TestParseSegmentDates(t *testing.T) {
	t.Parallel()
	const outOfRange = "The value must be a date from year 0001 to 9999 (UTC)."
	utc := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, time.UTC) }
	tests := []struct {
		op   string
		vals []string
		want []Operand // nil: refused with msg
		msg  string
	}{
		{"is", []string{"0001-01-01"}, []Operand{{Time: utc(1, 1, 1, 0, 0), Day: true}}, ""},
		{"is", []string{"9999-12-31T23:59"}, []Operand{{Time: utc(9999, 12, 31, 23, 59)}}, ""},
		{"is", []string{"0001-01-01T00:00:00Z"}, []Operand{{Time: utc(1, 1, 1, 0, 0)}}, ""},
		{"is", []string{"0001-01-01T01:00:00+01:00"}, []Operand{{Time: utc(1, 1, 1, 0, 0)}}, ""},
		{"is", []string{"9999-12-31T22:59:00-01:00"}, []Operand{{Time: utc(9999, 12, 31, 23, 59)}}, ""},
		{"is", []string{"2026-03-10 9:05"}, []Operand{{Time: utc(2026, 3, 10, 9, 5)}}, ""},
		{"is", []string{"0000-01-01"}, nil, outOfRange},
		{"is", []string{"0000-01-01T00:00"}, nil, outOfRange},
		{"is", []string{"0000-12-31 23:59:59"}, nil, outOfRange},
		{"is", []string{"0001-01-01T00:00:00+01:00"}, nil, outOfRange},
		{"is", []string{"0001-01-01T00:59:59+01:00"}, nil, outOfRange},
		{"is", []string{"9999-12-31T23:00:00-01:00"}, nil, outOfRange},
		{"is between", []string{"2026-01-01", "0000-01-01"}, nil, outOfRange},
		{"is between", []string{"0000-01-01T00:00,2026-01-01"}, nil, outOfRange},
		{"is", []string{"2023-02-31"}, nil, "The value must be a date (YYYY-MM-DD) or a date and time (YYYY-MM-DDTHH:MM)."},
		{"is", []string{"-001-01-01"}, nil, "The value must be a date (YYYY-MM-DD) or a date and time (YYYY-MM-DDTHH:MM)."},
		{"is", []string{"10000-01-01"}, nil, "The value must be a date (YYYY-MM-DD) or a date and time (YYYY-MM-DDTHH:MM)."},
		// A between in reverse order is swapped, each bound keeping its form.
		{"is between", []string{"2026-03-10T08:00", "2026-03-01"},
			[]Operand{{Time: utc(2026, 3, 1, 0, 0), Day: true}, {Time: utc(2026, 3, 10, 8, 0)}}, ""},
	}
	for _, field := range []string{"0", "1001"} {
		for _, tt := range tests {
			got, _, msg := segmentValue(t, field, tt.op, tt.vals...)
			if msg != tt.msg || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s %s %q: %+v %q, want %+v %q", field, tt.op, tt.vals, got, msg, tt.want, tt.msg)
			}
		}
	}
}

func TestParseSegmentValues(t *testing.T) {
	t.Parallel()
	// A number between in reverse order is swapped, display values too.
	ops, display, msg := segmentValue(t, "1002", "is between", "9", "-1.5")
	if msg != "" || ops[0].Number != -1.5 || ops[1].Number != 9 || !reflect.DeepEqual(display, []string{"-1.5", "9"}) {
		t.Errorf("number between: %+v %q %q", ops, display, msg)
	}
	for _, v := range []string{"NaN", "Inf", "-Inf", "1e301", "-1e301", "0x", ""} {
		if _, _, msg := segmentValue(t, "1002", "is", v); msg == "" {
			t.Errorf("number %q accepted", v)
		}
	}
	// Text PostgreSQL cannot take is refused.
	for v, want := range map[string]string{
		"a\x00b": "The value may not contain a NUL character.",
		"a\xffb": "The value must be UTF-8 text.",
	} {
		for _, field := range []string{"2", "5", "1003"} {
			if _, _, msg := segmentValue(t, field, "contains", v); msg != want {
				t.Errorf("%s contains %q: %q, want %q", field, v, msg, want)
			}
		}
	}
}

// A stored condition whose value no longer parses (stored before a check)
// matches nothing instead of reaching the database.
func TestStoredConditionsDropUnreadableValues(t *testing.T) {
	t.Parallel()
	fields := []CustomField{{ID: 1001, Name: "joined", Type: FieldDatetime}}
	got := StoredConditions([]string{"0", "1001", "1001", "2"}, []string{"is", "is between", "is before", "is"},
		[]string{"0000-01-01T00:00", "2026-01-01", "0001-01-01T00:00:00+01:00", "2026-01-01", "x"}, fields)
	if len(got) != 4 || got[0].Operator != "" || got[1].Operator != "" || got[2].Operator != OpBefore || got[3].Operator != OpIs {
		t.Fatalf("%+v", got)
	}
}
