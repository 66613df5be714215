package httpapi

import "time"

// The contract's time formats.
const (
	timestampLayout = "2006-01-02T15:04:05.000000Z" // created_at, updated_at, deleted_at
	datetimeLayout  = "2006-01-02 15:04:05"         // live_at, sent_at, send_at
)

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

// dt renders a nullable time as YYYY-MM-DD HH:MM:SS (null when nil).
func dt(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(datetimeLayout)
	return &s
}
