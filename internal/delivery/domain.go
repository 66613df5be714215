package delivery

import (
	"context"
	"errors"
	"net/textproto"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/smtp"
)

// Per-recipient-domain throttling (docs/throttling.md). A range groups
// its mails by limited domain group and asks Redis once for all of them
// (ratelimit.Domains.Take): a group on hold waits whole; past its rate the
// rest waits, laid along the rate after what waits already; at most its
// cap of mails in flight. A try-later answer puts the group on hold for
// every worker and the rest of its mails in the range are not tried. The
// mails put off stay pending, their attempt not counted, Deferred, and the
// range is queued again for each time they are due (a revisit, which
// sends that range only). Mails of other domains go at once.

// domainPlan is how one range's mails go under the domain limits; nil
// when none of them is limited (the range goes as it would without).
type domainPlan struct {
	e      *Engine
	holder string       // the range's name for its in-flight slots
	runs   []*domainRun // the limited groups of the range
	capped []*domainRun // those with an in-flight cap, picked from first
	of     []*domainRun // per claimed mail: its group's run, nil for an unlimited domain
	// general are the mails to send outside capped groups, in claim
	// order; the rest of the claimed mails are in capped runs or put off.
	general []int32
	gnext   atomic.Int64
	putOff  []putOff // the mails that wait untried
}

// putOff is a claimed mail put off before sending, and its outcome.
type putOff struct {
	i int32
	o mail.Outcome
}

// domainRun is one limited group's part of a range.
type domainRun struct {
	p     *domainPlan
	group int
	grant ratelimit.Grant
	n     int     // the group's mails in the range
	idx   []int32 // capped: its mails to send
	next  atomic.Int32
	cap   int32 // in flight at once; 0: no cap
	fly   atomic.Int32

	nextAt *time.Time    // when the mails put off last are due (shared by them)
	wait   time.Duration // and their wait

	holding atomic.Bool // answered try-later in this range
	mu      sync.Mutex  // held while the hold is asked of Redis
	until   time.Time   // the hold's end, under mu
	sent    atomic.Bool // a mail of the group was accepted
}

// domainOf is the lower-cased domain of an address as it goes out (an
// internationalized one as its A-label, as DOMAIN_LIMITS names it); it
// allocates only for one that has capitals or is internationalized.
func domainOf(e mail.Email) string {
	s := e.Wire()
	s = s[strings.LastIndexByte(s, '@')+1:]
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// minPutOff is the least a mail put off by its domain waits.
const minPutOff = 50 * time.Millisecond

// holderSeq names ranges' holdings: the process's start and a count.
var (
	holderSeq    atomic.Int64
	holderPrefix = strconv.Itoa(os.Getpid()) + "." + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
)

// planDomains groups claimed by limited domain and asks Redis for what
// may go (one call for every group of the range). Without limits, or
// without a limited mail in the range, it answers nil at the cost of a
// map lookup per mail. With Redis away the range goes unthrottled (a
// try-later answer still holds the rest of its group in the range).
func (e *Engine) planDomains(ctx context.Context, sendID int64, claimed []mail.Claimed) *domainPlan {
	if e.Domains == nil {
		return nil
	}
	var groups []int32 // per mail: its group's run, -1 none; made at the first limited mail
	var byGroup []int32
	var runs []*domainRun
	for i := range claimed {
		g := e.Domains.Group(domainOf(claimed[i].Recipient.Email))
		if g < 0 {
			if groups != nil {
				groups[i] = -1
			}
			continue
		}
		if groups == nil {
			groups = make([]int32, len(claimed))
			for j := range i {
				groups[j] = -1
			}
			byGroup = make([]int32, e.Domains.Len())
			for j := range byGroup {
				byGroup[j] = -1
			}
		}
		if byGroup[g] < 0 {
			byGroup[g] = int32(len(runs))
			runs = append(runs, &domainRun{group: g})
		}
		groups[i] = byGroup[g]
		runs[byGroup[g]].n++
	}
	if groups == nil {
		return nil
	}
	p := &domainPlan{e: e, holder: holderPrefix + strconv.FormatInt(holderSeq.Add(1), 36), runs: runs,
		of: make([]*domainRun, len(claimed)), general: make([]int32, 0, len(claimed))}
	asks := make([]ratelimit.Ask, len(runs))
	for i, r := range runs {
		r.p = p
		asks[i] = ratelimit.Ask{Group: r.group, Mails: r.n, InFlight: min(r.n, e.Config.Concurrency)}
	}
	grants, err := e.Domains.Take(ctx, p.holder, e.Config.Lease, asks)
	if err != nil {
		e.Log.WarnContext(ctx, "domain limits not checked: the range goes", "send_id", sendID, "err", err)
		grants = make([]ratelimit.Grant, len(runs))
		for i, r := range runs {
			grants[i] = ratelimit.Grant{Mails: r.n}
		}
	}
	for i, r := range runs {
		r.grant = grants[i]
		if r.cap = int32(r.grant.InFlight); r.cap > 0 {
			r.idx = make([]int32, 0, r.grant.Mails)
			p.capped = append(p.capped, r)
		}
	}
	now := time.Now()
	taken := make([]int, len(runs))
	for i := range claimed {
		if groups[i] < 0 {
			p.general = append(p.general, int32(i))
			continue
		}
		r := runs[groups[i]]
		j := taken[groups[i]]
		taken[groups[i]]++
		switch {
		case j >= r.grant.Mails: // held, past the rate, or no slot free: waits untried
			if w := max(r.grant.Wait(j-r.grant.Mails), minPutOff); r.nextAt == nil || w != r.wait {
				at := now.Add(w) // one time per step, shared by its mails
				r.nextAt, r.wait = &at, w
			}
			p.putOff = append(p.putOff, putOff{int32(i), mail.Outcome{ID: claimed[i].ID, Email: claimed[i].Recipient.Email,
				Status: mail.DeliveryPending, NextAt: r.nextAt, NotTried: true, Deferred: true}})
		case r.cap > 0:
			p.of[i] = r
			r.idx = append(r.idx, int32(i))
		default:
			p.of[i] = r
			p.general = append(p.general, int32(i))
		}
	}
	return p
}

// sending is how many mails of the range go to the transport.
func (p *domainPlan) sending(claimed int) int {
	if p == nil {
		return claimed
	}
	return claimed - len(p.putOff)
}

// fill writes the outcomes of the mails put off before sending (and
// counts them).
func (p *domainPlan) fill(out []mail.Outcome) {
	if p == nil {
		return
	}
	for _, w := range p.putOff {
		out[w.i] = w.o
		p.e.Metrics.mail(&out[w.i])
	}
}

// next is the next mail to send and its group's run (nil: an unlimited
// domain), or -1 when none is left for this sender: the mails of capped
// groups first, while they have a slot free, then the rest in claim
// order. A sender leaves when what is left is capped groups at their cap:
// their own senders go on with them.
func (p *domainPlan) next(n *atomic.Int64, claimed int) (int, *domainRun) {
	if p == nil {
		if i := int(n.Add(1) - 1); i < claimed {
			return i, nil
		}
		return -1, nil
	}
	for _, r := range p.capped {
		if i, ok := r.take(); ok {
			return i, r
		}
	}
	if i := int(p.gnext.Add(1) - 1); i < len(p.general) {
		j := p.general[i]
		return int(j), p.of[j]
	}
	return -1, nil
}

// take is the run's next mail when it has a slot free.
func (r *domainRun) take() (int, bool) {
	for {
		f := r.fly.Load()
		if f >= r.cap || int(r.next.Load()) >= len(r.idx) {
			return 0, false
		}
		if r.fly.CompareAndSwap(f, f+1) {
			break
		}
	}
	if j := int(r.next.Add(1) - 1); j < len(r.idx) {
		return int(r.idx[j]), true
	}
	r.fly.Add(-1)
	return 0, false
}

// free gives back the in-flight slot of a mail of the run that was not
// sent.
func (r *domainRun) free() {
	if r != nil && r.cap > 0 {
		r.fly.Add(-1)
	}
}

// held says the group answered try-later in this range: its mails not
// tried yet wait, and o is the outcome of c.
func (r *domainRun) held(c *mail.Claimed, o *mail.Outcome) bool {
	if r == nil || !r.holding.Load() {
		return false
	}
	next := r.hold(context.Background()) // known, or being asked of Redis: wait for it
	*o = mail.Outcome{ID: c.ID, Email: c.Recipient.Email, Status: mail.DeliveryPending, NextAt: &next, NotTried: true, Deferred: true}
	return true
}

// done ends one mail of the run: a try-later answer puts the group on hold
// (once per range; in Redis for every worker) and o waits for the hold's
// end; an accepted mail marks the group sent.
func (r *domainRun) done(ctx context.Context, res smtp.Result, o *mail.Outcome) {
	if r == nil {
		return
	}
	defer r.free()
	switch {
	case res.Class == smtp.Accepted:
		r.sent.Store(true)
	case tryLater(res):
		until := r.hold(ctx)
		if o.Status == mail.DeliveryPending {
			o.NextAt, o.Deferred = &until, true
		}
	}
}

// hold puts the run's group on hold, once per range, and answers when it
// ends. The range's senders skip the group from the moment the first
// try-later answer is in, not from Redis's answer.
func (r *domainRun) hold(ctx context.Context) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.until.IsZero() {
		return r.until
	}
	r.holding.Store(true)
	e := r.p.e
	name := e.Domains.Name(r.group)
	wait, err := e.Domains.Hold(ctx, r.group)
	if err != nil {
		wait = e.Domains.MinHold()
		e.Log.WarnContext(ctx, "domain hold not shared: this range holds it alone", "domain", name, "err", err)
	}
	r.until = time.Now().Add(wait)
	e.Metrics.domainHolds.WithLabelValues(name).Inc()
	e.Log.InfoContext(ctx, "domain answered try-later: its mails wait", "domain", name, "for", wait.String())
	return r.until
}

// slotted are the groups the range holds in-flight slots of.
func (p *domainPlan) slotted() []int {
	var gs []int
	for _, r := range p.capped {
		gs = append(gs, r.group)
	}
	return gs
}

// renew keeps the range's in-flight slots while it sends.
func (p *domainPlan) renew(ctx context.Context) {
	if p == nil || len(p.capped) == 0 {
		return
	}
	if err := p.e.Domains.Renew(ctx, p.holder, p.e.Config.Lease, p.slotted()); err != nil {
		p.e.Log.WarnContext(ctx, "domain slots not renewed", "err", err)
	}
}

// release gives the range's in-flight slots back and resets the backoff
// of groups that were held before and took mail in this range.
func (p *domainPlan) release(ctx context.Context) {
	if p == nil {
		return
	}
	var reset []int
	for _, r := range p.runs {
		if r.grant.Level > 0 && r.sent.Load() && !r.holding.Load() {
			reset = append(reset, r.group)
		}
	}
	if err := p.e.Domains.Release(ctx, p.holder, p.slotted(), reset); err != nil {
		p.e.Log.WarnContext(ctx, "domain slots not given back: they lapse", "err", err)
	}
}

// revisits are the times the mails the range put off for their domain
// are due, each once: a handful (a hold's end, a few steps of a rate per
// group; ratelimit.Chunks).
func (p *domainPlan) revisits(outcomes []mail.Outcome) []time.Time {
	if p == nil {
		return nil
	}
	var at []time.Time
	for i := range outcomes {
		if o := &outcomes[i]; o.Deferred && o.Status == mail.DeliveryPending && o.NextAt != nil &&
			!slices.ContainsFunc(at, o.NextAt.Equal) {
			at = append(at, *o.NextAt)
		}
	}
	return at
}

// tryLater reports whether a refusal at the recipient or the message says
// the domain takes no more mail for now: a 421 (the server closes the
// channel), a 4xx whose enhanced code is a policy or capacity status
// (4.7.x: rate, reputation, greylisting; 4.3.2 not accepting; 4.4.5
// congestion), or a 4xx that asks to try later. A 4xx about the mailbox
// (4.1.x, 4.2.x: over quota, that user receiving too fast) is the
// address's alone, and a timeout or a dropped connection says nothing of
// the domain.
func tryLater(res smtp.Result) bool {
	if res.Class != smtp.Temporary || (res.Stage != smtp.StageRecipient && res.Stage != smtp.StageData) {
		return false
	}
	var tp *textproto.Error
	if !errors.As(res.Err, &tp) || tp.Code < 400 || tp.Code >= 500 {
		return false
	}
	if tp.Code == 421 {
		return true
	}
	msg := strings.TrimSpace(tp.Msg)
	switch {
	case strings.HasPrefix(msg, "4.1."), strings.HasPrefix(msg, "4.2."):
		return false
	case strings.HasPrefix(msg, "4.7."), strings.HasPrefix(msg, "4.3.2"), strings.HasPrefix(msg, "4.4.5"):
		return true
	}
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "try again later") || strings.Contains(msg, "try later")
}
