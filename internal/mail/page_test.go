package mail

import (
	"reflect"
	"testing"
)

func TestParsePage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		page, perPage string
		want          *Page
		offset        int64
		fields        map[string][]string
	}{
		{"", "", nil, 0, nil},
		{" ", " ", nil, 0, nil},
		{"1", "", &Page{Number: 1, Size: DefaultPageSize}, 0, nil},
		{"", "10", &Page{Number: 1, Size: 10}, 0, nil},
		{"3", "10", &Page{Number: 3, Size: 10}, 20, nil},
		{"2", "1000", &Page{Number: 2, Size: 1000}, 1000, nil},
		{"x", "", nil, 0, map[string][]string{"page": {"The page must be an integer."}}},
		{"0", "", nil, 0, map[string][]string{"page": {"The page must be at least 1."}}},
		{"", "1001", nil, 0, map[string][]string{"per_page": {"The per page may not be greater than 1000."}}},
		{"-1", "0", nil, 0, map[string][]string{"page": {"The page must be at least 1."}, "per_page": {"The per page must be at least 1."}}},
		{"1", "1.5", nil, 0, map[string][]string{"per_page": {"The per page must be an integer."}}},
		{"9223372036854775807", "2", nil, 0, map[string][]string{"page": {"The page is too large."}}},
	}
	for _, tt := range tests {
		got, err := ParsePage(tt.page, tt.perPage)
		var fields map[string][]string
		if err != nil {
			fields = err.(*Error).Fields
		}
		if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(fields, tt.fields) {
			t.Errorf("ParsePage(%q, %q) = %+v, %v; want %+v, %v", tt.page, tt.perPage, got, fields, tt.want, tt.fields)
			continue
		}
		if got != nil && got.Offset() != tt.offset {
			t.Errorf("ParsePage(%q, %q).Offset() = %d", tt.page, tt.perPage, got.Offset())
		}
	}
}

func TestParsePageAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		page, perPage, after string
		want                 *Page
		fields               map[string][]string
	}{
		{"", "", "", nil, nil},
		{"", "", "0", &Page{Number: 1, Size: DefaultPageSize}, nil},
		{"", "50", "1234", &Page{Number: 1, Size: 50, After: 1234}, nil},
		{"2", "50", " 7 ", &Page{Number: 2, Size: 50, After: 7}, nil},
		{"3", "10", "", &Page{Number: 3, Size: 10}, nil},
		{"", "", "x", nil, map[string][]string{"after_id": {"The after id must be an integer."}}},
		{"", "", "-1", nil, map[string][]string{"after_id": {"The after id must be at least 0."}}},
		{"0", "", "-1", nil, map[string][]string{"page": {"The page must be at least 1."}, "after_id": {"The after id must be at least 0."}}},
	}
	for _, tt := range tests {
		got, err := ParsePageAfter(tt.page, tt.perPage, tt.after)
		var fields map[string][]string
		if err != nil {
			fields = err.(*Error).Fields
		}
		if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(fields, tt.fields) {
			t.Errorf("ParsePageAfter(%q, %q, %q) = %+v, %v; want %+v, %v", tt.page, tt.perPage, tt.after, got, fields, tt.want, tt.fields)
		}
	}
}
