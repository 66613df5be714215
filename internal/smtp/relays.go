package smtp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// Route is what a mail's relay is chosen by (docs/deliverability.md): the
// relay its send names, its sender's domain and its recipient's provider
// (mail.Provider's name: gmail, microsoft, yahoo, apple, others).
type Route struct {
	Relay        string
	SenderDomain string
	Provider     string
}

// RelayConfig is one relay of SMTP_URL: its pool, its name, its share of
// the mail and the mail routed to it.
type RelayConfig struct {
	Config
	Name string
	// Weight is the relay's share of the mail no rule routes (a relay of
	// weight 2 takes twice what one of weight 1 takes); 0 makes it a
	// backup, used only when no other relay takes mail.
	Weight int
	// Rate caps the mails a second the relay is given, across every
	// worker (RelayPace); 0 is no cap.
	Rate int
	// Senders and Providers route mails to the relay: from a sender of one
	// of these domains, to a recipient of one of these providers. A relay
	// with a rule takes only mail a rule (or a send) routes to it, and
	// mail another relay could not take.
	Senders   []string
	Providers []string
}

// routed reports whether a rule of the relay routes mails to it.
func (c *RelayConfig) routed() bool { return len(c.Senders) > 0 || len(c.Providers) > 0 }

// RelayPace is a relay's mails-a-second allowance shared by every worker
// (ratelimit.Relays in Redis): up to n mails of perSecond a second, and
// how long until the next when it gave fewer.
type RelayPace interface {
	Take(ctx context.Context, relay string, perSecond, n int) (got int, retryAfter time.Duration, err error)
}

// Relays is a Transport over several relays (docs/deliverability.md). A
// mail goes to the relay its send names, else to a relay routed its
// sender's domain, else to one routed its recipient's provider, else to
// one without rules, by weight (smooth weighted round robin: the split is
// the weights' to a mail). A relay that fails before the recipient
// (connect, greeting, TLS, AUTH, MAIL FROM: StageConnect, StageSender) is
// taken out for a back-off (BackOff, doubling to MaxBackOff while it keeps
// failing) and the mail is handed to the next relay at once: an outage of
// one relay fails nothing and costs no attempt. Only when no relay takes
// the mail does Send answer that failure. A route is a preference: when
// every relay it names is out, the mail goes to the others.
type Relays struct {
	relays []*relay
	pace   RelayPace
	now    func() time.Time

	// BackOff is how long a failing relay is first left out (MaxBackOff
	// at most as it keeps failing).
	BackOff, MaxBackOff time.Duration

	mu sync.Mutex // the weighted round robin's state (relay.current)
}

// relay is one relay and its state.
type relay struct {
	cfg  RelayConfig
	pool *Pool
	i    int

	current int // smooth weighted round robin, under Relays.mu

	outUntil atomic.Int64 // unix nanoseconds the relay is left out until; 0: in
	failures atomic.Int32 // failures in a row before the recipient

	paceMu     sync.Mutex
	tokens     int       // mails taken of the rate and not sent yet, under paceMu
	pacedUntil time.Time // the rate is spent until then, under paceMu

	sent, failovers atomic.Int64 // mails accepted; mails handed on after its failure

	usable func() bool // whether it is in (not backing off) now
}

// NewRelays makes the relays of cfgs (ParseURLs), each with its pool;
// pace (nil: none) keeps their rates.
func NewRelays(cfgs []RelayConfig, pace RelayPace) *Relays {
	rs := &Relays{pace: pace, now: time.Now, BackOff: 5 * time.Second, MaxBackOff: 5 * time.Minute}
	for i, c := range cfgs {
		r := &relay{cfg: c, pool: NewPool(c.Config), i: i}
		r.usable = func() bool { return !r.out(rs.now()) }
		rs.relays = append(rs.relays, r)
	}
	return rs
}

// ErrNoRelay is the failure of a mail no relay can take now: each is out
// after failing or has spent its rate until the mail's context ends.
var ErrNoRelay = errors.New("smtp: no relay takes mail now (each failed before the recipient and is backing off)")

// Send hands m to a relay chosen by route, and to the next ones while a
// relay fails before the recipient.
func (rs *Relays) Send(ctx context.Context, m *Message) Result {
	var tried uint64
	last := Result{Class: Temporary, Stage: StageConnect, Err: ErrNoRelay}
	for {
		r, wait := rs.pick(ctx, m, tried)
		if r == nil {
			if wait <= 0 {
				return last
			}
			// Every relay left has spent its rate: wait for the first.
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return Result{Class: Temporary, Err: ctx.Err()}
			case <-t.C:
			}
			continue
		}
		res := r.pool.send(ctx, m, r.usable)
		switch {
		case res.Class == Accepted || res.Stage > StageSender || ctx.Err() != nil:
			if res.Class == Accepted {
				r.sent.Add(1)
			}
			if ctx.Err() == nil && r.failures.Load() != 0 { // it works again: its next outage backs off from the start
				r.failures.Store(0)
			}
			return res
		case errors.Is(res.Err, errRelayOut):
			// It went out while this mail waited for one of its
			// connections: on to the next, not dialled.
		case res.Stage == StageSender && !relayRefusal(res.Code):
			// A refusal of this mail's sender: the sender's trouble, not
			// the relay's, which stays in for the others' mail; another
			// relay may take it.
			r.failovers.Add(1)
		default:
			rs.fail(r)
		}
		tried |= 1 << r.i
		last = res
		last.Err = fmt.Errorf("relay %s: %w", r.cfg.Name, res.Err)
	}
}

// fail takes r out for its back-off, doubled for each outage in a row.
// The mails that were on their way to it when it failed hand on without
// lengthening it: one outage is one step.
func (rs *Relays) fail(r *relay) {
	r.failovers.Add(1)
	now := rs.now()
	old := r.outUntil.Load() // (the value the swap below replaces)
	if old != 0 && now.UnixNano() < old {
		return // out already
	}
	d := rs.BackOff
	for i := r.failures.Load(); i > 0 && d < rs.MaxBackOff; i-- {
		d *= 2
	}
	if r.outUntil.CompareAndSwap(old, now.Add(min(d, rs.MaxBackOff)).UnixNano()) {
		r.failures.Add(1)
	}
}

// relayRefusal reports whether a reply to MAIL FROM refuses every sender
// alike, the relay's trouble: none (the connection broke), 421 (closing),
// 452 (no storage), 530 (authentication required).
func relayRefusal(code int) bool {
	return code == 0 || code == 421 || code == 452 || code == 530
}

// errRelayOut is the failure of a mail that waited for a connection of a
// relay that went out meanwhile: it was not sent there.
var errRelayOut = errors.New("smtp: the relay went out while the mail waited for it")

// pick is the relay m goes to among those not tried yet: the first tier
// of its route (the send's relay, the relays of its sender's domain, of
// its recipient's provider, those without rules, then any) with a relay
// in and with rate to spare, by weight. Nil with a wait: the relays left
// are in but have spent their rates for that long; nil without: none is
// left.
func (rs *Relays) pick(ctx context.Context, m *Message, tried uint64) (*relay, time.Duration) {
	now := rs.now()
	for tier := range tiers {
		var wait time.Duration
		for {
			r := rs.next(m, tier, tried, now)
			if r == nil {
				break
			}
			w := r.take(ctx, rs.pace, now)
			if w == 0 {
				return r, 0
			}
			if wait == 0 || w < wait {
				wait = w
			}
			tried |= 1 << r.i // spent for now: the others of the tier first
		}
		if wait > 0 {
			// The tier's relays are in but have spent their rates: the mail
			// waits for them (a rate is a cap, not an outage).
			return nil, wait
		}
	}
	return nil, 0
}

// The tiers of a mail's route, in the order they are tried.
const (
	tierSend = iota
	tierSender
	tierProvider
	tierWeighted
	tierAny
	tiers
)

// out reports whether r is backing off at now.
func (r *relay) out(now time.Time) bool {
	until := r.outUntil.Load()
	return until != 0 && now.UnixNano() < until
}

// in reports whether r belongs to the tier of m's route.
func (r *relay) in(m *Message, tier int) bool {
	switch tier {
	case tierSend:
		return m.Route.Relay != "" && r.cfg.Name == m.Route.Relay
	case tierSender:
		return m.Route.SenderDomain != "" && slices.Contains(r.cfg.Senders, m.Route.SenderDomain)
	case tierProvider:
		return m.Route.Provider != "" && slices.Contains(r.cfg.Providers, m.Route.Provider)
	case tierWeighted:
		return r.cfg.Weight > 0 && !r.cfg.routed()
	}
	return true
}

// next is the tier's relay by smooth weighted round robin among those in
// (not backing off) and not tried; nil when there is none.
func (rs *Relays) next(m *Message, tier int, tried uint64, now time.Time) *relay {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var best *relay
	total := 0
	for _, r := range rs.relays {
		if tried&(1<<r.i) != 0 || !r.in(m, tier) {
			continue
		}
		if r.out(now) {
			continue
		}
		w := max(r.cfg.Weight, 1) // a backup, once reached, takes mail
		r.current += w
		total += w
		if best == nil || r.current > best.current {
			best = r
		}
	}
	if best != nil {
		best.current -= total
	}
	return best
}

// take spends one mail of r's rate: 0 when it may go now, else how long
// until the rate has one again. The rate is taken of the shared
// allowance a tenth of a second at a time; without pace (or with Redis
// away) the relay goes unpaced.
func (r *relay) take(ctx context.Context, pace RelayPace, now time.Time) time.Duration {
	if r.cfg.Rate <= 0 || pace == nil {
		return 0
	}
	r.paceMu.Lock()
	defer r.paceMu.Unlock()
	if r.tokens > 0 {
		r.tokens--
		return 0
	}
	if now.Before(r.pacedUntil) {
		return r.pacedUntil.Sub(now)
	}
	got, retry, err := pace.Take(ctx, r.cfg.Name, r.cfg.Rate, max(1, r.cfg.Rate/10))
	if err != nil {
		if ctx.Err() == nil {
			// Redis away: a second's worth goes unpaced before it is
			// asked again (not a wait on it for every mail).
			r.tokens = max(r.cfg.Rate-1, 0)
		}
		return 0 // (a mail whose context ended fails at the relay, untried)
	}
	if got > 0 {
		r.tokens = got - 1
		return 0
	}
	retry = max(retry, time.Millisecond)
	r.pacedUntil = now.Add(retry)
	return retry
}

// Close closes every relay's pool.
func (rs *Relays) Close() error {
	for _, r := range rs.relays {
		r.pool.Close()
	}
	return nil
}

// RelayStats is a relay's state, for metrics.
type RelayStats struct {
	Name      string
	Pool      Stats
	Out       bool      // backing off after failing before the recipient
	OutUntil  time.Time // until when (zero when it never failed)
	Sent      int64     // mails it accepted
	Failovers int64     // mails handed to another relay after it failed them
}

// Stats reads each relay's state.
func (rs *Relays) Stats() []RelayStats {
	now := rs.now().UnixNano()
	out := make([]RelayStats, len(rs.relays))
	for i, r := range rs.relays {
		until := r.outUntil.Load()
		out[i] = RelayStats{Name: r.cfg.Name, Pool: r.pool.Stats(), Out: now < until, Sent: r.sent.Load(), Failovers: r.failovers.Load()}
		if until != 0 {
			out[i].OutUntil = time.Unix(0, until)
		}
	}
	return out
}

// MaxRelays is how many relays SMTP_URL may name.
const MaxRelays = 64

// providerNames are the providers a relay's providers= may name.
var providerNames = func() []string {
	var names []string
	for _, p := range mail.Providers {
		names = append(names, p.Name())
	}
	return names
}()

// ParseURLs reads SMTP_URL naming one relay or several, separated by
// spaces (or line breaks): each an smtp:// or smtps:// URL as ParseURL
// reads it, with name= (its name; the host's first label when absent),
// weight= (0 to 1000; 1 when absent), rate= (mails a second, 0 for no
// cap), senders= and providers= (comma-separated routing rules).
func ParseURLs(raw string) ([]RelayConfig, error) {
	fields := strings.Fields(raw)
	if len(fields) == 0 {
		return nil, errors.New("SMTP_URL: no relay")
	}
	if len(fields) > MaxRelays {
		return nil, fmt.Errorf("SMTP_URL: %d relays; at most %d", len(fields), MaxRelays)
	}
	var out []RelayConfig
	for i, f := range fields {
		rc, err := parseRelay(f)
		if err != nil {
			if len(fields) > 1 {
				return nil, fmt.Errorf("SMTP_URL relay %d: %w", i+1, err)
			}
			return nil, err
		}
		for _, o := range out {
			if o.Name == rc.Name {
				return nil, fmt.Errorf("SMTP_URL relay %d: the name %q is taken by another relay (set name=)", i+1, rc.Name)
			}
		}
		out = append(out, rc)
	}
	if !slices.ContainsFunc(out, func(c RelayConfig) bool { return c.Weight > 0 }) {
		return nil, errors.New("SMTP_URL: every relay has weight=0; at least one must take mail")
	}
	return out, nil
}

func parseRelay(raw string) (RelayConfig, error) {
	cfg, err := ParseURL(raw)
	if err != nil {
		return RelayConfig{}, err
	}
	u, _ := url.Parse(raw)
	q := u.Query()
	rc := RelayConfig{Config: cfg, Weight: 1, Name: strings.ToLower(strings.SplitN(u.Hostname(), ".", 2)[0])}
	if v := q.Get("name"); v != "" {
		rc.Name = v
	} else if !mail.ValidRelayName(rc.Name) {
		rc.Name = "relay" // an IP address, or a label that is no name: name= names it
	}
	if !mail.ValidRelayName(rc.Name) {
		return RelayConfig{}, fmt.Errorf("SMTP_URL: name=%q is not a relay name (a-z, 0-9, - and _, up to 63)", rc.Name)
	}
	num := func(key string, limit int) (int, error) {
		v := q.Get(key)
		if v == "" {
			return -1, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > limit {
			return 0, fmt.Errorf("SMTP_URL: %s=%q is not a number from 0 to %d", key, v, limit)
		}
		return n, nil
	}
	if n, err := num("weight", 1000); err != nil {
		return RelayConfig{}, err
	} else if n >= 0 {
		rc.Weight = n
	}
	if n, err := num("rate", 1_000_000); err != nil {
		return RelayConfig{}, err
	} else if n >= 0 {
		rc.Rate = n
	}
	for _, d := range list(q.Get("senders")) {
		if strings.ContainsAny(d, "@/ ") || !strings.Contains(d, ".") || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") ||
			strings.Contains(d, "..") {
			return RelayConfig{}, fmt.Errorf("SMTP_URL: senders=%q: %q is not a domain", q.Get("senders"), d)
		}
		rc.Senders = append(rc.Senders, d)
	}
	for _, p := range list(q.Get("providers")) {
		if !slices.Contains(providerNames, p) {
			return RelayConfig{}, fmt.Errorf("SMTP_URL: providers=%q: %q is not one of %s", q.Get("providers"), p, strings.Join(providerNames, ", "))
		}
		rc.Providers = append(rc.Providers, p)
	}
	return rc, nil
}

// list is a comma-separated list's lower-cased entries, empty ones left out.
func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.ToLower(strings.TrimSpace(v)); v != "" {
			out = append(out, v)
		}
	}
	return out
}
