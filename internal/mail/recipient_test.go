package mail

import "testing"

func TestRecipientCustomValue(t *testing.T) {
	t.Parallel()
	r := &Recipient{Custom: map[string]string{"age": "41", "Company_Name": "Acme", "designation": ""}}
	tests := []struct {
		name, want string
	}{
		{"age", "41"},
		{"AGE", "41"},
		{"company_name", "Acme"},
		{"designation", ""},
		{"father_name", ""},
	}
	for _, tt := range tests {
		if got := r.CustomValue(tt.name); got != tt.want {
			t.Errorf("CustomValue(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	var none *Recipient
	if got := none.CustomValue("age"); got != "" {
		t.Errorf("nil recipient: %q", got)
	}
	if got := (&Recipient{}).CustomValue("age"); got != "" {
		t.Errorf("no custom fields: %q", got)
	}
}
