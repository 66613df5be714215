package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
	"github.com/mailroom/mailroom/internal/testdb"
)

// raise is a statement failing with SQLSTATE code.
func raise(code string) string {
	return "DO $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '" + code + "'; END $$"
}

// checkTranslated fails unless err is a *mail.Error of code whose cause is
// the database's error with SQLSTATE sqlstate ("" for pgx.ErrNoRows).
func checkTranslated(t *testing.T, how string, err error, code, sqlstate string) {
	t.Helper()
	var me *mail.Error
	if !errors.As(err, &me) || me.Code != code {
		t.Errorf("%s: %v (%T), want a mail error %s", how, err, err, code)
		return
	}
	if sqlstate == "" {
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Errorf("%s: %v does not reach pgx.ErrNoRows", how, err)
		}
		return
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != sqlstate {
		t.Errorf("%s: %v does not reach the PgError %s", how, err, sqlstate)
	}
	if !strings.Contains(err.Error(), "SQLSTATE "+sqlstate) {
		t.Errorf("%s: %q hides its cause from the logs", how, err.Error())
	}
}

// Every way a statement can fail, on the pool and in a transaction, comes
// back already translated, with the database's error kept as the cause.
func TestErrorsTranslatedAtTheBoundary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	kinds := []struct{ sqlstate, code string }{
		{"23505", mail.ECONFLICT},
		{"23503", mail.EINVALID},
		{"22P02", mail.EINVALID},
		{"22001", mail.EINVALID},
		{"40P01", mail.ECONFLICT},
		{"22021", mail.EINVALID},
	}
	// Each statement runs alone: on the pool, or in a transaction of its
	// own (a failed statement aborts its transaction).
	onPool := func(fn func(q db.DBTX) error) error { return fn(d.Statements()) }
	inTx := func(fn func(q db.DBTX) error) error {
		var inside error
		err := d.InTx(ctx, func(tx pgx.Tx, _ *db.Queries) error { inside = fn(tx); return inside })
		if err != inside {
			t.Errorf("InTx returned %v, not its function's %v", err, inside)
		}
		return inside
	}
	if _, err := d.Pool.Exec(ctx, "CREATE TABLE boundary (v varchar(3))"); err != nil {
		t.Fatal(err)
	}
	for where, each := range map[string]func(func(q db.DBTX) error) error{"pool": onPool, "tx": inTx} {
		for _, k := range kinds {
			err := each(func(q db.DBTX) error { _, err := q.Exec(ctx, raise(k.sqlstate)); return err })
			checkTranslated(t, where+" Exec "+k.sqlstate, err, k.code, k.sqlstate)
		}
		// A failure inside a row set surfaces from Query or from Err.
		err := each(func(q db.DBTX) error {
			rows, err := q.Query(ctx, "SELECT g::text FROM generate_series(1, 3) g UNION ALL SELECT 'not a number'::int::text")
			if err == nil {
				_, err = pgx.CollectRows(rows, pgx.RowTo[string])
			}
			return err
		})
		checkTranslated(t, where+" Query", err, mail.EINVALID, "22P02")
		var n int
		err = each(func(q db.DBTX) error { return q.QueryRow(ctx, "SELECT 1 WHERE false").Scan(&n) })
		checkTranslated(t, where+" QueryRow (no row)", err, mail.ENOTFOUND, "")
		err = each(func(q db.DBTX) error { return q.QueryRow(ctx, "SELECT $1::text::int", "x").Scan(&n) })
		checkTranslated(t, where+" QueryRow", err, mail.EINVALID, "22P02")
		err = each(func(q db.DBTX) error {
			_, err := q.CopyFrom(ctx, pgx.Identifier{"boundary"}, []string{"v"}, pgx.CopyFromRows([][]any{{"abc"}, {"too long"}}))
			return err
		})
		checkTranslated(t, where+" CopyFrom", err, mail.EINVALID, "22001")
	}

	// A domain error returned by the caller passes as it is.
	mine := mail.Invalid("email", "Mine.")
	if err := d.InTx(ctx, func(pgx.Tx, *db.Queries) error { return mine }); err != mine {
		t.Fatalf("InTx returned %v, want the caller's own error", err)
	}
	// A connection-level error is not the domain's: it stays a 500.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.Statements().Exec(cctx, "SELECT 1"); mail.ErrorCode(err) != mail.EINTERNAL || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Exec: %v", err)
	}
}

// InTx still sees a deadlock through the translation: it runs the function
// again, and answers the translated conflict once its tries are spent.
func TestInTxRetriesTranslatedDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	tries := 0
	err := d.InTx(ctx, func(tx pgx.Tx, _ *db.Queries) error {
		tries++
		if tries == 1 {
			_, err := tx.Exec(ctx, raise("40P01"))
			return err
		}
		_, err := tx.Exec(ctx, "SELECT 1")
		return err
	})
	if err != nil || tries != 2 {
		t.Fatalf("err %v after %d tries, want success on the second", err, tries)
	}
	tries = 0
	err = d.InTx(ctx, func(tx pgx.Tx, _ *db.Queries) error {
		tries++
		_, err := tx.Exec(ctx, raise("40001"))
		return err
	})
	checkTranslated(t, "InTx", err, mail.ECONFLICT, "40001")
	if tries != 3 {
		t.Fatalf("%d tries, want 3", tries)
	}
}
