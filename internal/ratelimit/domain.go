package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Domains are the per-recipient-domain limits of the delivery engine,
// kept in Redis so that every worker draws from them (docs/throttling.md).
// Each limited group of domains has, under prefix + its first domain:
//
//	:hold     set while the group is on hold (a try-later answer); its TTL is the hold
//	:level    holds in a row: the next hold is HoldMin << level, at most HoldMax
//	:rate     the GCRA bucket's theoretical arrival time (ms)
//	:backlog  up to when the bucket's future is promised to mails put off (ms)
//	:conc     a hash: range holder -> mails it may have in flight
//	:concexp  a sorted set: range holder -> when its holding lapses (ms)
//
// A range asks for all its limited groups in one script call (Take) and
// gives its holdings back in one pipeline (Release); a try-later answer
// costs one call (Hold). Domains without a limit cost nothing: they are
// looked up in a map held in memory.
type Domains struct {
	rdb    redis.UniversalClient
	limits []DomainLimit
	group  map[string]int // domain -> index in limits
	keys   [][]string     // per group: hold, level, rate, backlog, conc, concexp

	// HoldMin is the first hold of a group that answered try-later, doubled
	// with every hold in a row up to HoldMax; a mail accepted resets it.
	HoldMin, HoldMax time.Duration
}

// The keys of a group, in the order the scripts take them.
const (
	keyHold = iota
	keyLevel
	keyRate
	keyBacklog
	keyConc
	keyConcExp
	groupKeys
)

// NewDomains keeps the state of limits in rdb under prefix. The prefix
// should hold a Redis Cluster hash tag (mailroom:{domains}:): a range's
// call touches the keys of several groups at once.
func NewDomains(rdb redis.UniversalClient, prefix string, limits []DomainLimit) *Domains {
	d := &Domains{rdb: rdb, limits: limits, group: map[string]int{}, HoldMin: 30 * time.Second, HoldMax: 15 * time.Minute}
	for i, l := range limits {
		for _, name := range l.Domains {
			d.group[name] = i
		}
		base := prefix + l.Domains[0]
		d.keys = append(d.keys, []string{base + ":hold", base + ":level", base + ":rate", base + ":backlog", base + ":conc", base + ":concexp"})
	}
	return d
}

// Group is the limited group of a lower-case domain, or -1.
func (d *Domains) Group(domain string) int {
	if g, ok := d.group[domain]; ok {
		return g
	}
	return -1
}

// Limit is group g's limit.
func (d *Domains) Limit(g int) DomainLimit { return d.limits[g] }

// Name is group g's first domain, its name in logs and metrics.
func (d *Domains) Name(g int) string { return d.limits[g].Domains[0] }

// MinHold is HoldMin: the hold of a group when the shared one cannot be
// asked.
func (d *Domains) MinHold() time.Duration { return d.HoldMin }

// Len is the number of limited groups.
func (d *Domains) Len() int { return len(d.limits) }

// Ask is what one range would send of a group: Mails in all, at most
// InFlight at once (0: the group has no cap).
type Ask struct {
	Group, Mails, InFlight int
}

// Grant is what a range may send of a group now.
type Grant struct {
	// Held is how much longer the group is on hold: none of its mails may
	// go, and Mails is 0.
	Held time.Duration
	// Mails may go now; InFlight of them at once across the range (0: no
	// cap).
	Mails, InFlight int
	// Level is the group's holds in a row: a mail accepted should reset it
	// (Release).
	Level int

	wait     time.Duration // until the bucket has room for the rest (its backlog's start)
	emission time.Duration // the rate's time per mail
	burst    int
	rest     int // asked for and not granted
}

// Wait is how long the j-th mail past Mails waits (j from 0): the mails
// put off are laid after each other's along the group's rate, across
// every range and worker, and come back a burst at a time, when the
// bucket has room for the whole burst (in at most Chunks steps: past
// that, in bigger steps, whose excess waits again).
func (g Grant) Wait(j int) time.Duration {
	if g.Held > 0 {
		return g.Held
	}
	if g.emission <= 0 || g.burst <= 0 {
		return g.wait
	}
	step := max(g.burst, (g.rest+Chunks-1)/Chunks)
	n := min((j/step+1)*step, g.rest)
	return g.wait + time.Duration(n)*g.emission
}

// Chunks is the most steps a grant's mails put off come back in (Wait):
// each step is a range run again.
const Chunks = 4

// noSlotWait is how long mails wait when every in-flight slot of their
// group is taken by other ranges (which give them back within a range's
// time).
const noSlotWait = time.Second

// take is the range's call: for each group asked for, in the order of
// the asks, {held ms, mails granted, in flight granted, level, wait ms}.
// The clock is Redis's (TIME), so every worker reads the same one.
var take = redis.NewScript(`
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1483228800) * 1000 + tonumber(t[2]) / 1000
local holder, ttl, noslot = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for g = 0, #KEYS / 6 - 1 do
  local k, a = g * 6, 3 + g * 5
  local want, em, burst = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local cap, inflight = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local held = redis.call('PTTL', KEYS[k + 1])
  local level = tonumber(redis.call('GET', KEYS[k + 2]) or '0')
  local allowed, slots, wait = 0, 0, 0
  if held > 0 then
    wait = held
  else
    held = 0
    local free = want
    if cap > 0 then
      -- holdings of ranges that died lapse
      local dead = redis.call('ZRANGEBYSCORE', KEYS[k + 6], '-inf', now)
      if #dead > 0 then
        redis.call('HDEL', KEYS[k + 5], unpack(dead))
        redis.call('ZREMRANGEBYSCORE', KEYS[k + 6], '-inf', now)
      end
      local used = 0
      for _, v in ipairs(redis.call('HVALS', KEYS[k + 5])) do used = used + tonumber(v) end
      free = cap - used
    end
    if free <= 0 then
      wait = noslot
    else
      allowed = want
      if em > 0 then
        -- GCRA: a mail is allowed when tat + em - em * burst <= now
        local tat = math.max(tonumber(redis.call('GET', KEYS[k + 3]) or '0'), now)
        local offset = em * burst
        allowed = math.max(0, math.min(want, math.floor((now - tat + offset) / em)))
        if allowed > 0 then
          tat = tat + allowed * em
          redis.call('SET', KEYS[k + 3], tostring(tat), 'PX', math.ceil(tat - now) + 1000)
        end
        if allowed < want then
          -- the rest is laid after the mails put off before it
          local from = math.max(tonumber(redis.call('GET', KEYS[k + 4]) or '0'), tat - offset, now)
          local to = from + (want - allowed) * em
          redis.call('SET', KEYS[k + 4], tostring(to), 'PX', math.ceil(to - now) + 1000)
          wait = math.ceil(from - now)
        end
      end
      if cap > 0 and allowed > 0 then
        slots = math.min(free, inflight, allowed)
        redis.call('HINCRBY', KEYS[k + 5], holder, slots)
        redis.call('ZADD', KEYS[k + 6], now + ttl, holder)
        redis.call('PEXPIRE', KEYS[k + 5], 2 * ttl)
        redis.call('PEXPIRE', KEYS[k + 6], 2 * ttl)
      end
    end
  end
  out[#out + 1] = {held, allowed, slots, level, wait}
end
return out
`)

// Take asks for the mails of a range, one ask per group (one round trip
// for them all). A range that was granted in-flight slots gives them
// back with Release; they lapse after ttl unless renewed (Renew).
func (d *Domains) Take(ctx context.Context, holder string, ttl time.Duration, asks []Ask) ([]Grant, error) {
	if len(asks) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, groupKeys*len(asks))
	args := make([]any, 0, 3+5*len(asks))
	args = append(args, holder, ttl.Milliseconds(), noSlotWait.Milliseconds())
	for _, a := range asks {
		l := d.limits[a.Group]
		keys = append(keys, d.keys[a.Group]...)
		inFlight := 0
		if l.Concurrency > 0 {
			inFlight = max(1, a.InFlight)
		}
		args = append(args, a.Mails, strconv.FormatFloat(float64(l.Emission())/float64(time.Millisecond), 'f', -1, 64), l.Burst, l.Concurrency, inFlight)
	}
	v, err := take.Run(ctx, d.rdb, keys, args...).Slice()
	if err != nil {
		return nil, err
	}
	if len(v) != len(asks) {
		return nil, fmt.Errorf("ratelimit: %d grants for %d asks", len(v), len(asks))
	}
	grants := make([]Grant, len(asks))
	for i, r := range v {
		f, ok := r.([]any)
		if !ok || len(f) != 5 {
			return nil, fmt.Errorf("ratelimit: grant %v", r)
		}
		var n [5]int64
		for j := range n {
			if n[j], ok = f[j].(int64); !ok {
				return nil, fmt.Errorf("ratelimit: grant %v", r)
			}
		}
		l := d.limits[asks[i].Group]
		grants[i] = Grant{Held: time.Duration(n[0]) * time.Millisecond, Mails: int(n[1]), InFlight: int(n[2]), Level: int(n[3]),
			wait: time.Duration(n[4]) * time.Millisecond, emission: l.Emission(), burst: l.Burst, rest: asks[i].Mails - int(n[1])}
	}
	return grants, nil
}

// hold puts a group on hold unless it is already: HoldMin doubled for
// each hold in a row (level), at most HoldMax; it answers the hold's
// time left in ms.
var hold = redis.NewScript(`
local left = redis.call('PTTL', KEYS[1])
if left > 0 then return left end
local level = tonumber(redis.call('GET', KEYS[2]) or '0')
local ms = math.min(tonumber(ARGV[1]) * 2 ^ math.min(level, 30), tonumber(ARGV[2]))
redis.call('SET', KEYS[1], '1', 'PX', math.floor(ms))
redis.call('SET', KEYS[2], math.min(level + 1, 30), 'PX', tonumber(ARGV[3]))
return math.floor(ms)
`)

// Hold puts group g on hold after a try-later answer, and answers how
// long it lasts. Answers that come together from several ranges make one
// hold: while the group is held, Hold answers the time left.
func (d *Domains) Hold(ctx context.Context, g int) (time.Duration, error) {
	k := d.keys[g]
	// The level is forgotten an hour after the last hold, or at a success.
	ms, err := hold.Run(ctx, d.rdb, []string{k[keyHold], k[keyLevel]},
		d.HoldMin.Milliseconds(), d.HoldMax.Milliseconds(), (d.HoldMax + time.Hour).Milliseconds()).Int64()
	return time.Duration(ms) * time.Millisecond, err
}

// renew moves holdings' lapse on.
var renew = redis.NewScript(`
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1483228800) * 1000 + tonumber(t[2]) / 1000
local ttl = tonumber(ARGV[2])
for g = 0, #KEYS / 2 - 1 do
  if redis.call('ZADD', KEYS[g * 2 + 2], 'XX', 'CH', now + ttl, ARGV[1]) > 0 then
    redis.call('PEXPIRE', KEYS[g * 2 + 1], 2 * ttl)
    redis.call('PEXPIRE', KEYS[g * 2 + 2], 2 * ttl)
  end
end
return 0
`)

// Renew keeps holder's in-flight slots of groups for another ttl (a
// range slower than its holdings' ttl).
func (d *Domains) Renew(ctx context.Context, holder string, ttl time.Duration, groups []int) error {
	if len(groups) == 0 {
		return nil
	}
	keys := make([]string, 0, 2*len(groups))
	for _, g := range groups {
		keys = append(keys, d.keys[g][keyConc], d.keys[g][keyConcExp])
	}
	return renew.Run(ctx, d.rdb, keys, holder, ttl.Milliseconds()).Err()
}

// Release gives back holder's in-flight slots of the groups in slots and
// forgets the holds in a row of the groups in reset (a mail of theirs was
// accepted), in one round trip.
func (d *Domains) Release(ctx context.Context, holder string, slots, reset []int) error {
	if len(slots) == 0 && len(reset) == 0 {
		return nil
	}
	_, err := d.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, g := range slots {
			p.HDel(ctx, d.keys[g][keyConc], holder)
			p.ZRem(ctx, d.keys[g][keyConcExp], holder)
		}
		for _, g := range reset {
			p.Del(ctx, d.keys[g][keyLevel])
		}
		return nil
	})
	return err
}
