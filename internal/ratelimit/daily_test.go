package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mailroom/mailroom/internal/ratelimit"
)

// A day's limit holds across many takers at once, per key, and the count
// expires when asked.
func TestDailyLimit(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 12})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis: %v", err)
	}
	prefix := "test:daily:" + time.Now().Format("150405.000000") + ":"
	d := ratelimit.NewDaily(rdb, prefix)
	until := time.Now().Add(time.Hour)
	var total atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			got, err := d.TakeDay(ctx, "a", 50, 7, until)
			if err != nil {
				t.Error(err)
			}
			total.Add(int64(got))
		})
	}
	wg.Wait()
	if total.Load() != 50 {
		t.Fatalf("20 takers of 7 under a limit of 50 got %d", total.Load())
	}
	if got, _ := d.TakeDay(ctx, "a", 50, 1, until); got != 0 {
		t.Fatalf("past the limit: %d", got)
	}
	if got, _ := d.TakeDay(ctx, "a", 60, 20, until); got != 10 {
		t.Fatalf("a higher limit the same day: %d, want 10", got)
	}
	if got, _ := d.TakeDay(ctx, "b", 5, 3, until); got != 3 {
		t.Fatalf("another key: %d", got)
	}
	if ttl := rdb.TTL(ctx, prefix+"a").Val(); ttl < 59*time.Minute || ttl > time.Hour {
		t.Fatalf("kept for %s", ttl)
	}
}
