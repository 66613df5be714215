package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailroom/mailroom/internal/mail"
)

// translate turns database errors into mail errors once, so callers test
// codes, not SQLSTATEs. Other errors pass through (and become 500s).
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return mail.NotFound()
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return &mail.Error{Code: mail.ECONFLICT, Message: "The record already exists."}
		case "23503": // foreign_key_violation
			return &mail.Error{Code: mail.EINVALID, Message: "A referenced record does not exist."}
		case "22P04", "22P02", "22001", "22003": // bad copy data, invalid text, too long, out of range
			return &mail.Error{Code: mail.EINVALID, Message: pgErr.Message}
		case "40P01", "40001": // deadlock, serialization failure (after InTx's retries)
			return &mail.Error{Code: mail.ECONFLICT, Message: "The records changed while this request ran; try again."}
		case "22021", "22P05": // invalid byte sequence, untranslatable character
			return &mail.Error{Code: mail.EINVALID, Message: "A value is not valid UTF-8 text."}
		}
	}
	return err
}
