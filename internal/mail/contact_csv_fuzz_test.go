package mail

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzContactCSV reads a fuzzed file to its end as an import does: no
// panic; every error is an EINVALID *Error on "file" or a *ReadError; every
// row holds trimmed single-line text (valid UTF-8, no NUL or other control
// character), a valid address, a known country and custom values of its
// fields' types as JSON; a file read to its end yields every record.
// Seeds: testdata/fuzz/FuzzContactCSV.
func FuzzContactCSV(f *testing.F) {
	fields := []CustomField{
		{ID: 1001, Name: "Age", Type: FieldNumber},
		{ID: 1002, Name: "joined", Type: FieldDatetime},
		{ID: 1003, Name: "plan", Type: FieldText},
	}
	byName := map[string]CustomField{}
	for _, cf := range fields {
		byName[cf.Name] = cf
	}
	countries := map[string]int32{"276": 276, "de": 276, "germany": 276, "40": 40, "at": 40, "austria": 40}
	country := func(s string) (int32, bool) {
		id, ok := countries[strings.ToLower(s)]
		return id, ok
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := NewContactCSV(bytes.NewReader(data), fields, country)
		if err != nil {
			checkCSVError(t, err)
			return
		}
		customCols := map[string]bool{}
		for _, name := range c.CustomColumns() {
			customCols[name] = true
		}
		line, rows := 0, 0
		for {
			row, err := c.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				checkCSVError(t, err)
				return
			}
			rows++
			if row.Line <= line {
				t.Fatalf("line %d after line %d", row.Line, line)
			}
			line = row.Line
			for i, v := range row.Fields {
				name := ReservedFields[i].Name
				if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 || strings.TrimSpace(v) != v {
					t.Fatalf("line %d: %s %q", row.Line, name, v)
				}
				if v != "" && !c.Has(i) {
					t.Fatalf("line %d: %s %q without its column", row.Line, name, v)
				}
				if i != ColCountry && LineProblem(name, v) != "" {
					t.Fatalf("line %d: %s %q: %s", row.Line, name, v, LineProblem(name, v))
				}
			}
			if e, ok := ParseEmail(row.Fields[ColEmail]); !ok || string(e) != row.Fields[ColEmail] {
				t.Fatalf("line %d: address %q", row.Line, row.Fields[ColEmail])
			}
			if v := row.Fields[ColAltEmail]; v != "" {
				if _, ok := ParseEmail(v); !ok {
					t.Fatalf("line %d: alt_email %q", row.Line, v)
				}
			}
			if row.Country != 0 && row.Country != 276 && row.Country != 40 {
				t.Fatalf("line %d: country %d", row.Line, row.Country)
			}
			if (row.Custom == nil) != (len(customCols) == 0) {
				t.Fatalf("line %d: custom %q with columns %v", row.Line, row.Custom, customCols)
			}
			if row.Custom != nil {
				checkCSVCustom(t, row, byName, customCols)
			}
		}
		if rows+c.Skipped() != c.Rows() {
			t.Fatalf("%d rows and %d skipped of %d", rows, c.Skipped(), c.Rows())
		}
		// A file read to its end has every record encoding/csv sees in it.
		plain := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))))
		records, err := plain.ReadAll()
		if err != nil || len(records) != 1+c.Rows() {
			t.Fatalf("%d rows read, encoding/csv reads %d records (%v)", c.Rows(), len(records), err)
		}
	})
}

func checkCSVError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	var re *ReadError
	switch {
	case errors.As(err, &e):
		msgs := e.Fields["file"]
		if e.Code != EINVALID || len(e.Fields) != 1 || len(msgs) != 1 || msgs[0] == "" ||
			!utf8.ValidString(msgs[0]) || strings.IndexByte(msgs[0], 0) >= 0 {
			t.Fatalf("error %#v", e)
		}
	case errors.As(err, &re):
	default:
		t.Fatalf("error %T %v", err, err)
	}
}

// checkCSVCustom checks a row's custom JSON: an object of the file's
// custom columns, each value as the field's type stores it.
func checkCSVCustom(t *testing.T, row *ContactRow, byName map[string]CustomField, cols map[string]bool) {
	t.Helper()
	if !utf8.Valid(row.Custom) || bytes.IndexByte(row.Custom, 0) >= 0 {
		t.Fatalf("line %d: custom %q", row.Line, row.Custom)
	}
	dec := json.NewDecoder(bytes.NewReader(row.Custom))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || dec.More() {
		t.Fatalf("line %d: custom %q: %v", row.Line, row.Custom, err)
	}
	for k, v := range m {
		if !cols[k] {
			t.Fatalf("line %d: custom key %q", row.Line, k)
		}
		switch cf := byName[k]; cf.Type {
		case FieldNumber:
			n, ok := v.(json.Number)
			f, err := n.Float64()
			if !ok || err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > 1e300 {
				t.Fatalf("line %d: %s %#v", row.Line, k, v)
			}
		case FieldDatetime:
			s, ok := v.(string)
			if again, err := cf.ParseCustomValue(s); !ok || err != nil || again != s {
				t.Fatalf("line %d: %s %#v is not stored canonical (%v %v)", row.Line, k, v, again, err)
			}
		default:
			if s, ok := v.(string); !ok || s == "" || strings.TrimSpace(s) != s || LineProblem(k, s) != "" {
				t.Fatalf("line %d: %s %#v", row.Line, k, v)
			}
		}
	}
}
