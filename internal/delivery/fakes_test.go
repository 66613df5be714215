package delivery_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/smtp"
)

// The engine's four interfaces in memory: a store that keeps sends and
// deliveries as the SQL does (leases, pending rows, attempts, completion),
// a transport that answers per address, a limiter, and a scheduler that
// keeps what it was asked to run so the test runs it.

// memSend is a send and its deliveries.
type memSend struct {
	send       delivery.Send
	recipients []string
	rest       []string  // still to expand
	rows       []*memRow // by id - send.First
	leases     map[int64]leaseHold
	touched    time.Time
	dispatched bool
	counts     delivery.SendCounts // what the guards judge
	paused     string              // why the guards paused it
}

type memRow struct {
	id       int64
	email    string
	status   mail.DeliveryStatus
	attempts int
	nextAt   time.Time
	errText  string
	sent     int  // times recorded sent: more than one is a mail sent twice
	gap      bool // an id of another send's
}

type leaseHold struct {
	owner uuid.UUID
	until time.Time
}

type memStore struct {
	mu         sync.Mutex
	sends      map[int64]*memSend
	nextID     int64
	records    int              // RecordBatch and RecordStep calls
	suppressed []string         // addresses hard bounces suppressed
	events     []mail.HookEvent // webhook events the records made
	guards     delivery.Guards  // the account's (zero: none)
}

func newMemStore() *memStore { return &memStore{sends: map[int64]*memSend{}, nextID: 1000} }

// add is a ready send of version 1 to recipients.
func (m *memStore) add(id int64, recipients ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sends[id] = &memSend{recipients: recipients, leases: map[int64]leaseHold{}, send: delivery.Send{ID: id, UserID: 7, Version: 1,
		Status: 1, Subject: "Hello ((first_name))", Preheader: "p", TemplateHTML: "<p>Hi ((first_name))</p>",
		ListTokens: map[string]string{}, SenderAvailable: true,
		Sender: mail.Sender{FromName: "Shop", FromEmail: "news@shop.example", ReplyTo: "news@shop.example", Address: "1 Main St",
			City: "Berlin", Country: "Germany"}}}
}

// DispatchSend inserts the send's rows, all of them, or with step > 0
// and more than 2*step recipients the first step of them (the rest by
// ExpandRest), as the SQL does.
func (m *memStore) DispatchSend(_ context.Context, id int64, version int32, batchSize, step int) (delivery.Dispatch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sends[id]
	if s == nil || s.send.Status != 1 || s.send.Version != version {
		return delivery.Dispatch{}, nil
	}
	head := s.recipients
	if step > 0 && len(head) > 2*step {
		head, s.rest = head[:step], head[step:]
		s.send.Expanding = true
	}
	s.send.Status, s.send.First, s.send.BatchSize = 2, m.nextID, batchSize
	for _, r := range head {
		s.rows = append(s.rows, &memRow{id: m.nextID, email: r, status: mail.DeliveryPending})
		m.nextID++
	}
	s.dispatched, s.touched = true, time.Now()
	out := delivery.Dispatch{Started: true, SendID: id, First: s.send.First, Last: m.nextID - 1,
		BatchSize: batchSize, Triggered: int64(len(s.rows)), Expanding: s.send.Expanding}
	if len(s.rows) == 0 && !s.send.Expanding {
		s.send.Status, out.Completed = 3, true
	}
	return out, nil
}

// ExpandRest inserts the rest of a send dispatched in two steps, after
// other sends' rows (ids are not contiguous), as the SQL does.
func (m *memStore) ExpandRest(_ context.Context, id int64) (delivery.Dispatch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sends[id]
	if s == nil || !s.send.Expanding {
		return delivery.Dispatch{}, nil
	}
	for range 7 { // another send's rows went in meanwhile: ids of none of this send's
		s.rows = append(s.rows, &memRow{id: m.nextID, status: mail.DeliverySent, gap: true})
		m.nextID++
	}
	from := m.nextID
	for _, r := range s.rest {
		s.rows = append(s.rows, &memRow{id: m.nextID, email: r, status: mail.DeliveryPending})
		m.nextID++
	}
	s.send.Expanding = false
	return delivery.Dispatch{Started: true, SendID: id, First: s.send.First, From: from, Last: m.nextID - 1,
		BatchSize: s.send.BatchSize, Triggered: int64(len(s.rest))}, nil
}

func (m *memStore) SendsToExpand(context.Context) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []int64
	for id, s := range m.sends {
		if s.send.Status == 2 && s.send.Expanding {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func (m *memStore) SendForBatch(_ context.Context, id int64) (delivery.Send, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sends[id]
	if s == nil {
		return delivery.Send{}, mail.NotFound()
	}
	return s.send, nil
}

func (m *memStore) LastDeliveryID(_ context.Context, id int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sends[id]
	return s.send.First + int64(len(s.rows)) - 1, nil
}

func (m *memStore) NumberLinks(_ context.Context, _ int64, urls []string) ([]string, error) {
	return urls, nil
}

func (m *memStore) ClaimDeliveries(_ context.Context, sendID, _, k, from, to int64, lease time.Duration) (*delivery.Lease, []mail.Claimed, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sends[sendID]
	if s.paused != "" {
		return nil, nil, delivery.ErrPaused
	}
	if h, ok := s.leases[k]; ok && time.Now().Before(h.until) {
		return nil, nil, nil // another run holds the range
	}
	var claimed []mail.Claimed
	for _, r := range s.rows {
		if r.id >= from && r.id < to && r.status == mail.DeliveryPending && !time.Now().Before(r.nextAt) {
			r.attempts++
			claimed = append(claimed, mail.Claimed{ID: r.id, ListKey: "contacts_1", Attempts: r.attempts,
				Recipient: mail.Recipient{Email: mail.Email(r.email), FirstName: strings.Split(r.email, "@")[0]}})
		}
	}
	if len(claimed) == 0 {
		return nil, nil, nil
	}
	l := &delivery.Lease{SendID: sendID, K: k, Owner: uuid.New()}
	s.leases[k] = leaseHold{owner: l.Owner, until: time.Now().Add(lease)}
	return l, claimed, nil
}

func (m *memStore) RenewLease(_ context.Context, l *delivery.Lease, lease time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sends[l.SendID]
	if s.leases[l.K].owner != l.Owner {
		return false, nil
	}
	s.leases[l.K] = leaseHold{owner: l.Owner, until: time.Now().Add(lease)}
	return true, nil
}

// record writes rec to rows still pending, as RecordDeliveries' SQL
// does: a mail not tried gives its attempt back, a hard bounce suppresses
// its address; the counts are judged by the guards, as record's SQL does.
func (m *memStore) record(s *memSend, rec *delivery.Record) delivery.Recorded {
	m.records++
	for i, id := range rec.IDs {
		r := s.rows[id-s.send.First]
		if r.status != mail.DeliveryPending {
			continue
		}
		r.status, r.errText, r.nextAt = mail.DeliveryStatus(rec.Statuses[i]), rec.Errors[i], rec.NextAts[i]
		if r.status != mail.DeliveryPending {
			s.counts.Attempted++
		}
		switch r.status {
		case mail.DeliverySent:
			s.counts.Delivered++
		case mail.DeliveryBounced:
			s.counts.Bounces++
		}
		if r.status == mail.DeliverySent {
			r.sent++
		}
		if rec.Tried[i] == 0 {
			r.attempts--
		}
	}
	for _, b := range rec.Bounced {
		m.suppressed = append(m.suppressed, string(b.Email))
	}
	m.events = append(m.events, rec.Events...)
	s.touched = time.Now()
	if s.send.Status == 2 && !s.send.Expanding && !slices.ContainsFunc(s.rows, func(r *memRow) bool { return r.status == mail.DeliveryPending }) {
		s.send.Status = 3
		return delivery.Recorded{Completed: true}
	}
	if why := m.guards.Breach(s.counts); why != "" && s.paused == "" && s.send.Status == 2 {
		s.paused = why
	}
	return delivery.Recorded{Paused: s.paused != ""}
}

func (m *memStore) RecordBatch(_ context.Context, l *delivery.Lease, _ int64, rec *delivery.Record) (delivery.Recorded, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sends[l.SendID]
	if s.leases[l.K].owner == l.Owner {
		delete(s.leases, l.K)
	}
	return m.record(s, rec), nil
}

func (m *memStore) RecordStep(_ context.Context, sendID, _ int64, rec *delivery.Record) (delivery.Recorded, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.record(m.sends[sendID], rec), nil
}

func (m *memStore) DueSends(context.Context) ([]delivery.DueSend, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []delivery.DueSend
	for _, s := range m.sends {
		if s.send.Status == 1 {
			due = append(due, delivery.DueSend{ID: s.send.ID, Version: s.send.Version})
		}
	}
	return due, nil
}

func (m *memStore) StalledSends(_ context.Context, idle time.Duration) ([]delivery.StalledSend, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []delivery.StalledSend
	for _, s := range m.sends {
		if s.send.Status == 2 && time.Since(s.touched) >= idle {
			out = append(out, delivery.StalledSend{ID: s.send.ID, First: s.send.First, BatchSize: s.send.BatchSize})
		}
	}
	return out, nil
}

func (m *memStore) OpenRanges(_ context.Context, st delivery.StalledSend, n int) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sends[st.ID]
	var ks []int64
	for _, r := range s.rows {
		k := (r.id - st.First) / int64(st.BatchSize)
		if r.status == mail.DeliveryPending && !time.Now().Before(r.nextAt) && !slices.Contains(ks, k) && len(ks) < n {
			if h, ok := s.leases[k]; !ok || time.Now().After(h.until) {
				ks = append(ks, k)
			}
		}
	}
	return ks, nil
}

func (m *memStore) CompleteSend(_ context.Context, id int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sends[id]
	if s.send.Status != 2 || s.send.Expanding || slices.ContainsFunc(s.rows, func(r *memRow) bool { return r.status == mail.DeliveryPending }) {
		return false, nil
	}
	s.send.Status = 3
	return true, nil
}

func (m *memStore) TouchSend(_ context.Context, id int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sends[id].touched = time.Now()
	return nil
}

func (m *memStore) MembersToEnroll(context.Context) ([]int64, error)               { return nil, nil }
func (m *memStore) EnrollMembers(context.Context, int64, time.Time) (int64, error) { return 0, nil }
func (m *memStore) StepAutomations(context.Context, delivery.Step) (delivery.Pass, error) {
	return delivery.Pass{}, nil
}
func (m *memStore) DropExpiredDeliveries(context.Context, time.Duration) ([]string, error) {
	return nil, nil
}

// rows are a send's deliveries.
func (m *memStore) rows(id int64) []memRow {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []memRow
	for _, r := range m.sends[id].rows {
		if !r.gap {
			out = append(out, *r)
		}
	}
	return out
}

func (m *memStore) status(id int64) int16 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sends[id].send.Status
}

// memTransport answers each mail by its recipient (answer; accepted when
// nil) and keeps what it accepted.
type memTransport struct {
	mu     sync.Mutex
	answer func(to string) smtp.Result
	got    []smtp.Message
}

func (t *memTransport) Send(_ context.Context, m *smtp.Message) smtp.Result {
	res := smtp.Result{Class: smtp.Accepted, Code: 250}
	if t.answer != nil {
		res = t.answer(m.To)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if res.Class == smtp.Accepted {
		t.got = append(t.got, smtp.Message{From: m.From, To: m.To, Data: slices.Clone(m.Data)})
	}
	return res
}

func (t *memTransport) accepted() []smtp.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.got)
}

// memLimiter lets perCall mails go at each call, then says wait.
type memLimiter struct {
	perCall int
	wait    time.Duration
}

func (l memLimiter) Take(_ context.Context, _ int64, _, n int) (int, time.Duration, error) {
	return min(n, l.perCall), l.wait, nil
}

// scheduled is one thing the engine asked the scheduler for.
type scheduled struct {
	kind    string // chain, revisit, dispatch, enroll, step
	sendID  int64
	k       int64
	version int32
	at      time.Time
	tag     string
}

type memScheduler struct {
	mu   sync.Mutex
	work []scheduled
}

func (s *memScheduler) add(w scheduled) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.work = append(s.work, w)
	return nil
}

func (s *memScheduler) Chain(_ context.Context, sendID, k int64, at time.Time, tag string) error {
	return s.add(scheduled{kind: "chain", sendID: sendID, k: k, at: at, tag: tag})
}

func (s *memScheduler) Revisit(_ context.Context, sendID, k int64, at time.Time) error {
	return s.add(scheduled{kind: "revisit", sendID: sendID, k: k, at: at})
}

func (s *memScheduler) Dispatch(_ context.Context, sendID int64, version int32, at time.Time, tag string) error {
	return s.add(scheduled{kind: "dispatch", sendID: sendID, version: version, at: at, tag: tag})
}

func (s *memScheduler) Expand(_ context.Context, sendID int64, tag string) error {
	return s.add(scheduled{kind: "expand", sendID: sendID, tag: tag})
}

func (s *memScheduler) Enroll(_ context.Context, id int64, tag string) error {
	return s.add(scheduled{kind: "enroll", sendID: id, tag: tag})
}

func (s *memScheduler) Step(context.Context) error { return s.add(scheduled{kind: "step"}) }

// take empties the scheduler and answers what it held.
func (s *memScheduler) take() []scheduled {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.work
	s.work = nil
	return w
}

// memDaily counts a day's mails per key, as the Redis script does.
type memDaily struct {
	mu   sync.Mutex
	used map[string]int
}

func (d *memDaily) TakeDay(_ context.Context, key string, limit, n int, _ time.Time) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.used == nil {
		d.used = map[string]int{}
	}
	got := max(min(n, limit-d.used[key]), 0)
	d.used[key] += got
	return got, nil
}
