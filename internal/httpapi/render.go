package httpapi

import "time"

// timestampLayout is the contract's created_at, updated_at, deleted_at.
const timestampLayout = "2006-01-02T15:04:05.000000Z"

// ts renders a timestamp as 2026-11-22T16:20:50.123456Z.
func ts(t time.Time) string { return t.UTC().Format(timestampLayout) }

// tsPtr renders a nullable timestamp (null when nil).
func tsPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := ts(*t)
	return &s
}
