package postgres

import "github.com/mailroom/mailroom/internal/postgres/db"

// Statements is d's translating boundary, for the external tests to run
// raw statements through as the package does.
func (d *DB) Statements() db.DBTX { return d.conn }
