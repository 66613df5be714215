package smtp

import (
	"bytes"
	"fmt"
	netmail "net/mail"

	gomail "github.com/wneessen/go-mail"

	"github.com/mailroom/mailroom/internal/mail"
)

// Compose builds a plain-text mail (notifications, verification mails),
// one at a time: go-mail writes the MIME, the Date and a unique
// Message-ID. from may carry a display name ("mailroom
// <notify@example.com>"); to is an address. Both go out as
// mail.Email.Wire has them, in the envelope and the header: an
// internationalized domain as its A-label, a UTF-8 local part as UTF-8
// (the mail then needs SMTPUTF8).
func Compose(from, to, subject, text string) (*Message, error) {
	sender, err := netmail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("smtp: from %q: %w", from, err)
	}
	sender.Address = mail.Email(sender.Address).Wire()
	to = mail.Email(to).Wire()
	m := gomail.NewMsg()
	if err := m.FromFormat(sender.Name, sender.Address); err != nil {
		return nil, err
	}
	if err := m.To(to); err != nil {
		return nil, err
	}
	m.Subject(subject)
	m.SetDate()
	m.SetMessageID()
	m.SetBodyString(gomail.TypeTextPlain, text)
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		return nil, err
	}
	return &Message{From: sender.Address, To: to, Data: b.Bytes()}, nil
}
