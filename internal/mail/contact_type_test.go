package mail

import (
	"strings"
	"testing"
)

func TestParseContactTypeName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want, msg string
	}{
		{"Customers", "Customers", ""},
		{"  ab  ", "ab", ""},
		{"éé", "éé", ""}, // characters, not bytes
		{strings.Repeat("x", 255), strings.Repeat("x", 255), ""},
		{"", "", "The name field is required."},
		{" \t\n", "", "The name field is required."},
		{"a", "", "The name must be at least 2 characters."},
		{" é ", "", "The name must be at least 2 characters."},
		{strings.Repeat("x", 256), "", "The name may not be greater than 255 characters."},
		{"a\xff", "", "The name must be UTF-8 text."},
	}
	for _, tt := range tests {
		got, err := ParseContactTypeName(tt.in)
		var msg string
		if err != nil {
			msg = err.(*Error).Fields["name"][0]
		}
		if got != tt.want || msg != tt.msg {
			t.Errorf("ParseContactTypeName(%q) = %q, %q; want %q, %q", tt.in, got, msg, tt.want, tt.msg)
		}
	}
}

func TestReservedFieldTypes(t *testing.T) {
	t.Parallel()
	for _, f := range ReservedFields {
		want := FieldText
		if f.Name == "email" || f.Name == "alt_email" {
			want = FieldEmail
		}
		if f.Type() != want {
			t.Errorf("%s is %q", f.Name, f.Type())
		}
	}
}
