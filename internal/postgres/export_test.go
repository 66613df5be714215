package postgres

import (
	"context"

	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Statements is d's translating boundary, for the external tests to run
// raw statements through as the package does.
func (d *DB) Statements() db.DBTX { return d.conn }

// EnsurePartition makes the deliveries partition of send id, for tests
// that write deliveries by hand.
func (d *DB) EnsurePartition(ctx context.Context, id int64) error { return d.ensurePartition(ctx, id) }
