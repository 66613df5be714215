package mail

import (
	"errors"
	"strings"
	"testing"
)

// Custom field names: the reserved fields' and the dynamic-content names
// the renderer computes are refused in any case; the dynamic-content
// names read from a custom field are allowed (DECISIONS.md, Reserved
// fields).
func TestParseCustomFieldNames(t *testing.T) {
	t.Parallel()
	const (
		reserved = "The field name may not be a reserved field name."
		computed = "The field name may not be a dynamic content name."
	)
	tests := map[string]string{}
	for want, names := range map[string][]string{
		"":       {"father_name", "Designation", "AGE", "company_name", "Birth_Date", "join_date", "score", "fullname", "full_name2"},
		reserved: {"email", "First_Name", "ALT_EMAIL", "country", "postal_code", "state_province_region"},
		computed: {"full_name", "FULL_NAME", "sender_name", "Sender_Address", "unsubscribe_preferences"},
	} {
		for _, n := range names {
			tests[n] = want
		}
	}
	for _, r := range ReservedFields {
		tests[r.Name] = reserved
		tests[strings.ToUpper(r.Name)] = reserved
	}
	for name, want := range tests {
		f, err := ParseCustomField(" "+name+" ", FieldText)
		var got string
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || len(e.Fields["field_name"]) != 1 {
				t.Fatalf("%s: %v", name, err)
			}
			got = e.Fields["field_name"][0]
		}
		if got != want || (want == "" && f.Name != name) {
			t.Errorf("%q: %q %q, want %q", name, f.Name, got, want)
		}
	}
	// Every dynamic-content name is either reserved, computed or allowed.
	for _, d := range DynamicContent {
		_, err := ParseCustomField(d, FieldText)
		if (err != nil) != (IsReservedName(d) || IsComputedName(d)) {
			t.Errorf("%s: %v", d, err)
		}
	}
}

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
