package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// The web console's people, sessions, single-use links and the audit
// trail (docs/console.md). Passwords arrive hashed: the console hashes
// them, this package only stores.

// Actor is who does a console write or a key rotation, for the audit
// trail: a console user (UserID > 0) or the command line.
type Actor struct {
	UserID int64  // the console user; 0 for the command line
	Name   string // the user's address, or mail.ActorCommandLine
	IP     string
}

func (a Actor) userID() *int64 {
	if a.UserID == 0 {
		return nil
	}
	return &a.UserID
}

// audit records one line of account's audit trail in q's transaction.
func audit(ctx context.Context, q *db.Queries, account int64, by Actor, action, target string) error {
	return q.InsertAuditEvent(ctx, db.InsertAuditEventParams{UserID: account, ConsoleUserID: by.userID(),
		Actor: by.Name, Action: action, Target: target, Ip: by.IP})
}

// RecordAudit records one line of account's audit trail.
func (d *DB) RecordAudit(ctx context.Context, account int64, by Actor, action, target string) error {
	return audit(ctx, d.q, account, by, action, target)
}

// AuditEvents lists account's audit trail, newest first: at most limit
// lines older than before (0: from the newest).
func (d *DB) AuditEvents(ctx context.Context, account, before int64, limit int) ([]mail.AuditEvent, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := d.q.ListAuditEvents(ctx, db.ListAuditEventsParams{UserID: account, Before: before, Lim: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]mail.AuditEvent, len(rows))
	for i, r := range rows {
		out[i] = mail.AuditEvent{ID: r.ID, Actor: r.Actor, Action: r.Action, Target: r.Target, IP: r.Ip, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// RotateKeysBy is RotateKeys recorded in account's audit trail in the same
// transaction.
func (d *DB) RotateKeysBy(ctx context.Context, account int64, by Actor) (mail.Keys, error) {
	keys := mail.NewKeys()
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		n, err := q.RotateAccountKeys(ctx, db.RotateAccountKeysParams{ID: account, PublicKey: keys.Public, SecretHash: mail.SecretHash(keys.Secret)})
		if err != nil {
			return err
		}
		if n == 0 {
			return mail.NotFound()
		}
		return audit(ctx, q, account, by, "rotated the API keys", "")
	})
	if err != nil {
		return mail.Keys{}, err
	}
	return keys, nil
}

// emailTaken is the field error of an address another console user has.
var emailTaken = mail.Invalid("email", "The email has already been taken.")

// CreateOwner adds an owner to account from the command line: with
// passwordHash set it can sign in at once; without, the returned token
// is a sign-in link's (mail.SignInTTL) that sets the first password.
func (d *DB) CreateOwner(ctx context.Context, account int64, email mail.Email, passwordHash string) (id int64, token string, err error) {
	err = d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		var hash *string
		if passwordHash != "" {
			hash = &passwordHash
		}
		r, err := q.CreateConsoleUser(ctx, db.CreateConsoleUserParams{UserID: account, Email: string(email),
			EmailLc: email.Lower(), PasswordHash: hash, Role: string(mail.RoleOwner)})
		if err != nil {
			if mail.ErrorCode(err) == mail.ECONFLICT {
				return emailTaken
			}
			return err
		}
		id = r.ID
		if hash == nil {
			var h []byte
			token, h = mail.NewVerificationToken()
			if _, err := q.CreateConsoleToken(ctx, db.CreateConsoleTokenParams{ConsoleUserID: id,
				Purpose: string(mail.TokenSignIn), TokenHash: h, ExpiresAt: time.Now().Add(mail.SignInTTL)}); err != nil {
				return err
			}
		}
		return audit(ctx, q, account, Actor{Name: mail.ActorCommandLine}, "added the owner", string(email))
	})
	return id, token, err
}

// Credentials are what a sign-in checks of an address.
type Credentials struct {
	UserID       int64
	AccountID    int64
	PasswordHash string // "" until the first password is set
	Disabled     bool   // the account is disabled
}

// ConsoleCredentials are the credentials of the console user with address
// email; ENOTFOUND for none.
func (d *DB) ConsoleCredentials(ctx context.Context, email mail.Email) (Credentials, error) {
	r, err := d.q.ConsoleUserByEmail(ctx, email.Lower())
	if err != nil {
		return Credentials{}, err
	}
	c := Credentials{UserID: r.ID, AccountID: r.UserID, Disabled: r.DisabledAt != nil}
	if r.PasswordHash != nil {
		c.PasswordHash = *r.PasswordHash
	}
	return c, nil
}

// SessionLife is how long a session lasts: Idle after its last use, Max
// after the sign-in at most.
type SessionLife struct {
	Idle, Max time.Duration
}

// NewSession signs console user in: a new session, its cookie token (only
// the hash is stored) and its CSRF token.
func (d *DB) NewSession(ctx context.Context, user int64, life SessionLife, ip, userAgent string) (token string, err error) {
	token, hash := mail.NewVerificationToken()
	now := time.Now()
	if len(userAgent) > 512 {
		userAgent = userAgent[:512]
	}
	err = d.q.CreateConsoleSession(ctx, db.CreateConsoleSessionParams{TokenHash: hash, ConsoleUserID: user,
		CsrfToken: mail.RandomToken(32), Ip: ip, UserAgent: strings.ToValidUTF8(userAgent, ""),
		IdleExpiresAt: now.Add(life.Idle), ExpiresAt: now.Add(life.Max)})
	return token, err
}

// Session is the live session of a cookie token, its idle expiry pushed
// on (at most once a minute); ENOTFOUND when it has expired, was signed
// out, or its account is disabled.
func (d *DB) Session(ctx context.Context, token string, life SessionLife) (mail.Session, error) {
	hash := mail.HashToken(token)
	r, err := d.q.ConsoleSession(ctx, hash)
	if err != nil {
		return mail.Session{}, err
	}
	if time.Since(r.SeenAt) > time.Minute {
		if err := d.q.TouchConsoleSession(ctx, db.TouchConsoleSessionParams{TokenHash: hash,
			IdleExpiresAt: time.Now().Add(life.Idle)}); err != nil {
			return mail.Session{}, err
		}
	}
	return mail.Session{UserID: r.ConsoleUserID, AccountID: r.UserID, AccountName: r.AccountName, PublicKey: r.PublicKey,
		Email: r.Email, Role: mail.Role(r.Role), CSRF: r.CsrfToken, SeenAt: r.SeenAt}, nil
}

// EndSession signs a cookie token's session out.
func (d *DB) EndSession(ctx context.Context, token string) error {
	return d.q.DeleteConsoleSession(ctx, mail.HashToken(token))
}

// EndSessions signs console user out everywhere but the session of keep
// ("": everywhere): how many sessions ended.
func (d *DB) EndSessions(ctx context.Context, user int64, keep string) (int64, error) {
	var k []byte
	if keep != "" {
		k = mail.HashToken(keep)
	}
	return d.q.DeleteConsoleUserSessions(ctx, db.DeleteConsoleUserSessionsParams{ConsoleUserID: user, Keep: k})
}

// DeleteExpiredSessions forgets the sessions that have expired.
func (d *DB) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	return d.q.DeleteExpiredConsoleSessions(ctx)
}

func consoleUser(id, account int64, email, role string, active bool, created time.Time) mail.ConsoleUser {
	return mail.ConsoleUser{ID: id, AccountID: account, Email: email, Role: mail.Role(role), Active: active, CreatedAt: created}
}

// ConsoleUsers is account's team, by id.
func (d *DB) ConsoleUsers(ctx context.Context, account int64) ([]mail.ConsoleUser, error) {
	rows, err := d.q.ListConsoleUsers(ctx, account)
	if err != nil {
		return nil, err
	}
	out := make([]mail.ConsoleUser, len(rows))
	for i, r := range rows {
		out[i] = consoleUser(r.ID, r.UserID, r.Email, r.Role, r.Active, r.CreatedAt)
	}
	return out, nil
}

// Invite adds email to account's team with role and asks the worker to
// mail the invitation (mail.InviteTTL). The address must be nobody's yet.
func (d *DB) Invite(ctx context.Context, account int64, by Actor, email mail.Email, role mail.Role) (mail.ConsoleUser, error) {
	var u mail.ConsoleUser
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		r, err := q.CreateConsoleUser(ctx, db.CreateConsoleUserParams{UserID: account, Email: string(email),
			EmailLc: email.Lower(), Role: string(role), InvitedBy: by.userID()})
		if err != nil {
			if mail.ErrorCode(err) == mail.ECONFLICT {
				return emailTaken
			}
			return err
		}
		u = consoleUser(r.ID, account, string(email), string(role), false, r.CreatedAt)
		if _, err := q.CreateConsoleToken(ctx, db.CreateConsoleTokenParams{ConsoleUserID: r.ID,
			Purpose: string(mail.TokenInvite), ExpiresAt: time.Now().Add(mail.InviteTTL)}); err != nil {
			return err
		}
		return audit(ctx, q, account, by, "invited "+string(role), string(email))
	})
	return u, err
}

// lastOwner is the conflict of a change that would leave an account
// without an owner who can sign in.
var lastOwner = &mail.Error{Code: mail.ECONFLICT, Message: "The account must keep at least one owner."}

// changeMember runs change on member id of account, refusing it when it
// would take the account's last owner away (owners are locked until the
// change commits, so two owners demoting each other cannot both win).
func (d *DB) changeMember(ctx context.Context, account, id int64, keepsOwner bool, change func(q *db.Queries, u db.ConsoleUserInAccountRow) error) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		owners, err := q.LockAccountOwners(ctx, account)
		if err != nil {
			return err
		}
		u, err := q.ConsoleUserInAccount(ctx, db.ConsoleUserInAccountParams{UserID: account, ID: id})
		if err != nil {
			return err
		}
		if !keepsOwner && u.Role == string(mail.RoleOwner) && u.Active && len(owners) <= 1 {
			return lastOwner
		}
		return change(q, u)
	})
}

// SetRole gives member id of account role.
func (d *DB) SetRole(ctx context.Context, account int64, by Actor, id int64, role mail.Role) error {
	return d.changeMember(ctx, account, id, role == mail.RoleOwner, func(q *db.Queries, u db.ConsoleUserInAccountRow) error {
		if u.Role == string(role) {
			return nil
		}
		if _, err := q.SetConsoleUserRole(ctx, db.SetConsoleUserRoleParams{UserID: account, ID: id, Role: string(role)}); err != nil {
			return err
		}
		return audit(ctx, q, account, by, "changed the role to "+string(role), u.Email)
	})
}

// RemoveMember takes member id off account's team: its sessions and links
// end with it.
func (d *DB) RemoveMember(ctx context.Context, account int64, by Actor, id int64) error {
	return d.changeMember(ctx, account, id, false, func(q *db.Queries, u db.ConsoleUserInAccountRow) error {
		// The line first: a member removing itself is its own actor, and
		// the delete clears the line's link to it (the address stays).
		if err := audit(ctx, q, account, by, "removed", u.Email); err != nil {
			return err
		}
		_, err := q.DeleteConsoleUser(ctx, db.DeleteConsoleUserParams{UserID: account, ID: id})
		return err
	})
}

// RequestReset asks the worker to mail a password reset link to email
// (mail.ResetTTL), voiding earlier ones, if it belongs to a console user
// who has a password; false when nothing was asked for.
func (d *DB) RequestReset(ctx context.Context, email mail.Email) (bool, error) {
	asked := false
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		u, err := q.ConsoleUserByEmail(ctx, email.Lower())
		if mail.ErrorCode(err) == mail.ENOTFOUND || (err == nil && (u.PasswordHash == nil || u.DisabledAt != nil)) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := q.DropConsoleTokens(ctx, db.DropConsoleTokensParams{ConsoleUserID: u.ID, Purpose: string(mail.TokenReset)}); err != nil {
			return err
		}
		if _, err := q.CreateConsoleToken(ctx, db.CreateConsoleTokenParams{ConsoleUserID: u.ID,
			Purpose: string(mail.TokenReset), ExpiresAt: time.Now().Add(mail.ResetTTL)}); err != nil {
			return err
		}
		asked = true
		return nil
	})
	return asked, err
}

// LinkHolder is who a console link is for.
type LinkHolder struct {
	Purpose     mail.TokenPurpose
	UserID      int64
	Email       string
	AccountID   int64
	AccountName string
}

// purposes are the link purposes a page takes.
func purposes(ps []mail.TokenPurpose) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// PeekLink is who link token is for, if it still works and is one of
// purposes; ENOTFOUND otherwise. The link is not spent.
func (d *DB) PeekLink(ctx context.Context, token string, ps ...mail.TokenPurpose) (LinkHolder, error) {
	r, err := d.q.PeekConsoleToken(ctx, db.PeekConsoleTokenParams{TokenHash: mail.HashToken(token), Purposes: purposes(ps)})
	if err != nil {
		return LinkHolder{}, err
	}
	return LinkHolder{Purpose: mail.TokenPurpose(r.Purpose), UserID: r.ID, Email: r.Email, AccountID: r.UserID, AccountName: r.AccountName}, nil
}

// SetPasswordByLink spends link token (one of purposes) and sets its
// user's password, ending every session the user had; ENOTFOUND when the
// link does not work (spent, expired, or never was).
func (d *DB) SetPasswordByLink(ctx context.Context, token string, passwordHash, ip string, ps ...mail.TokenPurpose) (mail.ConsoleUser, error) {
	var u mail.ConsoleUser
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		r, err := q.TakeConsoleToken(ctx, db.TakeConsoleTokenParams{TokenHash: mail.HashToken(token), Purposes: purposes(ps)})
		if err != nil {
			return err
		}
		u = consoleUser(r.ID, r.UserID, r.Email, r.Role, true, time.Time{})
		if err := q.SetConsoleUserPassword(ctx, db.SetConsoleUserPasswordParams{ID: r.ID, PasswordHash: &passwordHash}); err != nil {
			return err
		}
		if _, err := q.DeleteConsoleUserSessions(ctx, db.DeleteConsoleUserSessionsParams{ConsoleUserID: r.ID}); err != nil {
			return err
		}
		return audit(ctx, q, r.UserID, Actor{UserID: r.ID, Name: r.Email, IP: ip}, "set the password", r.Email)
	})
	return u, err
}

// PendingConsoleMails are the ids of links waiting for their mail.
func (d *DB) PendingConsoleMails(ctx context.Context) ([]int64, error) {
	return d.q.PendingConsoleMails(ctx)
}

// MailConsoleLink mails link id with a fresh token, if it still waits and
// no other worker holds it: the token's hash is stored in the transaction
// send runs in, so a failed send changes nothing. It reports whether it
// sent.
func (d *DB) MailConsoleLink(ctx context.Context, id int64, send func(ctx context.Context, m mail.ConsoleMail, token string) error) (bool, error) {
	sent := false
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		r, err := q.ClaimConsoleMail(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) || mail.ErrorCode(err) == mail.ENOTFOUND {
			return nil
		}
		if err != nil {
			return err
		}
		token, hash := mail.NewVerificationToken()
		if err := q.SetConsoleTokenMailed(ctx, db.SetConsoleTokenMailedParams{ID: id, TokenHash: hash}); err != nil {
			return err
		}
		m := mail.ConsoleMail{ID: r.ID, Purpose: mail.TokenPurpose(r.Purpose), Email: r.Email, Role: mail.Role(r.Role),
			AccountName: r.AccountName, ExpiresAt: r.ExpiresAt}
		if r.InvitedBy != nil {
			m.InvitedBy = *r.InvitedBy
		}
		if err := send(ctx, m, token); err != nil {
			return err
		}
		sent = true
		return nil
	})
	return sent, err
}

// DropConsoleMail gives up link id's mail (its address refused it for
// good).
func (d *DB) DropConsoleMail(ctx context.Context, id int64) error {
	return d.q.DropConsoleMail(ctx, id)
}
