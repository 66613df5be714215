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

// A selection is counted once while it runs and kept when it ends well
// (not when it fails); an account's new selection cancels its count still
// running, so an account holds one slot at most; no count starts that
// could not be kept; at most countsAtOnce run at once.
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
		select {
		case <-release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
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
	second := c.get(7, lists, nil, 2) // account 7 moves on: its first count is cancelled
	<-first.done
	if !errors.Is(first.err, context.Canceled) {
		t.Fatalf("the account's earlier count: %v, want cancelled", first.err)
	}
	other := c.get(8, lists, nil, 1)
	select {
	case <-second.done:
		t.Fatal("finished before the count returned")
	case <-other.done:
		t.Fatal("another account's count was cancelled")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-second.done
	<-other.done
	if second.n != 1002 || second.err != nil || other.n != 1001 || other.err != nil {
		t.Fatalf("counts %d %v, %d %v", second.n, second.err, other.n, other.err)
	}
	if c.get(7, lists, nil, 2) != second {
		t.Fatal("a finished count was not kept")
	}
	failed := c.get(7, lists, nil, 99)
	<-failed.done
	if failed.err == nil {
		t.Fatal("no error")
	}
	retry := c.get(7, lists, nil, 99)
	if retry == failed {
		t.Fatal("a failed count was kept")
	}
	<-retry.done
	// The cancelled first count may end before it reaches the database.
	if n := calls.Load(); n < 4 || n > 5 || most.Load() > countsAtOnce {
		t.Fatalf("%d counts (want 4 or 5), %d at once (at most %d)", n, most.Load(), countsAtOnce)
	}
}

// When every remembered count is still running, a new selection is not
// counted (it could not be kept, and each poll would start it again): it
// answers failed at once.
func TestAudienceCountsStartNoneUnkept(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	defer close(stop)
	var calls atomic.Int32
	c := newAudienceCounts(func(ctx context.Context, user int64, lists, excluded []mail.ListRef, group int64) (int64, error) {
		calls.Add(1)
		select {
		case <-stop:
		case <-ctx.Done():
		}
		return 0, ctx.Err()
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	lists := []mail.ListRef{{Table: mail.ListContacts, ID: 1}}
	for user := int64(1); user <= countsKept; user++ {
		c.get(user, lists, nil, 0)
	}
	e := c.get(countsKept+1, lists, nil, 0)
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the unkept count did not answer")
	}
	if e.err == nil {
		t.Fatal("an unkept count answered without an error")
	}
	if got := c.get(countsKept+1, lists, nil, 0); got == e {
		t.Fatal("the refused count was remembered")
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
