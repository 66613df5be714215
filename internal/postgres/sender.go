package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// CreateSender stores a new, unverified sender and records sender.added.
func (d *DB) CreateSender(ctx context.Context, userID int64, in mail.SenderInput) (int64, error) {
	var id int64
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		var err error
		id, err = q.CreateSender(ctx, db.CreateSenderParams{UserID: userID, FromName: in.FromName, FromEmail: string(in.FromEmail),
			ReplyToEmail: string(in.ReplyToEmail), CountryID: in.CountryID, StateID: in.StateID, CityID: in.CityID,
			ZipCode: in.ZipCode, CompanyAddress: in.CompanyAddress, CompanyAddress2: in.CompanyAddress2,
			Nickname: in.Nickname, Utr: mail.NewSenderUTR()})
		return err
	})
	return id, err
}

// UpdateSender changes a live sender of the account; a changed from_email
// makes it unverified.
func (d *DB) UpdateSender(ctx context.Context, userID, id int64, in mail.SenderInput) error {
	n, err := d.q.UpdateSender(ctx, db.UpdateSenderParams{ID: id, UserID: userID, FromName: in.FromName,
		FromEmail: string(in.FromEmail), ReplyToEmail: string(in.ReplyToEmail), CountryID: in.CountryID,
		StateID: in.StateID, CityID: in.CityID, ZipCode: in.ZipCode, CompanyAddress: in.CompanyAddress,
		CompanyAddress2: in.CompanyAddress2, Nickname: in.Nickname})
	if err == nil && n == 0 {
		err = mail.NotFound()
	}
	return err
}

// DeleteSender soft-deletes a live sender of the account.
func (d *DB) DeleteSender(ctx context.Context, userID, id int64) error {
	n, err := d.q.DeleteSender(ctx, db.DeleteSenderParams{ID: id, UserID: userID})
	if err == nil && n == 0 {
		err = mail.NotFound()
	}
	return err
}

// Sender returns a live sender of the account, or ENOTFOUND.
func (d *DB) Sender(ctx context.Context, userID, id int64) (mail.SenderRecord, error) {
	r, err := d.q.SenderByID(ctx, db.SenderByIDParams{ID: id, UserID: userID})
	if err != nil {
		return mail.SenderRecord{}, err
	}
	return senderRecord(db.ListSendersRow(r)), nil
}

// Senders returns the account's live senders by id.
func (d *DB) Senders(ctx context.Context, userID int64) ([]mail.SenderRecord, error) {
	rows, err := d.q.ListSenders(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]mail.SenderRecord, len(rows))
	for i, r := range rows {
		out[i] = senderRecord(r)
	}
	return out, nil
}

func senderRecord(r db.ListSendersRow) mail.SenderRecord {
	return mail.SenderRecord{ID: r.ID, UserID: r.UserID, FromName: r.FromName, FromEmail: r.FromEmail,
		ReplyToEmail: r.ReplyToEmail, CountryID: r.CountryID, StateID: r.StateID, CityID: r.CityID, ZipCode: r.ZipCode,
		CompanyAddress: r.CompanyAddress, CompanyAddress2: r.CompanyAddress2, Nickname: r.Nickname,
		IsVerified: int(r.IsVerified), UTR: r.Utr, SendAt: r.SendAt, DeletedAt: r.DeletedAt, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt}
}

// RequestSenderVerification records that a fresh verification mail is
// wanted for a live sender of the account (resend-mail).
func (d *DB) RequestSenderVerification(ctx context.Context, userID, id int64) error {
	n, err := d.q.RequestSenderVerification(ctx, db.RequestSenderVerificationParams{ID: id, UserID: userID})
	if err == nil && n == 0 {
		err = mail.NotFound()
	}
	return err
}

// PendingSenderVerifications are senders whose verification mail is
// wanted and not sent since (at most 100).
func (d *DB) PendingSenderVerifications(ctx context.Context) ([]int64, error) {
	return d.q.PendingSenderVerifications(ctx)
}

// SenderToVerify is what a verification mail needs.
type SenderToVerify struct {
	ID        int64
	FromName  string
	FromEmail string
}

// MailSenderVerification mails sender id a fresh link, if its mail is
// still wanted and no other worker holds it: a new token's hash and
// expiry are stored and send_at is set in the transaction that send runs
// in, so a failed send changes nothing. It reports whether it sent.
func (d *DB) MailSenderVerification(ctx context.Context, id int64, ttl time.Duration,
	send func(ctx context.Context, s SenderToVerify, token string) error) (bool, error) {
	sent := false
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		r, err := q.ClaimSenderVerification(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		token, hash := mail.NewVerificationToken()
		if err := q.SetSenderVerificationToken(ctx, db.SetSenderVerificationTokenParams{
			TokenHash: hash, ExpiresAt: ptr(time.Now().Add(ttl)), ID: id}); err != nil {
			return err
		}
		if err := send(ctx, SenderToVerify{ID: r.ID, FromName: r.FromName, FromEmail: r.FromEmail}, token); err != nil {
			return err
		}
		sent = true
		return nil
	})
	return sent, err
}

// DropSenderVerification stops wanting sender id's verification mail (it
// was refused for good); resend-mail wants it again.
func (d *DB) DropSenderVerification(ctx context.Context, id int64) error {
	return d.q.DropSenderVerification(ctx, id)
}

// VerifySender takes a verification link's token: a live sender whose
// token it is, not expired, becomes verified (sender.verified is
// recorded) and the token is spent. ok is false for any other token.
func (d *DB) VerifySender(ctx context.Context, token string) (fromEmail string, ok bool, err error) {
	r, err := d.q.VerifySender(ctx, mail.HashToken(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return r.FromEmail, true, nil
}

func ptr[T any](v T) *T { return &v }
