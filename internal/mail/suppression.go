package mail

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Unsubscribe is a suppressed address: on the account's global list when
// GroupID is nil, else in that unsubscribe group.
type Unsubscribe struct {
	ID        int64
	UserID    int64
	GroupID   *int64
	Email     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// UnsubscribeGroup is a named list a recipient can leave on its own (a
// SendGrid unsubscribe group / ASM group).
type UnsubscribeGroup struct {
	ID          int64
	UserID      int64
	RandID      string
	Name        string
	Description string
	Display     bool // shown on the unsubscribe preferences page
	CreatedAt   time.Time
	UpdatedAt   time.Time

	Recipients int64 // addresses in the group; set by the list only
}

// UnsubscribeGroupInput is a validated group write.
type UnsubscribeGroupInput struct {
	Name        string
	Description string
	Display     bool
}

// Bounds of a group's texts, in characters.
const (
	GroupNameMax        = MaxLine
	GroupDescriptionMax = MaxText
)

// ParseUnsubscribeGroup validates a group save or update: group_name and
// description trimmed, required and bounded; is_display required, one of
// 1, 0, true, false (any case).
func ParseUnsubscribeGroup(name, description, isDisplay string) (UnsubscribeGroupInput, error) {
	var p Problems
	in := UnsubscribeGroupInput{Name: strings.TrimSpace(name), Description: strings.TrimSpace(description)}
	switch {
	case in.Name == "":
		p.Required("group_name")
	default:
		p.checkLine("group_name", in.Name)
	}
	switch {
	case in.Description == "":
		p.Required("description")
	case TextProblem("description", in.Description, GroupDescriptionMax) != "":
		p.Add("description", TextProblem("description", in.Description, GroupDescriptionMax))
	}
	switch on, ok := ParseFlag(isDisplay); {
	case strings.TrimSpace(isDisplay) == "":
		p.Required("is_display")
	case !ok:
		p.Add("is_display", FlagMessage("is_display"))
	default:
		in.Display = on
	}
	return in, p.Err()
}

// ParseEmailList reads the addresses sent in field: each value is a list
// separated by commas (or line breaks); each address is trimmed and must be
// valid, empty items are skipped. Addresses are returned once each, compared
// lower-cased, first spelling and order kept. Any invalid address fails the
// whole list, each one named in its own message (the first
// maxNamedInvalid, then a count of the rest).
func ParseEmailList(field string, values []string) ([]Email, error) {
	var p Problems
	var out []Email
	invalid := 0
	seen := map[string]bool{}
	for _, v := range values {
		for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			e, why := CheckEmail(item)
			if why != EmailOK {
				if invalid++; invalid <= maxNamedInvalid {
					p.Add(field, "The "+Label(field)+` "`+item+`" is not a valid email address`+why.Why()+".")
				}
				continue
			}
			if lc := e.Lower(); !seen[lc] {
				seen[lc] = true
				out = append(out, e)
			}
		}
	}
	if invalid > maxNamedInvalid {
		p.Add(field, fmt.Sprintf("%d more addresses are not valid email addresses.", invalid-maxNamedInvalid))
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, Invalid(field, RequiredMessage(field))
	}
	return out, nil
}

// maxNamedInvalid caps the invalid addresses an error names one by one.
const maxNamedInvalid = 20

// NewRandID returns a group's rand_id: 10 random decimal digits, the first
// not 0 so the string reads as the number it looks like.
func NewRandID() string {
	n, err := rand.Int(rand.Reader, big.NewInt(9_000_000_000))
	if err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return n.Add(n, big.NewInt(1_000_000_000)).String()
}

// ParseFlag reads a flag field: 1 or true (any case, spaces around) is
// on, 0 or false off; ok is false for anything else, "" included.
func ParseFlag(v string) (on, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true":
		return true, true
	case "0", "false":
		return false, true
	}
	return false, false
}

// FlagMessage is a flag field's message for a value ParseFlag refuses.
func FlagMessage(field string) string { return "The " + Label(field) + " field must be true or false." }
