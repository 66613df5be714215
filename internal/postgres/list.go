package postgres

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
)

// listChunk is how many rows a streamed list reads per query: the rows
// held in memory while a client reads them, so 50 slow readers of a long
// list cost a few MB, not hundreds (docs/decisions.md).
const listChunk = 250

// errSkipRow, from a streamList scan, drops the row it scanned: the walk
// still counts it and resumes after it.
var errSkipRow = errors.New("postgres: row not listed")

// streamList reads a list in id order and calls fn with each row, with no
// connection held while fn runs (fn writes to a client that may be slow).
// query takes, after args, the id to start after, a limit and an offset, as
// keyset writes them ("id > $n ORDER BY id LIMIT $n+1 OFFSET $n+2"); the
// long lists find their page's ids on an index alone with it, then read
// those rows. A nil page walks the whole list, listChunk rows per query,
// resuming after the last id; a page (from its after_id) is one query.
func streamList[T any](ctx context.Context, d *DB, query string, args []any, page *mail.Page,
	scan func(pgx.Rows, *T) error, id func(*T) int64, fn func(*T) error) error {
	chunk := int64(listChunk)
	if page != nil {
		chunk = page.Size
	}
	return streamChunks(ctx, d, query, args, page, chunk, scan, id, fn)
}

// streamChunks is streamList reading at most chunk rows per query, a page
// too (its first query skips the page's offset, the next ones resume after
// the last id): for lists whose rows are large (single sends carry their
// templates), so what is held does not grow with per_page.
func streamChunks[T any](ctx context.Context, d *DB, query string, args []any, page *mail.Page, chunk int64,
	scan func(pgx.Rows, *T) error, id func(*T) int64, fn func(*T) error) error {
	after, left, offset := int64(0), int64(-1), int64(0) // left < 0: to the end
	if page != nil {
		after, left, offset = page.After, page.Size, page.Offset()
	}
	buf := make([]T, 0, min(chunk, listChunk))
	for {
		limit := chunk
		if left >= 0 && left < limit {
			limit = left
		}
		rows, err := d.conn.Query(ctx, query, append(args, after, limit, offset)...)
		if err != nil {
			return err
		}
		buf = buf[:0]
		read, last := int64(0), after
		for rows.Next() {
			var v T
			err := scan(rows, &v)
			if err != nil && err != errSkipRow {
				rows.Close()
				return err
			}
			read, last = read+1, id(&v)
			if err == nil {
				buf = append(buf, v)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range buf {
			if err := fn(&buf[i]); err != nil {
				return err
			}
		}
		if read < limit {
			return nil
		}
		if left >= 0 {
			if left -= read; left == 0 {
				return nil
			}
		}
		after, offset = last, 0
	}
}

// keyset is the tail streamList expects, numbered after n parameters.
func keyset(column string, n int) string {
	return column + " > $" + strconv.Itoa(n+1) + " ORDER BY " + column +
		" LIMIT $" + strconv.Itoa(n+2) + " OFFSET $" + strconv.Itoa(n+3)
}
