package postgres_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// Several processes starting together against a database that does not
// exist yet: each creates it if missing, migrates and loads geography under
// the advisory locks, and none fails.
func TestConcurrentStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, _ := url.Parse(testdb.DSN(t))
	name := fmt.Sprintf("mailroom_start_%d", os.Getpid())
	base.Path = "/" + name
	dsn := base.String()
	t.Cleanup(func() {
		admin := *base
		admin.Path = "/postgres"
		if c, err := pgx.Connect(ctx, admin.String()); err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	set := testdb.Geo(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var g errgroup.Group
	for i := 0; i < 4; i++ {
		g.Go(func() error {
			d, err := postgres.Open(ctx, dsn, log)
			if err != nil {
				return err
			}
			defer d.Close()
			if err := d.Migrate(ctx); err != nil {
				return err
			}
			return d.SyncGeo(ctx, set)
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var countries, cities int
	var version string
	if err := c.QueryRow(ctx, "SELECT (SELECT count(*) FROM countries), (SELECT count(*) FROM cities), (SELECT version FROM geo_version)").
		Scan(&countries, &cities, &version); err != nil {
		t.Fatal(err)
	}
	if countries != len(set.Countries) || cities != len(set.Cities) || version != set.Version {
		t.Fatalf("%d countries, %d cities, version %s", countries, cities, version)
	}
}

// A server that accepts the connection and never answers is given up on
// after the connect timeout (connect_timeout in the DSN, else 10 s), not
// waited for as long as the caller's context lasts.
func TestOpenGivesUpOnASilentServer(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never a byte
		}
	}()
	start := time.Now()
	_, err = postgres.Open(context.Background(), "postgres://postgres@"+l.Addr().String()+"/x?sslmode=disable&connect_timeout=1", nil)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("Open against a silent server: %v after %v", err, time.Since(start))
	}
}
