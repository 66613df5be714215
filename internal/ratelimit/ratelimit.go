// Package ratelimit is the per-account request limit of the API: a token
// bucket (GCRA, github.com/go-redis/redis_rate) kept in Redis, so it holds
// across every API process of a deployment.
package ratelimit

import (
	"context"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Limiter allows an account PerSecond requests a second on average, Burst
// at once.
type Limiter struct {
	l      *redis_rate.Limiter
	limit  redis_rate.Limit
	prefix string
}

// New is a limiter of perSecond requests a second and burst at once per
// account (burst 0: twice perSecond), its Redis keys under prefix.
func New(rdb redis.UniversalClient, prefix string, perSecond, burst int) *Limiter {
	if burst <= 0 {
		burst = 2 * perSecond
	}
	return &Limiter{l: redis_rate.NewLimiter(rdb), prefix: prefix,
		limit: redis_rate.Limit{Rate: perSecond, Burst: burst, Period: time.Second}}
}

// Allow takes one request of account's bucket: ok, or how long until the
// next one is allowed.
func (l *Limiter) Allow(ctx context.Context, account int64) (ok bool, retryAfter time.Duration, err error) {
	r, err := l.l.Allow(ctx, l.prefix+strconv.FormatInt(account, 10), l.limit)
	if err != nil {
		return false, 0, err
	}
	return r.Allowed > 0, r.RetryAfter, nil
}

// Take takes up to n of key's tokens from a bucket of perSecond a second
// (as much at once): how many it got, and how long until the next one
// when it got fewer than n. The delivery engine's per-account sending
// rate, shared by every worker.
func Take(ctx context.Context, l *redis_rate.Limiter, key string, perSecond, n int) (got int, retryAfter time.Duration, err error) {
	r, err := l.AllowAtMost(ctx, key, redis_rate.Limit{Rate: perSecond, Burst: perSecond, Period: time.Second}, n)
	if err != nil {
		return 0, 0, err
	}
	return r.Allowed, r.RetryAfter, nil
}

// Sender is the per-account sending rate: Take of an account's bucket
// under prefix.
type Sender struct {
	l      *redis_rate.Limiter
	prefix string
}

// NewSender is the sending rate's buckets in rdb under prefix.
func NewSender(rdb redis.UniversalClient, prefix string) *Sender {
	return &Sender{l: redis_rate.NewLimiter(rdb), prefix: prefix}
}

// Take takes up to n mails of account's perSecond allowance.
func (s *Sender) Take(ctx context.Context, account int64, perSecond, n int) (int, time.Duration, error) {
	return Take(ctx, s.l, s.prefix+strconv.FormatInt(account, 10), perSecond, n)
}
