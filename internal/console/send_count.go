package console

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// The compose page's audience count is the send's own expansion counted
// (postgres.CountAudience): exact, and at a million contacts a matter of
// seconds. So a request waits for it at most countWait; a count still
// running goes on in the background and the fragment asks again a second
// later. A finished count is kept countFresh, so going back to a
// selection shows it at once.
const (
	countWait    = 150 * time.Millisecond
	countFresh   = 30 * time.Second
	countTimeout = 2 * time.Minute
	countsKept   = 256 // selections remembered
	countsAtOnce = 2   // counts running at once in this process
)

// countFunc counts a send's audience (postgres.DB.CountAudience).
type countFunc func(ctx context.Context, userID int64, lists, excluded []mail.ListRef, groupID int64) (int64, error)

// audienceCounts runs and remembers the compose page's counts.
type audienceCounts struct {
	count countFunc
	log   *slog.Logger
	slots chan struct{}
	mu    sync.Mutex
	byKey map[string]*audienceCount
	// latest is each account's newest count: one that runs or waits for
	// a slot is cancelled when the account asks for another selection, so
	// an account holds one slot at most and cannot keep the others'
	// counts waiting.
	latest map[int64]*audienceCount
}

// audienceCount is one selection's count: done is closed when n or err
// is set.
type audienceCount struct {
	key    string
	cancel context.CancelFunc
	done   chan struct{}
	n      int64
	err    error
	took   time.Duration
	ended  time.Time
}

func newAudienceCounts(count countFunc, log *slog.Logger) *audienceCounts {
	return &audienceCounts{count: count, log: log, slots: make(chan struct{}, countsAtOnce), byKey: map[string]*audienceCount{},
		latest: map[int64]*audienceCount{}}
}

// get is the count of a selection: a fresh finished one, the one running,
// or a new one started now.
func (c *audienceCounts) get(userID int64, lists, excluded []mail.ListRef, groupID int64) *audienceCount {
	key := strconv.FormatInt(userID, 10) + "|" + countURL(keys(lists), keys(excluded), strconv.FormatInt(groupID, 10))
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[key]; e != nil && (!e.finished() || e.err == nil && now.Sub(e.ended) < countFresh) {
		return e
	}
	if len(c.byKey) >= countsKept {
		for k, e := range c.byKey {
			if e.finished() {
				delete(c.byKey, k)
			}
		}
	}
	if prev := c.latest[userID]; prev != nil && !prev.finished() {
		prev.cancel() // the account moved on to another selection
		delete(c.byKey, prev.key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), countTimeout)
	e := &audienceCount{key: key, cancel: cancel, done: make(chan struct{})}
	c.latest[userID] = e
	if len(c.byKey) >= countsKept { // every kept one is running: none is started that is not kept
		cancel()
		e.err, e.ended = errors.New("console: too many audience counts at once"), now
		close(e.done)
		return e
	}
	c.byKey[key] = e
	go c.run(ctx, e, userID, lists, excluded, groupID)
	return e
}

// run counts e, at most countsAtOnce at a time.
func (c *audienceCounts) run(ctx context.Context, e *audienceCount, userID int64, lists, excluded []mail.ListRef, groupID int64) {
	defer e.cancel()
	defer func() { e.ended = time.Now(); close(e.done) }()
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		e.err = ctx.Err()
		return
	}
	start := time.Now()
	e.n, e.err = c.count(ctx, userID, lists, excluded, groupID)
	e.took = time.Since(start)
	if e.err != nil && !errors.Is(e.err, context.Canceled) {
		c.log.Error("audience not counted", "account", userID, "err", e.err)
	}
}

func (e *audienceCount) finished() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// countData is the count fragment's model.
type countData struct {
	Empty    bool   // no recipient list picked
	Counting bool   // still counting: ask again at URL
	Failed   bool   // the count failed
	N        string // the recipients, formatted
	Took     string // how long the count took
	URL      string
}

// sendCount answers GET /sends/count?recipient_id=…&exclude_specific_recipient_id=…&unsubscribe_group_id=…
// with the count fragment: how many would get a send to these lists if
// it went now, after duplicates, exclusions and suppressions. Lists that
// are not the account's count nothing (the count reads the account's
// rows only).
func (h *Handler) sendCount(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lists, excluded := refs(q["recipient_id"]), refs(q["exclude_specific_recipient_id"])
	group, _ := strconv.ParseInt(strings.TrimSpace(q.Get("unsubscribe_group_id")), 10, 64)
	d := countData{Empty: len(lists) == 0, URL: countURL(keys(lists), keys(excluded), q.Get("unsubscribe_group_id"))}
	if !d.Empty {
		e := h.counts.get(session(r).AccountID, lists, excluded, max(group, 0))
		timer := time.NewTimer(countWait)
		defer timer.Stop()
		select {
		case <-e.done:
			d.Failed, d.N, d.Took = e.err != nil, count(e.n), e.took.Round(time.Millisecond).String()
		case <-timer.C:
			d.Counting = true
		case <-r.Context().Done():
			return
		}
	}
	h.fragment(w, r, "send_compose", "audience-count", d)
}

// refs are the valid list names among vals, each once, at most
// mail.MaxSendLists.
func refs(vals []string) []mail.ListRef {
	var out []mail.ListRef
	for _, v := range vals {
		if l, ok := mail.ParseListRef(strings.TrimSpace(v)); ok && !slices.Contains(out, l) && len(out) < mail.MaxSendLists {
			out = append(out, l)
		}
	}
	return out
}

func keys(lists []mail.ListRef) []string {
	out := make([]string, len(lists))
	for i, l := range lists {
		out[i] = l.Key()
	}
	return out
}

// countURL is the count fragment's address for a selection, its lists in
// a fixed order.
func countURL(lists, excluded []string, group string) string {
	v := url.Values{}
	for _, l := range slices.Sorted(slices.Values(lists)) {
		v.Add("recipient_id", l)
	}
	for _, l := range slices.Sorted(slices.Values(excluded)) {
		v.Add("exclude_specific_recipient_id", l)
	}
	v.Set("unsubscribe_group_id", strings.TrimSpace(group))
	return "/sends/count?" + v.Encode()
}

// fragment writes the template name of view's set alone, for htmx.
func (h *Handler) fragment(w http.ResponseWriter, r *http.Request, view, name string, data any) {
	t, ok := h.views.set[view]
	if !ok {
		panic("console: no view " + view)
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, name, data); err != nil {
		h.log.ErrorContext(r.Context(), "fragment not rendered", "view", view, "fragment", name, "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String()))
}
