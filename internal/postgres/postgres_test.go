package postgres_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"testing"

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
