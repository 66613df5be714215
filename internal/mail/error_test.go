package mail

import (
	"reflect"
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
