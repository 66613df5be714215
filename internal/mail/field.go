package mail

import "time"

// FieldEmail is the type of the reserved address fields: an HTML input type,
// like the custom field types.
const FieldEmail = "email"

// Type is the reserved field's field_type: "email" for email and alt_email,
// "text" for the others (country is typed as a country id but listed by
// name, so it is text to a client too).
func (f ReservedField) Type() string {
	if f.Name == "email" || f.Name == "alt_email" {
		return FieldEmail
	}
	return FieldText
}

// CustomFieldRecord is a stored custom field: its definition, its owner and
// when it was made.
type CustomFieldRecord struct {
	CustomField
	UserID    int64
	CreatedAt time.Time
	UpdatedAt time.Time
}
