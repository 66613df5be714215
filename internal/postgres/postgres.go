// Package postgres is mailroom's storage: the pgx pool, migrations, the
// transaction helper and one file per aggregate. Queries live in queries/*.sql
// and are compiled to typed Go in db/ by sqlc.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/mailroom/mailroom/internal/postgres/db"
	"github.com/mailroom/mailroom/migrations"
)

// defaultMaxConns is the pool size unless DATABASE_URL sets pool_max_conns.
const defaultMaxConns = 20

// connectTimeout bounds a new connection unless DATABASE_URL sets
// connect_timeout.
const connectTimeout = 10 * time.Second

// DB is the storage handle: one pool shared by every request and task.
// The package's statements go through conn (errors.go), which translates
// their errors; Pool is for tests and tools that reach around the domain.
type DB struct {
	Pool *pgxpool.Pool
	conn conn
	q    *db.Queries
	log  *slog.Logger
	// Now is the clock enrollments start from (an automation's wait counts
	// from it); nil is time.Now. Tests set it to drive schedules.
	Now func() time.Time
	// hooks remembers which event kinds each account's webhooks want
	// (webhook_emit.go).
	hooks *hookCache
}

// now is d's clock.
func (d *DB) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Open creates the database named in dsn when it is missing, then connects.
func Open(ctx context.Context, dsn string, log *slog.Logger) (*DB, error) {
	if err := EnsureDatabase(ctx, dsn); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse DATABASE_URL: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// pgx's default, max(4, NumCPU), is too few for an API whose lists
		// and imports each hold a connection for a while.
		cfg.MaxConns = defaultMaxConns
	}
	if !strings.Contains(dsn, "connect_timeout") {
		// A server that takes the TCP connection and never answers must not
		// hold a request or a task: a new connection gives up after 10 s.
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: ping %s: %w", cfg.ConnConfig.Host, err)
	}
	c := conn{pool}
	return &DB{Pool: pool, conn: c, q: db.New(c), log: log, hooks: &hookCache{}}, nil
}

// Close releases the pool.
func (d *DB) Close() { d.Pool.Close() }

// Ping checks that PostgreSQL answers.
func (d *DB) Ping(ctx context.Context) error { return d.Pool.Ping(ctx) }

// EnsureDatabase creates the database named in dsn when it does not exist,
// connecting to the server's "postgres" database to do so. Concurrent
// callers are fine: a lost race (42P04, or 23505 on pg_database) is success.
func EnsureDatabase(ctx context.Context, dsn string) error {
	name, admin, err := adminDSN(dsn)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("postgres: connect to create database %q: %w", name, err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: look up database %q: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P04" || pgErr.Code == "23505") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("postgres: create database %q: %w", name, err)
	}
	return nil
}

// adminDSN returns the database name of dsn and the same DSN pointed at the
// maintenance database "postgres", without pgxpool's own settings.
func adminDSN(dsn string) (name, admin string, err error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", "", fmt.Errorf("postgres: parse DATABASE_URL: %w", err)
	}
	name = strings.Trim(u.Path, "/")
	if name == "" {
		return "", "", errors.New("postgres: DATABASE_URL names no database")
	}
	u.Path = "/postgres"
	// pool_* settings are pgxpool's: a single connection would send them
	// to the server as unknown run-time parameters.
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	if !q.Has("connect_timeout") {
		q.Set("connect_timeout", strconv.Itoa(int(connectTimeout.Seconds())))
	}
	u.RawQuery = q.Encode()
	return name, u.String(), nil
}

// migrationLockID is the advisory lock goose holds while migrating, so that
// processes starting together apply each migration once.
const migrationLockID = 0x6d61696c726f6f6d // "mailroom"

// Migrate applies every pending migration under a session advisory lock.
func (d *DB) Migrate(ctx context.Context) error {
	sqlDB := stdlib.OpenDBFromPool(d.Pool)
	defer sqlDB.Close()
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 600))
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	for _, r := range results {
		d.log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// InTx runs fn in a transaction, committing when fn returns nil. A
// deadlock or serialization failure (40P01, 40001) rolls back and runs fn
// again, up to three times in all: fn must do all its work through tx.
func (d *DB) InTx(ctx context.Context, fn func(tx pgx.Tx, q *db.Queries) error) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = begin(ctx, d.Pool, pgx.TxOptions{}, fn)
		if !retryable(err) {
			return err
		}
		d.log.WarnContext(ctx, "transaction retried", "attempt", attempt+1, "err", err)
	}
	return err // still failing: a 409 asking to try again
}

// retryable reports a failure that running the transaction again can cure.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}
