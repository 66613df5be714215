package mail

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestRequiredMessage(t *testing.T) {
	t.Parallel()
	for field, want := range map[string]string{
		"email":            "The email field is required.",
		"contact_type_id":  "The contact type id field is required.",
		"single_send_name": "The single send name field is required.",
	} {
		if got := RequiredMessage(field); got != want {
			t.Errorf("RequiredMessage(%q) = %q", field, got)
		}
	}
}

func TestProblemsKeepOrder(t *testing.T) {
	t.Parallel()
	var p Problems
	if p.Err() != nil {
		t.Fatal("empty problems is an error")
	}
	p.Required("subject")
	p.Required("sender_id")
	p.Add("subject", "again")
	e := p.Err().(*Error)
	if e.Code != EINVALID || !reflect.DeepEqual(e.FieldNames(), []string{"subject", "sender_id"}) ||
		!reflect.DeepEqual(e.Fields["subject"], []string{"The subject field is required.", "again"}) {
		t.Fatalf("%+v", e)
	}
	if ErrorCode(e) != EINVALID || ErrorCode(nil) != "" || ErrorCode(&reflect.ValueError{}) != EINTERNAL {
		t.Fatal("ErrorCode")
	}
}

func TestLabel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"email": "email", "contact_type_id": "contact type id", "strIds": "str ids", "PublicKey": "public key"} {
		if got := Label(in); got != want {
			t.Errorf("Label(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLineProblem(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{
		"Jane":                   "",
		"Zoë Ñandú 東京":           "",
		strings.Repeat("é", 255): "",
		strings.Repeat("é", 256): "The first name may not be greater than 255 characters.",
		"a\r\nb":                 "The first name may not contain line breaks or control characters.",
		"a\tb":                   "The first name may not contain line breaks or control characters.",
		"é\nb":                   "The first name may not contain line breaks or control characters.",
		"a\u0085b":               "The first name may not contain line breaks or control characters.",
		"a\u2028b":               "The first name may not contain line breaks or control characters.",
		"a\u2029b":               "The first name may not contain line breaks or control characters.",
		"a\x00b":                 "The first name may not contain line breaks or control characters.",
		"a\x7fb":                 "The first name may not contain line breaks or control characters.",
		"a\xffb":                 "The first name must be UTF-8 text.",
	} {
		if got := LineProblem("first_name", v); got != want {
			t.Errorf("LineProblem(%q) = %q, want %q", v, got, want)
		}
	}
	for _, tc := range []struct {
		v    string
		max  int
		want string
	}{
		{"one\r\ntwo\tthree", 100, ""},
		{"é\nb", 100, ""},
		{"bell\x07", 100, "The description may not contain control characters."},
		{"é\u2028", 100, "The description may not contain control characters."},
		{"abcd", 3, "The description may not be greater than 3 characters."},
	} {
		if got := TextProblem("description", tc.v, tc.max); got != tc.want {
			t.Errorf("TextProblem(%q) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// Each event kind has its own fixed subject; nothing of the payload
// reaches it.
func TestEventNotice(t *testing.T) {
	t.Parallel()
	id := int64(5)
	for kind, want := range map[string]string{
		EventContactsImported:    "Contacts imported",
		EventAddressUnsubscribed: "An address unsubscribed",
		EventSenderAdded:         "A sender was added",
		EventSenderVerified:      "A sender was verified",
		EventSingleSendStarted:   "A single send started",
		EventSingleSendCompleted: "A single send completed",
		EventSingleSendPaused:    "A single send was paused",
		EventAddressBounced:      "An address bounced",
		EventAutomationSetLive:   "An automation was set live",
		EventAutomationPaused:    "An automation was paused",
		"something.else":         "Event: something.else",
	} {
		subject, text := Event{Kind: kind, SubjectType: "x", SubjectID: &id,
			Payload: `{"from_email":"a@b.co\r\nBcc: x@y.z","email_address":"e@f.co"}`}.Notice()
		if subject != want || text == "" {
			t.Errorf("%s: %q %q", kind, subject, text)
		}
	}
}

// A translated error keeps its cause for errors.Is/As and for the logs; the
// API user sees only Message.
func TestErrorCause(t *testing.T) {
	t.Parallel()
	cause := errors.New("ERROR: duplicate key (SQLSTATE 23505)")
	e := &Error{Code: ECONFLICT, Message: "The record already exists.", Err: fmt.Errorf("wrapped: %w", cause)}
	if !errors.Is(e, cause) || ErrorCode(e) != ECONFLICT {
		t.Fatalf("%v does not reach its cause", e)
	}
	if got := e.Error(); got != "mail: conflict: The record already exists.: wrapped: ERROR: duplicate key (SQLSTATE 23505)" {
		t.Fatalf("Error() = %q", got)
	}
	if got := (&Error{Code: ENOTFOUND}).Error(); got != "mail: not_found: " {
		t.Fatalf("Error() = %q", got)
	}
}
