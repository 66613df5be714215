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
