package mail

import (
	"strings"
	"time"
	"unicode/utf8"
)

// ContactType is a named group of an account's contacts (a SendGrid list).
type ContactType struct {
	ID        int64
	UserID    int64
	Name      string
	DeletedAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time

	Contacts int64 // live contacts of the type; set by the list only
}

// Bounds of a contact type's name, in characters.
const (
	ContactTypeNameMin = 2
	ContactTypeNameMax = MaxLine
)

// ParseContactTypeName validates a contact type's name: trimmed, 2 to 255
// characters.
func ParseContactTypeName(s string) (string, error) {
	s = strings.TrimSpace(s)
	n := utf8.RuneCountInString(s)
	switch {
	case s == "":
		return "", Invalid("name", RequiredMessage("name"))
	case LineProblem("name", s) != "":
		return "", Invalid("name", LineProblem("name", s))
	case n < ContactTypeNameMin:
		return "", Invalid("name", "The name must be at least 2 characters.")
	}
	return s, nil
}
