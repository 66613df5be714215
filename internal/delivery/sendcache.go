package delivery

import (
	"context"
	"fmt"
	"sync"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/render"
)

// compiledSend is a running send as a worker's batches use it: compiled
// once per worker and version.
type compiledSend struct {
	send Send
	tmpl *render.Template
	form *render.Form
	last int64 // highest delivery id
	// steps records the mails of the send's ranges running here in steps
	// (steps.go); shared by the entry's copies.
	steps *stepQueue
}

// sendCache keeps the compiled sends of this worker, a few dozen at most.
type sendCache struct {
	mu sync.Mutex
	m  map[int64]*compiledSend
}

const sendCacheMax = 64

func newSendCache() *sendCache { return &sendCache{m: map[int64]*compiledSend{}} }

// get is send id compiled, from the cache when its version is the one the
// database holds. The send's row is read every time (one query per batch):
// that read also says whether it is still running.
func (c *sendCache) get(ctx context.Context, e *Engine, id int64) (*compiledSend, error) {
	s, err := e.Store.SendForBatch(ctx, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	cs := c.m[id]
	c.mu.Unlock()
	if cs != nil && cs.send.Version == s.Version && cs.send.First == s.First {
		if cs.send.Status != s.Status || cs.send.Expanding != s.Expanding { // a shared entry is never written: a new one
			fresh := *cs
			fresh.send.Status, fresh.send.Expanding = s.Status, s.Expanding
			if cs.send.Expanding && !s.Expanding { // the rest of its audience came: its ranges go further
				if fresh.last, err = e.Store.LastDeliveryID(ctx, id); err != nil {
					return nil, err
				}
			}
			cs = &fresh
			c.mu.Lock()
			c.m[id] = cs
			c.mu.Unlock()
		}
		return cs, nil
	}
	html := s.TemplateHTML
	if html == "" {
		for _, t := range design.Templates() {
			if t.ID == s.TemplateID {
				html = t.HTML
			}
		}
	}
	tmpl, err := render.Compile(s.Subject, s.Preheader, html)
	if err != nil {
		return nil, Permanent(fmt.Errorf("delivery: send %d template: %w", id, err))
	}
	last, err := e.Store.LastDeliveryID(ctx, id)
	if err != nil {
		return nil, err
	}
	opts := render.FormOptions{SendID: id, Signer: e.Links.Signer, UnsubscribeMailto: e.UnsubscribeMailto, MaxBytes: e.Config.MaxMailBytes}
	if err := e.trackClicks(ctx, id, tmpl, &opts); err != nil {
		return nil, err
	}
	cs = &compiledSend{send: s, tmpl: tmpl, last: last, form: render.NewForm(tmpl, &s.Sender, opts), steps: &stepQueue{}}
	c.mu.Lock()
	if old := c.m[id]; old != nil {
		// One step queue per send in this worker, so its hold on mails not
		// recorded is the send's: kept when a new version is compiled, or
		// when another chain compiled the send at the same moment.
		cs.steps = old.steps
	}
	if len(c.m) >= sendCacheMax {
		for k := range c.m { // any one: sends finish and are not asked for again
			delete(c.m, k)
			break
		}
	}
	c.m[id] = cs
	c.mu.Unlock()
	return cs, nil
}

// trackClicks numbers the template's links in the send's link table (the
// numbers they already have kept, new ones after them) and sets opts to
// rewrite them to tracked links (docs/tracking.md), unless click tracking
// is off. Links to mailroom's own pages stay as written.
func (e *Engine) trackClicks(ctx context.Context, id int64, tmpl *render.Template, opts *render.FormOptions) error {
	links := tmpl.Links()
	if !e.ClickTracking || e.Links.Signer == nil || len(links) == 0 {
		return nil
	}
	var urls []string
	for _, u := range links {
		if e.Links.Tracks(u) {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil
	}
	table, err := e.Store.NumberLinks(ctx, id, urls)
	if err != nil {
		return err
	}
	number := make(map[string]int, len(table))
	for i, u := range table {
		number[u] = i
	}
	opts.LinkNumbers = make([]int, len(links))
	for k, u := range links {
		n, ok := number[u]
		if !ok || !e.Links.Tracks(u) {
			n = -1
		}
		opts.LinkNumbers[k] = n
	}
	opts.Clicks = e.Links.Clicks(id)
	return nil
}
