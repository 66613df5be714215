package postgres_test

import (
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/postgres"
)

// A rebuild step takes as many contacts as the step before would have
// evaluated in 20 ms, at most twice or half as many, 1,000 to 20,000.
func TestRebuildStepFollowsTime(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, c := range []struct {
		n    int
		eval time.Duration
		want int
	}{
		{2000, 20 * ms, 2000},
		{2000, 25 * ms, 1600},
		{4000, 40 * ms, 2000},
		{2000, 10 * ms, 4000},
		{2000, ms, 4000},       // at most twice
		{8000, 200 * ms, 4000}, // at most half
		{1500, 200 * ms, 1000}, // never under 1,000
		{16000, 5 * ms, 20000}, // never over 20,000
		{3000, 0, 3000},        // nothing measured: the same
	} {
		if got := postgres.NextRebuildStep(c.n, c.eval); got != c.want {
			t.Errorf("after %d contacts in %v: %d, want %d", c.n, c.eval, got, c.want)
		}
	}
}
