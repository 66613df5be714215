// Package ratelimit holds per-account token buckets (GCRA,
// github.com/go-redis/redis_rate) kept in Redis, so they hold across every
// process of a deployment: the API's request limit and the delivery
// engine's sending rate.
package ratelimit

import (
	"context"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// buckets are per-account token buckets in Redis under a key prefix.
type buckets struct {
	l      *redis_rate.Limiter
	prefix string
}

func newBuckets(rdb redis.UniversalClient, prefix string) buckets {
	return buckets{l: redis_rate.NewLimiter(rdb), prefix: prefix}
}

// key is account's bucket.
func (b buckets) key(account int64) string { return b.prefix + strconv.FormatInt(account, 10) }

// Limiter allows an account PerSecond requests a second on average, Burst
// at once.
type Limiter struct {
	buckets
	limit redis_rate.Limit
}

// New is a limiter of perSecond requests a second and burst at once per
// account (burst 0: twice perSecond), its Redis keys under prefix.
func New(rdb redis.UniversalClient, prefix string, perSecond, burst int) *Limiter {
	if burst <= 0 {
		burst = 2 * perSecond
	}
	return &Limiter{buckets: newBuckets(rdb, prefix), limit: redis_rate.Limit{Rate: perSecond, Burst: burst, Period: time.Second}}
}

// Allow takes one request of account's bucket: ok, or how long until the
// next one is allowed.
func (l *Limiter) Allow(ctx context.Context, account int64) (ok bool, retryAfter time.Duration, err error) {
	r, err := l.l.Allow(ctx, l.key(account), l.limit)
	if err != nil {
		return false, 0, err
	}
	return r.Allowed > 0, r.RetryAfter, nil
}

// Sender is the delivery engine's per-account sending rate, shared by
// every worker: each account's rate is its own (accounts.send_rate).
type Sender struct{ buckets }

// NewSender is the sending rate's buckets in rdb under prefix.
func NewSender(rdb redis.UniversalClient, prefix string) *Sender {
	return &Sender{newBuckets(rdb, prefix)}
}

// Take takes up to n mails of account's allowance of perSecond a second
// (as many at once): how many it got, and how long until the next one
// when it got fewer than n.
func (s *Sender) Take(ctx context.Context, account int64, perSecond, n int) (got int, retryAfter time.Duration, err error) {
	return s.take(ctx, s.key(account), perSecond, n)
}

// take takes up to n of key's allowance of perSecond a second (as many at
// once).
func (b buckets) take(ctx context.Context, key string, perSecond, n int) (got int, retryAfter time.Duration, err error) {
	r, err := b.l.AllowAtMost(ctx, key, redis_rate.Limit{Rate: perSecond, Burst: perSecond, Period: time.Second}, n)
	if err != nil {
		return 0, 0, err
	}
	return r.Allowed, r.RetryAfter, nil
}

// Relays are the relays' sending rates (smtp.RelayPace), shared by every
// worker: a relay's rate= caps what all of them hand it.
type Relays struct{ buckets }

// NewRelays is the relays' buckets in rdb under prefix.
func NewRelays(rdb redis.UniversalClient, prefix string) *Relays {
	return &Relays{newBuckets(rdb, prefix)}
}

// Take takes up to n mails of relay's allowance of perSecond a second (as
// many at once): how many it got, and how long until the next one when it
// got fewer than n.
func (r *Relays) Take(ctx context.Context, relay string, perSecond, n int) (got int, retryAfter time.Duration, err error) {
	return r.take(ctx, r.prefix+relay, perSecond, n)
}

// Keyed allows each key (an address, an IP) Limit.Rate tries a
// Limit.Period on average, Limit.Burst at once: the console's sign-in and
// password reset limits.
type Keyed struct {
	l      *redis_rate.Limiter
	prefix string
	limit  redis_rate.Limit
}

// NewKeyed is a keyed limiter of rate tries per period, burst at once, its
// Redis keys under prefix.
func NewKeyed(rdb redis.UniversalClient, prefix string, rate, burst int, period time.Duration) *Keyed {
	return &Keyed{l: redis_rate.NewLimiter(rdb), prefix: prefix, limit: redis_rate.Limit{Rate: rate, Burst: burst, Period: period}}
}

// Allow takes one try of key's bucket: ok, or how long until the next one
// is allowed.
func (k *Keyed) Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error) {
	r, err := k.l.Allow(ctx, k.prefix+key, k.limit)
	if err != nil {
		return false, 0, err
	}
	return r.Allowed > 0, r.RetryAfter, nil
}
