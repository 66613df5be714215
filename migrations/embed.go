// Package migrations holds mailroom's schema as plain SQL files, applied in
// order by goose when either process starts.
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
