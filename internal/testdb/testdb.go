// Package testdb gives each test package its own PostgreSQL database, cloned
// from a template database that is migrated (and loaded with geography)
// once per schema version. Packages run in parallel, and a clone takes a
// fraction of a second instead of a migration run.
//
// TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres)
// names the server; the database part is ignored.
package testdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/geo"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/migrations"
)

var (
	once   sync.Once
	shared *postgres.DB
	dsn    string
	geoSet *geo.Set
	err    error
)

// New returns the package's database handle, creating the database on the
// first call. Tests share it and isolate themselves by account.
func New(t testing.TB) *postgres.DB {
	t.Helper()
	once.Do(func() { shared, dsn, err = setup(context.Background()) })
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return shared
}

// DSN returns the package database's URL (after New).
func DSN(t testing.TB) string {
	New(t)
	return dsn
}

// Geo returns the geography data set loaded into the template.
func Geo(t testing.TB) *geo.Set {
	New(t)
	return geoSet
}

// lockID serializes template builds and clones across test processes.
const lockID = 0x6d61696c74657374 // "mailtest"

func setup(ctx context.Context) (*postgres.DB, string, error) {
	server := os.Getenv("TEST_DATABASE_URL")
	if server == "" {
		server = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	set, err := geo.Load()
	if err != nil {
		return nil, "", err
	}
	geoSet = set
	version, err := schemaVersion(set)
	if err != nil {
		return nil, "", err
	}
	template := "mailroom_tpl_" + version
	// One database per test process: the same package tested at once from
	// two checkouts (worktrees) must not drop each other's database.
	prefix := "mailroom_test_" + packageName() + "_"
	name := prefix + strconv.Itoa(os.Getpid())

	admin, err := pgx.Connect(ctx, withDB(server, "postgres"))
	if err != nil {
		return nil, "", fmt.Errorf("connect to %s: %w", server, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(lockID)); err != nil {
		return nil, "", err
	}
	defer admin.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(lockID))

	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", template).Scan(&exists); err != nil {
		return nil, "", err
	}
	if !exists {
		if err := buildTemplate(ctx, admin, server, template, set); err != nil {
			return nil, "", fmt.Errorf("build template %s: %w", template, err)
		}
	}
	if err := dropStale(ctx, admin, prefix); err != nil {
		return nil, "", err
	}
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
		return nil, "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(template)); err != nil {
		return nil, "", fmt.Errorf("clone %s: %w", template, err)
	}
	u := withDB(server, name)
	d, err := postgres.Open(ctx, u, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return d, u, err
}

// dropStale drops this package's databases left by test processes that
// are gone (their pid, the name's suffix, no longer runs here).
func dropStale(ctx context.Context, admin *pgx.Conn, prefix string) error {
	rows, err := admin.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1)", prefix)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, n := range names {
		pid, err := strconv.Atoi(strings.TrimPrefix(n, prefix))
		if err != nil || processRuns(pid) {
			continue
		}
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(n)+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	return nil
}

// processRuns reports whether process pid exists (signal 0 reaches it).
func processRuns(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

// buildTemplate migrates a fresh database and marks it as a template; older
// templates are dropped.
func buildTemplate(ctx context.Context, admin *pgx.Conn, server, template string, set *geo.Set) error {
	rows, err := admin.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE 'mailroom\\_tpl\\_%'")
	if err != nil {
		return err
	}
	old, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, o := range old {
		admin.Exec(ctx, "ALTER DATABASE "+ident(o)+" IS_TEMPLATE false")
		admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(o)+" WITH (FORCE)")
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident(template)); err != nil {
		return err
	}
	d, err := postgres.Open(ctx, withDB(server, template), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	err = d.Migrate(ctx)
	if err == nil {
		err = d.SyncGeo(ctx, set)
	}
	d.Close()
	if err != nil {
		admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(template)+" WITH (FORCE)")
		return err
	}
	_, err = admin.Exec(ctx, "ALTER DATABASE "+ident(template)+" IS_TEMPLATE true")
	return err
}

// schemaVersion hashes the migrations and the geography version, so a
// changed schema gets a new template.
func schemaVersion(set *geo.Set) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", path, b)
		return nil
	})
	fmt.Fprint(h, set.Version)
	return hex.EncodeToString(h.Sum(nil))[:12], err
}

var nonWord = regexp.MustCompile(`[^a-z0-9_]+`)

// packageName is the test binary's package ("httpapi" for httpapi.test).
func packageName() string {
	base := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	return nonWord.ReplaceAllString(strings.ToLower(base), "_")
}

func withDB(server, name string) string {
	u, err := url.Parse(server)
	if err != nil {
		return server
	}
	u.Path = "/" + name
	return u.String()
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }
