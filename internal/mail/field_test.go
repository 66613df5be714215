package mail

import (
	"errors"
	"strings"
	"testing"
)

// Custom datetime values are YYYY-MM-DDTHH:MM of the years 0001-9999,
// stored in that form exactly; the CSV import checks them the same way.
func TestParseCustomDatetime(t *testing.T) {
	t.Parallel()
	f := CustomField{ID: 1001, Name: "joined", Type: FieldDatetime}
	const (
		layout     = "The joined must be a date and time as YYYY-MM-DDTHH:MM."
		outOfRange = "The joined must be a date and time from year 0001 to 9999."
	)
	for _, tt := range []struct {
		in, want, msg string
	}{
		{"2026-03-10T09:00", "2026-03-10T09:00", ""},
		{" 2026-03-10T09:00 ", "2026-03-10T09:00", ""},
		{"2026-03-10T9:00", "2026-03-10T09:00", ""},
		{"0001-01-01T00:00", "0001-01-01T00:00", ""},
		{"9999-12-31T23:59", "9999-12-31T23:59", ""},
		{"2024-02-29T12:00", "2024-02-29T12:00", ""},
		{"0000-01-01T00:00", "", outOfRange},
		{"0000-02-29T00:00", "", outOfRange},
		{"2023-02-29T00:00", "", layout},
		{"2023-02-31T00:00", "", layout},
		{"2026-03-10T24:00", "", layout},
		{"2026-03-10", "", layout},
		{"2026-03-10T09:00:00", "", layout},
		{"2026-03-10T09:00Z", "", layout},
		{"10000-01-01T00:00", "", layout},
		{"-001-01-01T00:00", "", layout},
		{"２０２６-03-10T09:00", "", layout},
	} {
		v, err := f.ParseCustomValue(tt.in)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != tt.msg || (tt.msg == "" && v != tt.want) {
			t.Errorf("%q: %#v %q, want %q %q", tt.in, v, msg, tt.want, tt.msg)
		}
	}
	c, err := NewContactCSV(strings.NewReader("email,joined\na@example.com,0000-06-01T10:00\n"), []CustomField{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Next()
	var e *Error
	if !errors.As(err, &e) || e.Fields["file"][0] != "Line 2: "+outOfRange {
		t.Fatalf("CSV: %v", err)
	}
}
