package mail

import (
	"reflect"
	"strings"
	"testing"
)

// fieldsOf returns err's field messages as one string per field, for
// comparing in tables.
func fieldsOf(t *testing.T, err error) map[string]string {
	t.Helper()
	if err == nil {
		return nil
	}
	e, ok := err.(*Error)
	if !ok || e.Code != EINVALID {
		t.Fatalf("not a validation error: %v", err)
	}
	out := map[string]string{}
	for _, k := range e.FieldNames() {
		out[k] = strings.Join(e.Fields[k], " | ")
	}
	return out
}

func TestParseEmailList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []string
		want []Email
		msg  string
	}{
		{"one", []string{"a@example.com"}, []Email{"a@example.com"}, ""},
		{"trimmed, order kept", []string{" b@example.com ,a@example.com"}, []Email{"b@example.com", "a@example.com"}, ""},
		{"duplicates in any case, first spelling kept", []string{"A@Example.com, a@example.com,b@example.com,a@EXAMPLE.COM"},
			[]Email{"A@Example.com", "b@example.com"}, ""},
		{"empty items skipped", []string{",a@example.com,, ,"}, []Email{"a@example.com"}, ""},
		{"line breaks separate too", []string{"a@example.com\r\nb@example.com\nc@example.com"},
			[]Email{"a@example.com", "b@example.com", "c@example.com"}, ""},
		{"several values", []string{"a@example.com", "b@example.com,A@example.com"}, []Email{"a@example.com", "b@example.com"}, ""},
		{"nothing", nil, nil, "The email address field is required."},
		{"only separators", []string{" , ,"}, nil, "The email address field is required."},
		{"one bad", []string{"a@example.com, nope ,b@example.com"}, nil, `The email address "nope" is not a valid email address.`},
		{"each bad named", []string{"x@y, a@example.com, Ada <a@b.co>"}, nil,
			`The email address "x@y" is not a valid email address. | The email address "Ada <a@b.co>" is not a valid email address.`},
		{"international", []string{"ü-h@example.com, h@bücher.example, H@BÜCHER.example"}, []Email{"ü-h@example.com", "h@bücher.example"}, ""},
		{"a domain without a valid A-label", []string{"a@xn--zz.example"}, nil,
			`The email address "a@xn--zz.example" is not a valid email address: its domain is not a valid domain name.`},
	}
	for _, tt := range tests {
		got, err := ParseEmailList("email_address", tt.in)
		var msg string
		if err != nil {
			msg = fieldsOf(t, err)["email_address"]
		}
		if !reflect.DeepEqual(got, tt.want) || msg != tt.msg {
			t.Errorf("%s: got %q, %q; want %q, %q", tt.name, got, msg, tt.want, tt.msg)
		}
	}
}

func TestParseUnsubscribeGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, group, desc, display string
		want                       UnsubscribeGroupInput
		errs                       map[string]string
	}{
		{"shown", " News ", " Weekly news ", "1", UnsubscribeGroupInput{"News", "Weekly news", true}, nil},
		{"hidden", "News", "d", "0", UnsubscribeGroupInput{"News", "d", false}, nil},
		{"true", "News", "d", "TRUE", UnsubscribeGroupInput{"News", "d", true}, nil},
		{"false", "News", "d", "false", UnsubscribeGroupInput{"News", "d", false}, nil},
		{"long enough", strings.Repeat("é", 255), strings.Repeat("x", 1000), "1",
			UnsubscribeGroupInput{strings.Repeat("é", 255), strings.Repeat("x", 1000), true}, nil},
		{"nothing", "", " ", "", UnsubscribeGroupInput{}, map[string]string{
			"group_name":  "The group name field is required.",
			"description": "The description field is required.",
			"is_display":  "The is display field is required.",
		}},
		{"bad display", "News", "d", "yes", UnsubscribeGroupInput{}, map[string]string{
			"is_display": "The is display field must be true or false.",
		}},
		{"too long", strings.Repeat("x", 256), strings.Repeat("x", 1001), "1", UnsubscribeGroupInput{}, map[string]string{
			"group_name":  "The group name may not be greater than 255 characters.",
			"description": "The description may not be greater than 1000 characters.",
		}},
		{"not utf-8", "a\xff", "d", "1", UnsubscribeGroupInput{}, map[string]string{
			"group_name": "The group name must be UTF-8 text.",
		}},
	}
	for _, tt := range tests {
		got, err := ParseUnsubscribeGroup(tt.group, tt.desc, tt.display)
		errs := fieldsOf(t, err)
		if (err == nil && got != tt.want) || !reflect.DeepEqual(errs, tt.errs) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", tt.name, got, errs, tt.want, tt.errs)
		}
	}
	// Fields are reported in form order.
	_, err := ParseUnsubscribeGroup("", "", "")
	if names := err.(*Error).FieldNames(); !reflect.DeepEqual(names, []string{"group_name", "description", "is_display"}) {
		t.Errorf("order %v", names)
	}
}

func TestParseNotificationRecipient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, email, owner string
		want               NotificationRecipientInput
		errs               map[string]string
	}{
		{"fine", " Ops@Example.com ", " Ops team ", NotificationRecipientInput{"Ops@Example.com", "Ops team"}, nil},
		{"nothing", "", "", NotificationRecipientInput{}, map[string]string{
			"email_address": "The email address field is required.",
			"email_owner":   "The name field is required",
		}},
		{"bad address", "ops", "Ops", NotificationRecipientInput{}, map[string]string{
			"email_address": "The email address must be a valid email address.",
		}},
		{"two addresses", "a@example.com,b@example.com", "Ops", NotificationRecipientInput{}, map[string]string{
			"email_address": "The email address must be a valid email address.",
		}},
		{"long owner", "a@example.com", strings.Repeat("x", 256), NotificationRecipientInput{}, map[string]string{
			"email_owner": "The name may not be greater than 255 characters.",
		}},
	}
	for _, tt := range tests {
		got, err := ParseNotificationRecipient(tt.email, tt.owner)
		errs := fieldsOf(t, err)
		if (err == nil && got != tt.want) || !reflect.DeepEqual(errs, tt.errs) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", tt.name, got, errs, tt.want, tt.errs)
		}
	}
}

func TestNewRandID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewRandID()
		if len(id) != 10 || id[0] == '0' || strings.Trim(id, "0123456789") != "" {
			t.Fatalf("rand_id %q", id)
		}
		seen[id] = true
	}
	if len(seen) < 999 {
		t.Fatalf("%d distinct of 1000", len(seen))
	}
}

// A list of many bad addresses names the first 20 and counts the rest.
func TestParseEmailListCapsMessages(t *testing.T) {
	t.Parallel()
	_, err := ParseEmailList("email_address", []string{strings.Repeat("x,", 1000) + "ok@example.com"})
	e, _ := err.(*Error)
	if e == nil || len(e.Fields["email_address"]) != 21 ||
		e.Fields["email_address"][20] != "980 more addresses are not valid email addresses." {
		t.Fatalf("%v", err)
	}
}
