package console

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// A selection is counted once however often it is asked for while the
// count runs; the finished count is kept for the next ask; a failed one is
// not kept; no more than countsAtOnce counts run together.
func TestAudienceCountsRunOnceAndKeep(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var calls, running, most atomic.Int32
	c := newAudienceCounts(func(ctx context.Context, user int64, lists, excluded []mail.ListRef, group int64) (int64, error) {
		calls.Add(1)
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		if group == 99 {
			return 0, errors.New("boom")
		}
		return 1000 + group, nil
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	lists := []mail.ListRef{{Table: mail.ListContacts, ID: 1}}
	first := c.get(7, lists, nil, 1)
	if again := c.get(7, lists, nil, 1); again != first {
		t.Fatal("a running count was started again")
	}
	others := []*audienceCount{c.get(7, lists, nil, 2), c.get(7, lists, nil, 3), c.get(7, lists, nil, 99), c.get(8, lists, nil, 1)}
	select {
	case <-first.done:
		t.Fatal("finished before the count returned")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	for _, e := range append(others, first) {
		<-e.done
	}
	if first.n != 1001 || first.err != nil || others[0].n != 1002 || others[3].n != 1001 || others[2].err == nil {
		t.Fatalf("counts %d %v, %d, %d, %v", first.n, first.err, others[0].n, others[3].n, others[2].err)
	}
	if c.get(7, lists, nil, 1) != first {
		t.Fatal("a finished count was not kept")
	}
	retry := c.get(7, lists, nil, 99)
	if retry == others[2] {
		t.Fatal("a failed count was kept")
	}
	<-retry.done
	if calls.Load() != 6 || most.Load() > countsAtOnce {
		t.Fatalf("%d counts (want 6), %d at once (at most %d)", calls.Load(), most.Load(), countsAtOnce)
	}
}

// The rate comes from the samples of the last seconds; samples that are
// not numbers, go back in time or are too many are dropped.
func TestProgressRate(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_010_000)
	p := mail.SendProgress{Status: mail.SendRunning, Triggered: 10000, Remaining: 4000, ReadAt: now}
	for _, tc := range []struct {
		samples, rate string
	}{
		{"", ""},
		{"5000@1700000009000", "1,000 mails/s"},
		{"1000@1700000000000,5000@1700000009000", "1,000 mails/s"}, // the 10 s old one is out of the window
		{"3000@1700000007000,x@y,,4000@1700000006000", "1,000 mails/s"},
		{"6000@1700000009900", ""}, // 100 ms: too short to tell
	} {
		d := progressOf("u", p, tc.samples)
		if d.Rate != tc.rate || d.Poll != "1s" {
			t.Errorf("samples %q: rate %q poll %q, want %q", tc.samples, d.Rate, d.Poll, tc.rate)
		}
	}
	if got := readSamples("1@1,2@2,3@3,4@4,5@5,6@6,7@7,8@8,9@9,10@10"); len(got) != maxSamples || got[0].final != 3 {
		t.Errorf("samples kept: %v", got)
	}
}
