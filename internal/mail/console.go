package mail

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Role is what a console user may do in its account.
type Role string

// The roles, from most to least.
const (
	RoleOwner  Role = "owner"  // everything: keys and team included
	RoleEditor Role = "editor" // everything but keys and team
	RoleViewer Role = "viewer" // reads only
)

// Roles are the roles in the order a form offers them.
var Roles = []Role{RoleOwner, RoleEditor, RoleViewer}

// ParseRole validates a role named in a form.
func ParseRole(field, s string) (Role, error) {
	switch r := Role(strings.TrimSpace(s)); r {
	case RoleOwner, RoleEditor, RoleViewer:
		return r, nil
	case "":
		return "", Invalid(field, RequiredMessage(field))
	}
	return "", Invalid(field, "The selected "+Label(field)+" is invalid.")
}

// CanWrite is true for a role that may change the account's records.
func (r Role) CanWrite() bool { return r == RoleOwner || r == RoleEditor }

// CanManage is true for a role that may see and rotate keys and manage
// the team.
func (r Role) CanManage() bool { return r == RoleOwner }

// Password limits. bcrypt reads at most 72 bytes; a longer password would
// be cut silently, so it is refused instead.
const (
	PasswordMin = 10
	PasswordMax = 72
)

// ParsePassword validates a new password: PasswordMin characters at
// least, PasswordMax bytes at most, and not the address it signs in.
func ParsePassword(field, s string, email Email) error {
	switch {
	case s == "":
		return Invalid(field, RequiredMessage(field))
	case utf8.RuneCountInString(s) < PasswordMin:
		return Invalid(field, "The "+Label(field)+" must be at least 10 characters.")
	case len(s) > PasswordMax:
		return Invalid(field, "The "+Label(field)+" must not be greater than 72 bytes.")
	case strings.EqualFold(strings.TrimSpace(s), string(email)):
		return Invalid(field, "The "+Label(field)+" must not be the email address.")
	}
	return nil
}

// ParseConsoleEmail validates the address of a console user.
func ParseConsoleEmail(field, s string) (Email, error) {
	if strings.TrimSpace(s) == "" {
		return "", Invalid(field, RequiredMessage(field))
	}
	e, p := CheckEmail(s)
	if p != EmailOK {
		return "", Invalid(field, p.Message(Label(field)))
	}
	return e, nil
}

// ConsoleUser is a person who signs in to the web console of an account.
type ConsoleUser struct {
	ID        int64
	AccountID int64
	Email     string
	Role      Role
	Active    bool // has a password: the invitation was taken
	CreatedAt time.Time
}

// Session is a signed-in browser: its user, account and the token every
// form it posts must carry.
type Session struct {
	UserID      int64 // the console user
	AccountID   int64
	AccountName string
	PublicKey   string
	Email       string
	Role        Role
	CSRF        string
	SeenAt      time.Time
}

// TokenPurpose says what a single-use console link does.
type TokenPurpose string

// The links.
const (
	TokenInvite TokenPurpose = "invite" // a team invitation: sets the first password
	TokenReset  TokenPurpose = "reset"  // a password reset
	TokenSignIn TokenPurpose = "signin" // the command line's link for a new owner: sets the first password
)

// How long each link works.
const (
	InviteTTL = 7 * 24 * time.Hour
	ResetTTL  = time.Hour
	SignInTTL = 24 * time.Hour
)

// ConsoleMail is a link the worker mails: an invitation or a reset.
type ConsoleMail struct {
	ID          int64
	Purpose     TokenPurpose
	Email       string
	Role        Role
	AccountName string
	InvitedBy   string // the inviter's address, "" when unknown
	ExpiresAt   time.Time
}

// Text is the mail's subject and plain text for link.
func (m ConsoleMail) Text(link string) (subject, text string) {
	if m.Purpose == TokenReset {
		return "Reset your mailroom password", "Hello,\n\n" +
			"Someone asked to reset the password of " + m.Email + " on mailroom. Choose a new one here:\n\n" +
			link + "\n\nThe link works once and expires in one hour. If it was not you, ignore this mail: your password stays as it is.\n"
	}
	by := "You have"
	if m.InvitedBy != "" {
		by = m.InvitedBy + " has"
	}
	return "You are invited to " + m.AccountName + " on mailroom", "Hello,\n\n" +
		by + " invited " + m.Email + " to the account " + m.AccountName + " on mailroom, as " + string(m.Role) + ".\n" +
		"Choose your password and sign in here:\n\n" +
		link + "\n\nThe link works once and expires in 7 days. If you did not expect this, ignore this mail.\n"
}

// AuditEvent is one line of an account's audit trail.
type AuditEvent struct {
	ID        int64
	Actor     string // the console user's address, or "command line"
	Action    string
	Target    string
	IP        string
	CreatedAt time.Time
}

// ActorCommandLine is the actor of what bin/api did.
const ActorCommandLine = "command line"
