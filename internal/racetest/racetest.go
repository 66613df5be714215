// Package racetest moves the suite's heaviest single-goroutine tests out of
// the race detector's run. make test runs every test with -race, then the
// tests listed in heavy.txt again without it: they build or compare
// megabytes byte by byte (render's size bounds, the memory budget's
// 10 MB mails, encoders checked against encoding/json), which the race
// detector slows tenfold and where it has no goroutines to watch.
package racetest

import (
	_ "embed"
	"strings"
	"testing"
)

//go:embed heavy.txt
var heavy string

// Heavy skips t under the race detector; the test must be listed in
// heavy.txt, which make test's second step runs without it.
func Heavy(t testing.TB) {
	t.Helper()
	if !listed(t.Name()) {
		t.Fatalf("racetest: %s is not in internal/racetest/heavy.txt, so no step of make test would run it", t.Name())
	}
	if Enabled {
		t.Skip("heavy and single-goroutine: make test runs it without -race (internal/racetest/heavy.txt)")
	}
}

func listed(name string) bool {
	for line := range strings.Lines(heavy) {
		if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[0], "./") && f[1] == name {
			return true
		}
	}
	return false
}
