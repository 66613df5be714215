package mail

import "strings"

// Recipient is what one mail is made for: the contact's address, its
// reserved fields, its custom field values and the links the mail needs.
// The delivery engine builds it from storage, so render never reaches
// into postgres.
type Recipient struct {
	ContactID int64
	Email     Email

	// Reserved fields, as stored. Country is the country's name (for
	// display), not its id.
	FirstName           string
	LastName            string
	AltEmail            string
	Country             string
	State               string
	City                string
	AddressLine1        string
	AddressLine2        string
	StateProvinceRegion string
	PostalCode          string

	// Custom holds custom field values by field name, already formatted as
	// text. Field names are unique in any case; keying by the lower-cased
	// name is the fast path (see CustomValue).
	Custom map[string]string

	// Tokens are the per-recipient links, filled by the delivery engine.
	Tokens Tokens
}

// Tokens are the links a mail carries for its recipient.
type Tokens struct {
	Unsubscribe    string // the signed UnsubscribeToken of both URLs below
	UnsubscribeURL string // one-click unsubscribe (List-Unsubscribe)
	PreferencesURL string // preferences page, ((unsubscribe_preferences))
	OpenPixelURL   string // open-tracking pixel, "" when not tracked
}

// CustomValue is the value of the custom field named name (any case), ""
// when the recipient has none. name should be lower-case: an exact key is
// looked up first, then the keys are compared ignoring case.
func (r *Recipient) CustomValue(name string) string {
	if r == nil || len(r.Custom) == 0 {
		return ""
	}
	if v, ok := r.Custom[name]; ok {
		return v
	}
	for k, v := range r.Custom {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Sender is what rendering and sending need of a send's sender. City,
// State and Country are names, not ids.
type Sender struct {
	FromName  string
	FromEmail Email
	ReplyTo   Email
	Address   string // company address line(s)
	City      string
	State     string
	Country   string
}
