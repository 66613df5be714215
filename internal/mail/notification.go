package mail

import (
	"strings"
	"time"
)

// NotificationRecipient is an address mailed for every event of its account.
type NotificationRecipient struct {
	ID        int64
	UserID    int64
	Email     string
	Owner     string // the name of the address's owner
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NotificationRecipientInput is a validated notification recipient save.
type NotificationRecipientInput struct {
	Email Email
	Owner string
}

// OwnerMax bounds a notification recipient's email_owner, in characters.
const OwnerMax = MaxLine

// ParseNotificationRecipient validates a notification recipient save. A
// missing email_owner is "The name field is required", without a final
// period: the contract's wording.
func ParseNotificationRecipient(email, owner string) (NotificationRecipientInput, error) {
	var p Problems
	var in NotificationRecipientInput
	if strings.TrimSpace(email) == "" {
		p.Required("email_address")
	} else if e, why := CheckEmail(email); why != EmailOK {
		p.Add("email_address", why.Message("email address"))
	} else {
		in.Email = e
	}
	in.Owner = strings.TrimSpace(owner)
	switch {
	case in.Owner == "":
		p.Add("email_owner", "The name field is required")
	case LineProblem("name", in.Owner) != "":
		p.Add("email_owner", LineProblem("name", in.Owner))
	}
	return in, p.Err()
}
