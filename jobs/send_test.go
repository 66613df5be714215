package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/http/httptest"
	netmail "net/mail"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/activity"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// queue is an in-process stand-in for Redis in engine tests: Enqueue
// keeps tasks (one per TaskID while queued, as asynq does), drain runs
// them in order until none is left.
type queue struct {
	mu    sync.Mutex
	tasks []*asynq.Task
	ids   map[string]bool
}

func (q *queue) enqueue(_ context.Context, t *asynq.Task) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	id := taskID(t)
	if q.ids == nil {
		q.ids = map[string]bool{}
	}
	if q.ids[id] {
		return asynq.ErrTaskIDConflict
	}
	q.ids[id] = true
	q.tasks = append(q.tasks, t)
	return nil
}

// taskID is the identity the engine gives a task: its type and payload.
func taskID(t *asynq.Task) string { return t.Type() + string(t.Payload()) }

func (q *queue) drain(t *testing.T, mux *asynq.ServeMux) int {
	t.Helper()
	n := 0
	for q.step(t, mux) {
		n++
	}
	return n
}

// sendFixture is an account with lists, suppressions, a verified sender
// and a ready single send over them.
type sendFixture struct {
	user, send, group int64
	typeA, typeB      int64
	keys              mail.Keys
}

func exec(t *testing.T, d *postgres.DB, q string, args ...any) {
	t.Helper()
	if _, err := d.Pool.Exec(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func scalar[T any](t *testing.T, d *postgres.DB, q string, args ...any) T {
	t.Helper()
	var v T
	if err := d.Pool.QueryRow(context.Background(), q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// newSendFixture (the send a draft: ready it to dispatch): type A holds ann, Bob, carol, dave, erin, frank, gone,
// later; type B holds bob (Bob again, other case) and gina; segment S
// holds ann (again) and hank (stored by hand); the exclude type C holds
// carol and gina. dave is on the global list, erin left the send's group,
// frank bounced before. So the send goes to ann, bob, hank, gone (5xx)
// and later (4xx once).
func newSendFixture(t *testing.T, d *postgres.DB, html string) sendFixture {
	t.Helper()
	ctx := context.Background()
	user, keys, err := d.CreateAccount(ctx, "engine")
	if err != nil {
		t.Fatal(err)
	}
	f := sendFixture{user: user, keys: keys}
	typ := func(name string) int64 {
		return scalar[int64](t, d, `INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id`, user, name)
	}
	contact := func(typeID int64, email, first string) int64 {
		return scalar[int64](t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name, custom)
			VALUES ($1, $2, $3, $4, 'Lee', '{"Company_Name": "Acme & Co"}') RETURNING id`, user, typeID, email, first)
	}
	f.typeA, f.typeB = typ("A"), typ("B")
	typeC := typ("C")
	var ann int64
	for _, e := range []string{"ann", "Bob", "carol", "dave", "erin", "frank", "gone", "later"} {
		id := contact(f.typeA, e+"@example.com", strings.ToUpper(e[:1])+e[1:])
		if e == "ann" {
			ann = id
		}
	}
	contact(f.typeB, "bob@EXAMPLE.com", "Bobby")
	contact(f.typeB, "gina@example.com", "Gina")
	contact(typeC, "Carol@example.com", "C")
	contact(typeC, "gina@example.com", "G")
	seg := scalar[int64](t, d, `INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value)
		VALUES ($1, $2, 'S', '{}', '{}', '{}') RETURNING id`, user, f.typeA)
	exec(t, d, `INSERT INTO segment_members (user_id, segment_id, contact_id) VALUES ($1, $2, $3)`, user, seg, ann)
	exec(t, d, `INSERT INTO segment_recipients (user_id, segment_id, first_name, last_name, email) VALUES ($1, $2, 'Hank', 'Hill', 'hank@example.com')`, user, seg)
	f.group = scalar[int64](t, d, `INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		VALUES ($1, gen_random_uuid()::text, 'News', 'News', 1) RETURNING id`, user)
	exec(t, d, `INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address) VALUES ($1, NULL, 'DAVE@example.com'), ($1, $2, 'erin@example.com')`, user, f.group)
	exec(t, d, `INSERT INTO bounces (user_id, email_lc) VALUES ($1, 'frank@example.com')`, user)
	sender := scalar[int64](t, d, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'Acme Shop', 'news@acme.example', 'help@acme.example', 276, 'Marienplatz 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, user)
	lists := fmt.Sprintf(`[{"id":"%d","table":"contacts_"},{"id":"%d","table":"contacts_"},{"id":"%d","table":"segments_"}]`, f.typeA, f.typeB, seg)
	f.send = scalar[int64](t, d, `INSERT INTO single_sends (user_id, utr, template_id, template_html, sender_id, unsubscribe_group_id,
			single_send_name, subject, preheader, recipient_id, exclude_specific_recipient_id, status, due_at, unique_open_token)
		VALUES ($1, gen_random_uuid(), 1, $2, $3, $4, 'Weekly', 'Hello ((first_name))', 'This week', $5::jsonb, $6::jsonb, 0, now(),
			jsonb_build_object('contacts_' || $7::bigint, 'tokA', 'contacts_' || $8::bigint, 'tokB', 'segments_' || $9::bigint, 'tokS'))
		RETURNING id`, user, html, sender, f.group, lists, fmt.Sprintf(`[{"id":"%d","table":"contacts_"}]`, typeC), f.typeA, f.typeB, seg)
	return f
}

// engine is the worker's mux over d with an in-process queue; each with
// changes the dependencies (Metrics).
func engine(t *testing.T, d *postgres.DB, transport smtp.Transport, eng jobs.Engine, with ...func(*jobs.Deps)) (*asynq.ServeMux, *queue, mail.Links) {
	t.Helper()
	key, err := d.Secret(context.Background(), "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}
	q := &queue{}
	links := mail.Links{Base: "https://m.example.test", Signer: mail.NewTokenSigner(key)}
	deps := jobs.Deps{DB: d, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Transport: transport,
		NotifyFrom: "mailroom <n@example.test>", PublicURL: links.Base, Links: links, UnsubscribeMailto: "unsubscribe@m.example.test",
		Enqueue: q.enqueue, Engine: eng}
	for _, f := range with {
		f(&deps)
	}
	return jobs.NewMux(deps), q, links
}

// htmlOf is the decoded HTML part of a received mail and its header.
func htmlOf(t *testing.T, data []byte) (string, netmail.Header) {
	t.Helper()
	return partOf(t, data, "text/html")
}

// partOf is the decoded part of a received mail of that type, and its header.
func partOf(t *testing.T, data []byte, typ string) (string, netmail.Header) {
	t.Helper()
	m, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	r := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := r.NextRawPart()
		if err != nil {
			t.Fatalf("no html part: %v", err)
		}
		if strings.HasPrefix(p.Header.Get("Content-Type"), typ) {
			b, _ := io.ReadAll(quotedprintable.NewReader(p))
			return string(b), m.Header
		}
	}
}

type counters struct {
	Status                                                      int
	Triggered, Delivered, Bounces, UniqueOpens, TotalOpens, Uns int64
	SentAt                                                      bool
}

func sendCounters(t *testing.T, d *postgres.DB, id int64) counters {
	t.Helper()
	var c counters
	if err := d.Pool.QueryRow(context.Background(), `SELECT status, triggered, delivered, bounces, unique_opens, total_opens, unsubscribes, sent_at IS NOT NULL
		FROM single_sends WHERE id = $1`, id).Scan(&c.Status, &c.Triggered, &c.Delivered, &c.Bounces, &c.UniqueOpens, &c.TotalOpens, &c.Uns, &c.SentAt); err != nil {
		t.Fatal(err)
	}
	return c
}

var pixelRE = regexp.MustCompile(`<img src="https://m\.example\.test(/o/[^"]+)"`)

// A send goes, through a real SMTP server, to exactly the addresses the
// recipients rule allows (overlaps, case, excludes, global and group
// unsubscribes, earlier bounces), personalized; a 5xx bounces and
// suppresses, a 4xx is retried once its time comes and the send then
// completes; opens and unsubscribes from its mails count.
func TestSingleSendEndToEnd(t *testing.T) {
	// Not parallel: its sweeper works on every send of the package's
	// database.
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, `<html><body><p>Hi ((first_name)) of ((company_name))</p>`+
		`<a href="((unsubscribe_preferences))">Preferences</a></body></html>`)
	var laterTries atomic.Int32
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		switch {
		case strings.HasPrefix(rcpt, "gone@"):
			return smtptest.Permanent("no such user")
		case strings.HasPrefix(rcpt, "later@") && laterTries.Add(1) == 1:
			return smtptest.Temporary("try later")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 2, Window: 2, StallAfter: time.Second})

	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now())) // twice: one task
	q.drain(t, mux)

	got := sendCounters(t, d, f.send)
	if want := (counters{Status: 2, Triggered: 5, Delivered: 3, Bounces: 1}); got != want {
		t.Fatalf("after the first pass %+v, want %+v", got, want)
	}
	// The 4xx is due again; the sweeper finds the idle send and resumes it.
	exec(t, d, "UPDATE deliveries SET next_at = now() WHERE send_id = $1 AND status = 0", f.send)
	exec(t, d, "UPDATE single_sends SET progress_at = now() - interval '1 minute' WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewSweepSendsTask())
	q.drain(t, mux)
	got = sendCounters(t, d, f.send)
	if want := (counters{Status: 3, Triggered: 5, Delivered: 4, Bounces: 1, SentAt: true}); got != want {
		t.Fatalf("after the retry %+v, want %+v", got, want)
	}

	// What the server saw: one mail per allowed address, the 5xx and the
	// first 4xx refused at RCPT.
	var to []string
	byAddr := map[string][]byte{}
	for _, m := range s.Messages() {
		to = append(to, m.To...)
		byAddr[strings.ToLower(m.To[0])] = m.Data
	}
	slices.Sort(to)
	if want := []string{"Bob@example.com", "ann@example.com", "hank@example.com", "later@example.com"}; !slices.Equal(to, want) {
		t.Fatalf("received for %v, want %v", to, want)
	}
	html, h := htmlOf(t, byAddr["ann@example.com"])
	if h.Get("Subject") != "Hello Ann" || !strings.Contains(html, "<p>Hi Ann of Acme &amp; Co</p>") || h.Get("From") != `"Acme Shop" <news@acme.example>` ||
		!strings.HasPrefix(h.Get("List-Unsubscribe"), "<https://m.example.test/unsubscribe/") || h.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("ann's mail: %v\n%s", h, html)
	}
	if text, _ := partOf(t, byAddr["ann@example.com"], "text/plain"); !strings.Contains(text, "Hi Ann of Acme & Co") ||
		!strings.Contains(text, "https://m.example.test/unsubscribe/") {
		t.Errorf("ann's text part:\n%s", text)
	}
	hank, _ := htmlOf(t, byAddr["hank@example.com"])
	if !strings.Contains(hank, "<p>Hi Hank of </p>") {
		t.Errorf("hank's mail:\n%s", hank)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM bounces WHERE user_id = $1 AND email_lc = 'gone@example.com' AND send_id = $2", f.user, f.send); n != 1 {
		t.Errorf("gone@ suppressed %d times", n)
	}
	events := scalar[[]string](t, d, "SELECT array_agg(kind ORDER BY id) FROM events WHERE user_id = $1", f.user)
	if want := []string{"single_send.started", "address.bounced", "single_send.completed"}; !slices.Equal(events, want) {
		t.Errorf("events %v, want %v", events, want)
	}

	// Opens: the pixel counts each time (once the recorder has written
	// them), uniquely once per mail; a forged list token counts nothing.
	rec := activity.New(d, slog.New(slog.NewTextHandler(io.Discard, nil)), activity.Options{Every: time.Hour})
	defer rec.Close(ctx)
	h2 := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: d, Geo: testdb.Geo(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Activity: rec})
	open := func(path string) {
		w := httptest.NewRecorder()
		h2.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 || w.Header().Get("Content-Type") != "image/gif" {
			t.Fatalf("pixel %s: %d %s", path, w.Code, w.Header())
		}
	}
	px := pixelRE.FindStringSubmatch(html)
	if px == nil {
		t.Fatalf("no pixel in\n%s", html)
	}
	open(px[1])
	open(px[1])
	hankPx := pixelRE.FindStringSubmatch(hank)
	open(hankPx[1])
	open(strings.Replace(px[1], "/o/tokA/", "/o/tokB/", 1))
	open("/o/tokA/junk")
	if got = sendCounters(t, d, f.send); got.TotalOpens != 0 {
		t.Errorf("opens %+v before the recorder wrote them", got)
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got = sendCounters(t, d, f.send)
	if got.TotalOpens != 3 || got.UniqueOpens != 2 {
		t.Errorf("opens %+v, want total 3, unique 2", got)
	}

	// One-click from ann's mail leaves the send's group and counts.
	lu := regexp.MustCompile(`<https://m\.example\.test(/unsubscribe/[^>]+)>`).FindStringSubmatch(h.Get("List-Unsubscribe"))
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", lu[1], strings.NewReader("List-Unsubscribe=One-Click"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	h2.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Fatalf("one-click: %d", w.Code)
	}
	// Then everything, from the same mail's page: a second list left, the
	// same address: the send counts it once.
	w = httptest.NewRecorder()
	r = httptest.NewRequest("POST", lu[1], strings.NewReader("action=all"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	h2.ServeHTTP(w, r)
	if w.Code != 303 {
		t.Fatalf("unsubscribe from everything: %d", w.Code)
	}
	if got := sendCounters(t, d, f.send); got.Uns != 1 {
		t.Errorf("unsubscribes %d, want 1", got.Uns)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM unsubscribes WHERE user_id = $1 AND unsubscribe_groups_id = $2 AND email_lc = 'ann@example.com'", f.user, f.group); n != 1 {
		t.Errorf("ann in the group's unsubscribes %d times", n)
	}

	// Running everything again sends nothing more.
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
	for k := int64(0); k < 4; k++ {
		q.enqueue(ctx, jobs.NewBatchTask(f.send, k))
	}
	q.enqueue(ctx, jobs.NewSweepSendsTask())
	q.drain(t, mux)
	if n := s.Count(); n != 4 {
		t.Errorf("%d mails after running every task again, want 4", n)
	}
}

// step runs the first queued task; false when none is queued.
func (q *queue) step(t *testing.T, mux *asynq.ServeMux) bool {
	t.Helper()
	q.mu.Lock()
	if len(q.tasks) == 0 {
		q.mu.Unlock()
		return false
	}
	task := q.tasks[0]
	q.tasks = q.tasks[1:]
	delete(q.ids, taskID(task))
	q.mu.Unlock()
	if err := mux.ProcessTask(context.Background(), task); err != nil {
		t.Fatalf("%s %s: %v", task.Type(), task.Payload(), err)
	}
	return true
}

// Fairness: while a big send is going out, a small send of another
// account created later completes after a bounded number of the big
// send's batches (its window), not after the big send.
func TestSmallSendNotBehindBigOne(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	s := smtptest.New(t, smtptest.Options{Discard: true})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	const window = 3
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 20, Window: window, Slice: time.Nanosecond}) // one range per task: the queue discipline alone

	big := newSendFixture(t, d, "<p>big</p>")
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email) SELECT $1, $2, 'big' || i || '@example.com' FROM generate_series(1, 2000) i`, big.user, big.typeA)
	small := newSendFixture(t, d, "<p>small</p>")

	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", big.send)
	q.enqueue(ctx, jobs.NewDispatchTask(big.send, 1, time.Now()))
	for range 5 { // the big send is under way
		q.step(t, mux)
	}
	if c := sendCounters(t, d, big.send); c.Status != 2 || c.Delivered == 0 {
		t.Fatalf("big send %+v", c)
	}
	exec(t, d, "UPDATE single_sends SET status = 1, version = version + 1 WHERE id = $1", small.send)
	q.enqueue(ctx, jobs.NewDispatchTask(small.send, 2, time.Now()))
	steps := 0
	for sendCounters(t, d, small.send).Status != 3 {
		if !q.step(t, mux) {
			t.Fatal("the queue ran dry before the small send completed")
		}
		steps++
	}
	// The small send's dispatch waits behind the big send's window, then
	// its batches (its own window of 1-2 ranges) behind the next window.
	if limit := 3*window + 3; steps > limit {
		t.Errorf("the small send took %d tasks to complete, more than %d", steps, limit)
	}
	if c := sendCounters(t, d, big.send); c.Status != 2 {
		t.Errorf("the big send finished first: %+v", c)
	} else {
		t.Logf("the small send completed after %d tasks; the big one had %d of %d delivered", steps, c.Delivered, c.Triggered)
	}
	q.drain(t, mux)
	if c := sendCounters(t, d, big.send); c.Status != 3 || c.Delivered < 2000 {
		t.Errorf("big send at the end %+v", c)
	}
}

// A large send's audience comes in two steps through the real queue
// handlers: the dispatch inserts the first step and queues its chains and
// the expansion of the rest; the first mails go before the rest is in;
// in the end every address got one mail, the counters hold the whole
// audience, and single_send.started was recorded once, with it.
func TestLargeSendInTwoSteps(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 20, Window: 2, ExpandStep: 50})
	f := newSendFixture(t, d, "<p>Hi ((first_name))</p>")
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email) SELECT $1, $2, 'm' || lpad(i::text, 3, '0') || '@example.com'
		FROM generate_series(1, 300) i`, f.user, f.typeA)
	if err := d.Recount(ctx, f.user); err != nil {
		t.Fatal(err)
	}
	// Contact types alone (a segment's audience is expanded in one step).
	exec(t, d, `UPDATE single_sends SET status = 1, recipient_id = jsonb_build_array(jsonb_build_object('id', $2::text, 'table', 'contacts_'),
		jsonb_build_object('id', $3::text, 'table', 'contacts_')) WHERE id = $1`, f.send, strconv.FormatInt(f.typeA, 10), strconv.FormatInt(f.typeB, 10))
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.step(t, mux) // the dispatch: the first step
	first := sendCounters(t, d, f.send)
	if first.Status != 2 || first.Triggered < 30 || first.Triggered > 100 { // about 50, less the suppressed and excluded
		t.Fatalf("after the first step %+v", first)
	}
	q.step(t, mux) // a chain of the first step (the expansion is queued after them)
	if len(s.Messages()) == 0 {
		t.Fatal("no mail before the rest of the audience was expanded")
	}
	q.drain(t, mux)
	got := sendCounters(t, d, f.send)
	var to []string
	for _, m := range s.Messages() {
		to = append(to, strings.ToLower(m.To[0]))
	}
	slices.Sort(to)
	if got.Status != 3 || got.Triggered <= first.Triggered || got.Delivered != got.Triggered || int64(len(to)) != got.Triggered ||
		len(slices.Compact(slices.Clone(to))) != len(to) {
		t.Fatalf("at the end %+v; %d mails (%d addresses)", got, len(to), len(slices.Compact(slices.Clone(to))))
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1", f.send); n != got.Triggered {
		t.Errorf("%d deliveries, triggered %d", n, got.Triggered)
	}
	started := scalar[[]string](t, d, "SELECT array_agg(payload->>'triggered') FROM events WHERE subject_id = $1 AND kind = 'single_send.started'", f.send)
	if want := []string{strconv.FormatInt(got.Triggered, 10)}; !slices.Equal(started, want) {
		t.Errorf("started events %v, want %v", started, want)
	}
}

// A send scheduled in the future stays ready (1) and its dispatch is
// queued again for its time; once due it goes at once.
func TestScheduledSendWaits(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{})
	f := newSendFixture(t, d, "<p>later</p>")
	exec(t, d, "UPDATE single_sends SET status = 1, due_at = now() + interval '1 hour' WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.step(t, mux) // the early dispatch
	if c := sendCounters(t, d, f.send); c.Status != 1 || c.Triggered != 0 {
		t.Fatalf("a send due in an hour: %+v", c)
	}
	// Queued again for its time (asynq holds it until then; the sweeper
	// would also find it due).
	if n := len(q.tasks); n != 1 || q.tasks[0].Type() != jobs.TypeDispatchSend {
		t.Fatalf("queue holds %d tasks", n)
	}
	exec(t, d, "UPDATE single_sends SET due_at = now() - interval '1 minute' WHERE id = $1", f.send)
	q.drain(t, mux)
	if c := sendCounters(t, d, f.send); c.Status != 3 || c.Delivered != 5 {
		t.Fatalf("once due: %+v", c)
	}
}

// A temporary refusal whose text is long and not ASCII is recorded like
// any other (it used to fail the batch's record, and the range was sent
// again and again); a send over a segment between rebuild steps waits
// for the rebuild.
func TestOddReplyAndRebuildingSegment(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		if strings.HasPrefix(rcpt, "later@") {
			return smtptest.Temporary("Das Postfach ist voll." + strings.Repeat("ä", 300))
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{})
	f := newSendFixture(t, d, "<p>hi</p>")
	seg := scalar[int64](t, d, "SELECT id FROM segments WHERE user_id = $1", f.user)
	exec(t, d, "UPDATE segments SET rebuild_next = 1 WHERE id = $1", seg)
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.step(t, mux)
	if c := sendCounters(t, d, f.send); c.Status != 1 || len(q.tasks) != 1 {
		t.Fatalf("dispatched during a rebuild: %+v, %d tasks queued", c, len(q.tasks))
	}
	exec(t, d, "UPDATE segments SET rebuild_next = NULL WHERE id = $1", seg)
	q.drain(t, mux)
	if c := sendCounters(t, d, f.send); c.Status != 2 || c.Delivered != 4 || c.Bounces != 0 {
		t.Fatalf("after the first pass %+v, want running, 4 delivered (later@ waits)", c)
	}
	reason := scalar[string](t, d, "SELECT error FROM deliveries WHERE send_id = $1 AND email = 'later@example.com'", f.send)
	if !strings.HasPrefix(reason, "451 ") || !strings.Contains(reason, "Postfach") {
		t.Errorf("stored reply %q", reason)
	}
	if n := s.Count(); n != 4 {
		t.Errorf("%d mails, want 4", n)
	}
}

// A range slower than its lease is not sent twice: its lease is renewed
// while it sends, so a second run of the range (a restarted chain) and
// the sweeper find it held.
func TestSlowRangeKeepsItsLease(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	s := smtptest.New(t, smtptest.Options{Reply: func(string) error { time.Sleep(60 * time.Millisecond); return nil }})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 1000, Window: 1, Concurrency: 2, Lease: time.Second, StallAfter: time.Millisecond})
	f := newSendFixture(t, d, "<p>slow</p>")
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email) SELECT $1, $2, 'slow' || i || '@example.com' FROM generate_series(1, 45) i`, f.user, f.typeA)
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.step(t, mux) // dispatch: 50 recipients in one range, ~1.5 s to send
	first := q.tasks[0]
	q.tasks, q.ids = nil, nil
	done := make(chan error, 1)
	go func() { done <- mux.ProcessTask(ctx, first) }()
	// While it sends, past its 1 s lease: the same range again, and the
	// sweeper (which counts the send idle after 1 ms).
	deadline := time.Now().Add(1800 * time.Millisecond)
	for time.Now().Before(deadline) {
		time.Sleep(300 * time.Millisecond)
		if err := mux.ProcessTask(ctx, jobs.NewBatchTask(f.send, 0)); err != nil {
			t.Fatal(err)
		}
		if err := mux.ProcessTask(ctx, jobs.NewSweepSendsTask()); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	q.drain(t, mux)
	got := map[string]int{}
	for _, m := range s.Messages() {
		got[m.To[0]]++
	}
	for addr, n := range got {
		if n != 1 {
			t.Errorf("%s got %d mails", addr, n)
		}
	}
	if c := sendCounters(t, d, f.send); c.Status != 3 || c.Delivered != 50 || len(got) != 50 {
		t.Errorf("send %+v, %d addresses mailed, want 50", c, len(got))
	}
}

// An address unsubscribed or bounced after the send started gets no mail:
// its pending row is skipped when its range comes, and the send still
// completes.
func TestSuppressedDuringSend(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 1, Window: 1, Slice: time.Nanosecond})
	f := newSendFixture(t, d, "<p>hi</p>")
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.step(t, mux) // dispatch: ann, Bob, gone, hank, later, one per range
	q.step(t, mux) // the first range: ann
	exec(t, d, `INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address) VALUES ($1, $2, 'hank@example.com'), ($1, NULL, 'LATER@example.com')`, f.user, f.group)
	exec(t, d, `INSERT INTO bounces (user_id, email_lc) VALUES ($1, 'gone@example.com')`, f.user)
	q.drain(t, mux)
	var to []string
	for _, m := range s.Messages() {
		to = append(to, m.To[0])
	}
	slices.Sort(to)
	if want := []string{"Bob@example.com", "ann@example.com"}; !slices.Equal(to, want) {
		t.Errorf("mailed %v, want %v", to, want)
	}
	if c := sendCounters(t, d, f.send); c.Status != 3 || c.Delivered != 2 || c.Triggered != 5 {
		t.Errorf("send %+v", c)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1 AND status = 5", f.send); n != 3 {
		t.Errorf("%d skipped, want 3", n)
	}
}

// With the relay down the send waits: a few mails are tried, none is
// failed, bounced or charged an attempt, the chain stops; when the relay
// is back the sweeper's restart finishes the send.
func TestRelayDown(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: connection refused
	pool := smtp.NewPool(smtp.Config{Addr: addr, Size: 2, Timeout: time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 20, Window: 1, StallAfter: time.Millisecond})
	f := newSendFixture(t, d, "<p>hi</p>")
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email) SELECT $1, $2, 'r' || i || '@example.com' FROM generate_series(1, 95) i`, f.user, f.typeA)
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, 1, time.Now()))
	q.drain(t, mux)
	var pending, tried int64
	if err := d.Pool.QueryRow(ctx, "SELECT count(*) FILTER (WHERE status = 0), count(*) FILTER (WHERE attempts > 0) FROM deliveries WHERE send_id = $1", f.send).Scan(&pending, &tried); err != nil {
		t.Fatal(err)
	}
	if c := sendCounters(t, d, f.send); c.Status != 2 || c.Bounces != 0 || pending != 100 || tried != 0 {
		t.Fatalf("relay down: %+v, %d pending, %d charged an attempt", c, pending, tried)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM bounces WHERE user_id = $1 AND email_lc <> 'frank@example.com'", f.user); n != 0 {
		t.Fatalf("%d addresses suppressed", n)
	}

	// The relay is back (a new pool on a live server); the retries come due.
	s := smtptest.New(t, smtptest.Options{})
	pool2 := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool2.Close()
	mux2, q2, _ := engine(t, d, pool2, jobs.Engine{BatchSize: 20, Window: 1, StallAfter: time.Millisecond})
	exec(t, d, "UPDATE deliveries SET next_at = now() WHERE send_id = $1", f.send)
	for range 10 {
		q2.enqueue(ctx, jobs.NewSweepSendsTask())
		q2.drain(t, mux2)
		if sendCounters(t, d, f.send).Status == 3 {
			break
		}
	}
	if c := sendCounters(t, d, f.send); c.Status != 3 || c.Delivered != 100 || s.Count() != 100 {
		t.Errorf("after the relay came back: %+v, %d mails", c, s.Count())
	}
}
