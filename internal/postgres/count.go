package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Every list whose length a response shows has a kept count in list_counts
// (migrations/00006_list_counts.sql, docs/counts.md): each writer records,
// in its own transaction, how many rows its statements actually added to
// or removed from each list (from their RETURNING or row counts, never
// from what it asked for), so a count is exact under any interleaving of
// writers, and reading one sums a few rows instead of counting the list.
// Counts are recorded as new rows, never by updating one, so writers of one
// list do not queue on a hot row.

// Kinds of kept counts, and what their key is.
const (
	countContacts      = "contact_type" // a contact type's live contacts; key: the type
	countSegment       = "segment"      // a segment's recipients; key: the segment
	countUnsubscribes  = "unsubscribes" // a list's addresses; key: the group, 0 for the global list
	countNotifications = "notification" // the account's notification recipients; key: 0
)

// addCountsSQL records how many rows a write added to (or, negative,
// removed from) each list of one kind: one row per list (%[1]s, a set of
// rows (key, n)) of account %[2]s and kind %[3]s, never an update in place,
// so concurrent writers of a list do not wait for one another. About one
// row in 16 also folds its list: the rows of it that no other transaction
// holds (SKIP LOCKED) are deleted and their sum inserted as one row, in the
// same statement, so the list keeps a few rows and a reader sums a few.
// The fold sees the rows committed before this statement; the row it
// inserts is folded later. Each folded list's rows are found by its own key
// (a lateral probe of list_counts_list), whatever the statistics say: as
// "key IN (subquery)" the fold was planned, on a new account's empty table,
// as a walk through every list of the kind, whose cost grew with the
// account's segments and, where nothing vacuums, their dead rows (cmd/load
// -mix segments: 1.7 ms a write at the start, 16 ms 30 s later). It is the
// tail of a WITH: a statement that computes its changes in CTEs records
// their counts in the same statement (refreshSQL).
const addCountsSQL = `added AS (
    INSERT INTO list_counts (user_id, kind, key, n)
    SELECT %[2]s, %[3]s, d.key, d.n
    FROM %[1]s d
    WHERE d.n <> 0
    ORDER BY d.key
    RETURNING id, key
), folded AS (
    DELETE FROM list_counts c
    WHERE c.id IN (
        SELECT l.id FROM added a
        CROSS JOIN LATERAL (
            SELECT l.id FROM list_counts l
            WHERE l.user_id = %[2]s AND l.kind = %[3]s AND l.key = a.key
            FOR UPDATE SKIP LOCKED) l
        WHERE a.id %% 16 = 0)
    RETURNING c.key, c.n
)
INSERT INTO list_counts (user_id, kind, key, n)
SELECT %[2]s, %[3]s, f.key, sum(f.n)::bigint
FROM folded f
GROUP BY f.key`

// addCountsParamsSQL is addCountsSQL over parameters: $1 the account, $2
// the kind, $3 and $4 the keys and their deltas.
var addCountsParamsSQL = "WITH " + fmt.Sprintf(addCountsSQL,
	"(SELECT unnest($3::bigint[]) AS key, unnest($4::bigint[]) AS n)", "$1::bigint", "$2::text")

// addCounts records, with q in the writer's transaction, how many rows a
// write added to (or, negative, removed from) each list of one kind, by key.
func addCounts(ctx context.Context, q *db.Queries, userID int64, kind string, delta map[int64]int64) error {
	keys := make([]int64, 0, len(delta))
	for k, n := range delta {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	deltas := make([]int64, len(keys))
	for i, k := range keys {
		deltas[i] = delta[k]
	}
	_, err := q.Raw().Exec(ctx, addCountsParamsSQL, userID, kind, keys, deltas)
	return err
}

// probeByID makes the rest of a transaction that joins many ids
// (unnest of a bulk delete's strIds) with a table find each id by its index,
// when there are enough of them for the planner to prefer reading the whole
// table into a hash: then the statement's cost follows the number of ids,
// not the size of the account (100,000 of 1,000,000 contacts: 110 ms by
// probes, 350 ms by hash; 10 times the contacts would not change the first).
func probeByID(ctx context.Context, tx pgx.Tx, ids int) error {
	if ids < 1000 {
		return nil // the planner probes small sets by itself
	}
	_, err := tx.Exec(ctx, "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off")
	return err
}

// count is the kept length of one list.
func (d *DB) count(ctx context.Context, userID int64, kind string, key int64) (int64, error) {
	return d.q.CountOf(ctx, db.CountOfParams{UserID: userID, Kind: kind, Key: key})
}

// Recount rebuilds the account's kept counts from its rows: the repair for
// rows written around this package (by hand, or by a process that predates
// the counts). It runs in one REPEATABLE READ transaction, retried when a
// writer changes a count meanwhile, so writers may go on beside it.
func (d *DB) Recount(ctx context.Context, userID int64) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = begin(ctx, d.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(_ pgx.Tx, q *db.Queries) error {
			if err := q.ClearCounts(ctx, userID); err != nil {
				return err
			}
			return q.RecountAccount(ctx, userID)
		})
		if !retryable(err) {
			return err
		}
	}
	return err
}
