package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// The package's one error boundary. Every statement it runs, sqlc's and its
// own, goes through a conn (the pool) or a txConn (a transaction), and the
// errors they return are already mail errors: no row is ENOTFOUND, a
// duplicate ECONFLICT, bad data EINVALID. The mail.Error keeps the
// database's error as its cause, so the package can still ask for a
// constraint's name (errors.As *pgconn.PgError) or pgx.ErrNoRows where it
// means something more precise, and InTx can still see a deadlock.

// translate turns a database error into a mail error. Other errors
// (connections, cancellations) pass through and become 500s.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var me *mail.Error
	if errors.As(err, &me) {
		return err // translated already, or the domain's own
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &mail.Error{Code: mail.ENOTFOUND, Err: err} // the route words it
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return &mail.Error{Code: mail.ECONFLICT, Message: "The record already exists.", Err: err}
		case "23503": // foreign_key_violation
			return &mail.Error{Code: mail.EINVALID, Message: "A referenced record does not exist.", Err: err}
		case "22P04", "22P02", "22001", "22003": // bad copy data, invalid text, too long, out of range
			return &mail.Error{Code: mail.EINVALID, Message: pgErr.Message, Err: err}
		case "40P01", "40001": // deadlock, serialization failure (InTx retries these first)
			return &mail.Error{Code: mail.ECONFLICT, Message: "The records changed while this request ran; try again.", Err: err}
		case "22021", "22P05": // invalid byte sequence, untranslatable character
			return &mail.Error{Code: mail.EINVALID, Message: "A value is not valid UTF-8 text.", Err: err}
		}
	}
	return err
}

// conn runs statements on q (the pool) and translates their errors.
type conn struct{ q db.DBTX }

func (c conn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := c.q.Exec(ctx, sql, args...)
	return tag, translate(err)
}

func (c conn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r, err := c.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	return rows{r}, nil
}

func (c conn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return row{c.q.QueryRow(ctx, sql, args...)}
}

func (c conn) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	n, err := c.q.CopyFrom(ctx, table, columns, src)
	return n, translate(err)
}

type rows struct{ pgx.Rows }

func (r rows) Err() error { return translate(r.Rows.Err()) }

func (r rows) Scan(dest ...any) error { return translate(r.Rows.Scan(dest...)) }

type row struct{ pgx.Row }

func (r row) Scan(dest ...any) error { return translate(r.Row.Scan(dest...)) }

// txConn is a transaction whose statements translate their errors.
type txConn struct{ pgx.Tx }

func (t txConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return conn{t.Tx}.Exec(ctx, sql, args...)
}

func (t txConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return conn{t.Tx}.Query(ctx, sql, args...)
}

func (t txConn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return conn{t.Tx}.QueryRow(ctx, sql, args...)
}

func (t txConn) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	return conn{t.Tx}.CopyFrom(ctx, table, columns, src)
}

// begin runs fn in one transaction with opts; fn's statements translate.
func begin(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions, fn func(tx pgx.Tx, q *db.Queries) error) error {
	return pgx.BeginTxFunc(ctx, pool, opts, func(tx pgx.Tx) error {
		t := txConn{tx}
		return fn(t, db.New(t))
	})
}
