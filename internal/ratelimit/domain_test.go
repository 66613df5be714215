package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// domains is a Domains over the local Redis (database 11) under a prefix
// of the test's own, whose keys are deleted when it ends.
func domains(t *testing.T, limits ...DomainLimit) (*Domains, *redis.Client, string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 11})
	prefix := fmt.Sprintf("test:{%s:%d}:", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
		rdb.Close()
	})
	return NewDomains(rdb, prefix, limits), rdb, prefix
}

func near(got, want time.Duration) bool {
	return got >= want-50*time.Millisecond && got <= want+50*time.Millisecond
}

// A group's rate: a burst now, the rest laid after each other along the
// rate, a burst at a time, across asks (and so across ranges and
// workers); another group is not touched.
func TestDomainsRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _, _ := domains(t, DomainLimit{Domains: []string{"a.example", "b.example"}, Rate: 10, Per: time.Second, Burst: 10},
		DomainLimit{Domains: []string{"c.example"}, Rate: 1000, Per: time.Second, Burst: 1000})
	if d.Group("b.example") != 0 || d.Group("c.example") != 1 || d.Group("gmail.com") != -1 {
		t.Fatal("groups")
	}
	g, err := d.Take(ctx, "r1", time.Minute, []Ask{{Group: 0, Mails: 25}, {Group: 1, Mails: 300}})
	if err != nil {
		t.Fatal(err)
	}
	if g[0].Mails != 10 || g[0].Held != 0 || g[0].InFlight != 0 || g[1].Mails != 300 {
		t.Fatalf("%+v", g)
	}
	// 15 put off: the first 10 when the bucket has 10 again (1 s), the
	// last 5 half a second later.
	if !near(g[0].Wait(0), time.Second) || !near(g[0].Wait(9), time.Second) || !near(g[0].Wait(10), 1500*time.Millisecond) ||
		!near(g[0].Wait(14), 1500*time.Millisecond) {
		t.Errorf("waits %v %v %v %v", g[0].Wait(0), g[0].Wait(9), g[0].Wait(10), g[0].Wait(14))
	}
	// Another range of the same group right after: nothing now, its 5
	// after the 15 already waiting.
	g, err = d.Take(ctx, "r2", time.Minute, []Ask{{Group: 0, Mails: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if g[0].Mails != 0 || !near(g[0].Wait(0), 2*time.Second) || !near(g[0].Wait(4), 2*time.Second) {
		t.Errorf("second range: %+v, waits %v %v", g[0], g[0].Wait(0), g[0].Wait(4))
	}
}

// A group's cap on mails in flight holds across ranges; a range gives its
// slots back, and the slots of a range that died lapse.
func TestDomainsConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, rdb, prefix := domains(t, DomainLimit{Domains: []string{"a.example"}, Concurrency: 3})
	take := func(holder string, mails, inFlight int) Grant {
		t.Helper()
		g, err := d.Take(ctx, holder, time.Minute, []Ask{{Group: 0, Mails: mails, InFlight: inFlight}})
		if err != nil {
			t.Fatal(err)
		}
		return g[0]
	}
	if g := take("r1", 40, 2); g.Mails != 40 || g.InFlight != 2 {
		t.Fatalf("r1 %+v", g)
	}
	if g := take("r2", 40, 16); g.Mails != 40 || g.InFlight != 1 {
		t.Fatalf("r2 %+v", g)
	}
	if g := take("r3", 40, 16); g.Mails != 0 || g.InFlight != 0 || g.Wait(0) != noSlotWait {
		t.Fatalf("r3 with every slot taken: %+v", g)
	}
	if err := d.Release(ctx, "r1", []int{0}, nil); err != nil {
		t.Fatal(err)
	}
	if g := take("r3", 40, 16); g.InFlight != 2 {
		t.Fatalf("r3 after r1 gave back: %+v", g)
	}
	// r2 and r3 die: their holdings lapse (moved into the past here
	// rather than waited for).
	if err := d.Renew(ctx, "r2", time.Minute, []int{0}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"r2", "r3"} {
		if err := rdb.ZAdd(ctx, prefix+"a.example:concexp", redis.Z{Score: 0, Member: h}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if g := take("r4", 40, 16); g.InFlight != 3 {
		t.Fatalf("r4 after the others lapsed: %+v", g)
	}
	if n, _ := rdb.HLen(ctx, prefix+"a.example:conc").Result(); n != 1 {
		t.Errorf("%d holders kept, want r4 alone", n)
	}
}

// A try-later answer holds the group: HoldMin, doubled with each hold in
// a row up to HoldMax; answers that come together make one hold; a range
// asking meanwhile gets nothing; a success resets the backoff.
func TestDomainsHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, rdb, prefix := domains(t, DomainLimit{Domains: []string{"a.example"}, Rate: 100, Per: time.Second, Burst: 100},
		DomainLimit{Domains: []string{"b.example"}})
	hold := func() time.Duration {
		t.Helper()
		h, err := d.Hold(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	end := func() { // the hold runs out (deleted here rather than waited for)
		t.Helper()
		if err := rdb.Del(ctx, prefix+"a.example:hold").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if h := hold(); h != 30*time.Second {
		t.Fatalf("first hold %v", h)
	}
	if h := hold(); h > 30*time.Second || h < 29*time.Second {
		t.Fatalf("a second answer during the hold: %v, want what is left of the first", h)
	}
	g, err := d.Take(ctx, "r1", time.Minute, []Ask{{Group: 0, Mails: 50}, {Group: 1, Mails: 50}})
	if err != nil {
		t.Fatal(err)
	}
	if g[0].Mails != 0 || g[0].Held < 29*time.Second || g[0].Wait(7) != g[0].Held || g[1].Mails != 50 || g[1].Held != 0 {
		t.Fatalf("during the hold: %+v", g)
	}
	var holds []time.Duration
	for range 6 {
		end()
		holds = append(holds, hold())
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 15 * time.Minute, 15 * time.Minute}
	if fmt.Sprint(holds) != fmt.Sprint(want) {
		t.Errorf("holds in a row %v, want %v", holds, want)
	}
	end()
	g, _ = d.Take(ctx, "r2", time.Minute, []Ask{{Group: 0, Mails: 50}})
	if g[0].Mails != 50 || g[0].Level != 7 {
		t.Fatalf("after the hold: %+v", g[0])
	}
	if err := d.Release(ctx, "r2", nil, []int{0}); err != nil {
		t.Fatal(err)
	}
	if h := hold(); h != 30*time.Second {
		t.Errorf("after a success the hold is %v, want 30s again", h)
	}
}
