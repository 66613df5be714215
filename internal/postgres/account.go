package postgres

import (
	"context"
	"crypto/subtle"
	"errors"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// CreateAccount stores a new account with fresh keys and returns its id and
// the keys; the secret is kept only as a hash.
func (d *DB) CreateAccount(ctx context.Context, name string) (int64, mail.Keys, error) {
	keys := mail.NewKeys()
	id, err := d.q.CreateAccount(ctx, db.CreateAccountParams{
		Name:       name,
		PublicKey:  keys.Public,
		SecretHash: mail.SecretHash(keys.Secret),
	})
	if err != nil {
		return 0, mail.Keys{}, err
	}
	return id, keys, nil
}

// Authenticate returns the account whose keys these are, or EUNAUTHORIZED.
// The secret's hash is compared in constant time.
func (d *DB) Authenticate(ctx context.Context, public, secret string) (mail.Account, error) {
	row, err := d.q.AccountByKeys(ctx, public)
	if err != nil {
		if mail.ErrorCode(err) == mail.ENOTFOUND {
			// Spend the same hashing work as a found key.
			subtle.ConstantTimeCompare(mail.SecretHash(secret), mail.SecretHash(""))
			return mail.Account{}, unauthorized
		}
		return mail.Account{}, err
	}
	if subtle.ConstantTimeCompare(mail.SecretHash(secret), row.SecretHash) != 1 {
		return mail.Account{}, unauthorized
	}
	if row.DisabledAt != nil {
		return mail.Account{}, disabled
	}
	return mail.Account{ID: row.ID, Name: row.Name, PublicKey: row.PublicKey}, nil
}

var (
	unauthorized = &mail.Error{Code: mail.EUNAUTHORIZED, Message: "The public key or secret key is invalid."}
	disabled     = &mail.Error{Code: mail.EUNAUTHORIZED, Message: "The account is disabled."}
)

// Accounts lists every account (never a secret), by id.
func (d *DB) Accounts(ctx context.Context) ([]mail.Account, error) {
	rows, err := d.q.ListAccounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]mail.Account, len(rows))
	for i, r := range rows {
		out[i] = mail.Account{ID: r.ID, Name: r.Name, PublicKey: r.PublicKey, DisabledAt: r.DisabledAt, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// RotateKeys gives account id fresh keys and returns them; the old ones
// are refused from the next request on (keys are checked against the
// database on every request). ENOTFOUND for no such account.
func (d *DB) RotateKeys(ctx context.Context, id int64) (mail.Keys, error) {
	keys := mail.NewKeys()
	n, err := d.q.RotateAccountKeys(ctx, db.RotateAccountKeysParams{ID: id, PublicKey: keys.Public, SecretHash: mail.SecretHash(keys.Secret)})
	if err != nil {
		return mail.Keys{}, err
	}
	if n == 0 {
		return mail.Keys{}, mail.NotFound()
	}
	return keys, nil
}

// SetDisabled disables account id (its keys are refused) or enables it
// again. ENOTFOUND for no such account.
func (d *DB) SetDisabled(ctx context.Context, id int64, disabled bool) error {
	n, err := d.q.SetAccountDisabled(ctx, db.SetAccountDisabledParams{ID: id, Disabled: disabled})
	if err == nil && n == 0 {
		return mail.NotFound()
	}
	return err
}

// SetSendRate limits account id's sending to perSecond mails a second
// across every worker (0: no limit). ENOTFOUND for no such account.
func (d *DB) SetSendRate(ctx context.Context, id int64, perSecond int) error {
	var rate *int32
	if perSecond > 0 {
		r := int32(perSecond)
		rate = &r
	}
	n, err := d.q.SetAccountSendRate(ctx, db.SetAccountSendRateParams{ID: id, SendRate: rate})
	if err == nil && n == 0 {
		return mail.NotFound()
	}
	return err
}

// SendRate is account id's sending limit in mails a second, 0 for none.
func (d *DB) SendRate(ctx context.Context, id int64) (int, error) {
	n, err := d.q.AccountSendRate(ctx, id)
	return int(n), err
}

// AccountGuards are account userID's reputation guards, rates in percent
// (docs/deliverability.md).
func (d *DB) AccountGuards(ctx context.Context, userID int64) (mail.ReputationGuards, error) {
	r, err := d.q.AccountGuards(ctx, userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return mail.ReputationGuards{}, mail.NotFound()
	}
	return mail.ReputationGuards{BounceRate: percentOf(r.PauseBounceRate), BounceAfter: int64(r.PauseBounceAfter),
		ComplaintRate: percentOf(r.PauseComplaintRate), ComplaintAfter: int64(r.PauseComplaintAfter)}, err
}

// SaveAccountGuards sets account userID's reputation guards; the sends
// running are judged by them from their next record.
func (d *DB) SaveAccountGuards(ctx context.Context, userID int64, g mail.ReputationGuards) error {
	return d.q.SaveAccountGuards(ctx, db.SaveAccountGuardsParams{ID: userID, BounceRate: g.BounceRate / 100, BounceAfter: int32(g.BounceAfter),
		ComplaintRate: g.ComplaintRate / 100, ComplaintAfter: int32(g.ComplaintAfter)})
}

// percentOf is a stored rate in percent, to the 2 decimals a save takes.
func percentOf(rate float64) float64 { return math.Round(rate*10000) / 100 }
