package ratelimit

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Daily counts mails against a day's limit under a key, shared by every
// worker: a sending domain's warm-up allowance (docs/deliverability.md).
type Daily struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewDaily is the daily counts in rdb under prefix.
func NewDaily(rdb redis.UniversalClient, prefix string) *Daily {
	return &Daily{rdb: rdb, prefix: prefix}
}

// takeDay takes what is left of ARGV[1] (the limit) up to ARGV[2] (asked)
// under KEYS[1], the count kept until ARGV[3] (unix seconds): one script,
// so workers taking at once never pass the limit together.
var takeDay = redis.NewScript(`
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local got = math.min(tonumber(ARGV[2]), tonumber(ARGV[1]) - used)
if got <= 0 then return 0 end
redis.call('INCRBY', KEYS[1], got)
redis.call('EXPIREAT', KEYS[1], ARGV[3])
return got
`)

// TakeDay takes up to n of the limit of key's day: how many it got, the
// count kept until until (the day's end and some).
func (d *Daily) TakeDay(ctx context.Context, key string, limit, n int, until time.Time) (int, error) {
	got, err := takeDay.Run(ctx, d.rdb, []string{d.prefix + key}, limit, n, until.Unix()).Int()
	return got, err
}
