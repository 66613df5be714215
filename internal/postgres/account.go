package postgres

import (
	"context"
	"crypto/subtle"

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
		return 0, mail.Keys{}, translate(err)
	}
	return id, keys, nil
}

// Authenticate returns the account whose keys these are, or EUNAUTHORIZED.
// The secret's hash is compared in constant time.
func (d *DB) Authenticate(ctx context.Context, public, secret string) (mail.Account, error) {
	row, err := d.q.AccountByKeys(ctx, public)
	if err != nil {
		if mail.ErrorCode(translate(err)) == mail.ENOTFOUND {
			// Spend the same hashing work as a found key.
			subtle.ConstantTimeCompare(mail.SecretHash(secret), mail.SecretHash(""))
			return mail.Account{}, unauthorized
		}
		return mail.Account{}, err
	}
	if subtle.ConstantTimeCompare(mail.SecretHash(secret), row.SecretHash) != 1 {
		return mail.Account{}, unauthorized
	}
	return mail.Account{ID: row.ID, Name: row.Name, PublicKey: row.PublicKey}, nil
}

var unauthorized = &mail.Error{Code: mail.EUNAUTHORIZED, Message: "The public key or secret key is invalid."}
