package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Statements is d's translating boundary, for the external tests to run
// raw statements through as the package does.
func (d *DB) Statements() db.DBTX { return d.conn }

// EmitWebhookEvents is emitWebhookEvents in a transaction of its own, as
// bounce and complaint intake call it in theirs.
func (d *DB) EmitWebhookEvents(ctx context.Context, userID int64, events []mail.HookEvent) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error { return d.emitWebhookEvents(ctx, q, userID, events) })
}

// IDRuns is idRuns.
var IDRuns = idRuns

// EnsurePartition makes the deliveries partition of send id, for tests
// that write deliveries by hand.
func (d *DB) EnsurePartition(ctx context.Context, id int64) error { return d.ensurePartition(ctx, id) }

// SegmentGuarded reports whether a segment's members are found by its
// guard (segment_refresh.go) rather than evaluated contact by contact, for
// tests that must cover both.
func SegmentGuarded(conds []mail.Condition, or bool) bool {
	_, ok := guard(conds, or)
	return ok
}

// NextRebuildStep is nextRebuildStep.
var NextRebuildStep = nextRebuildStep

// OnImportColumnsRead sets the hook an import runs once it has read the
// columns its type's segments read (nil: none).
func OnImportColumnsRead(fn func()) { importColumnsRead = fn }

// ImportLockSpace is importLockSpace.
const ImportLockSpace = importLockSpace
