package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"net/textproto"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/smtp"
)

// fixture is an engine over the in-memory fakes.
type fixture struct {
	store *memStore
	tr    *memTransport
	sched *memScheduler
	e     *delivery.Engine
}

func newFixture(t *testing.T, cfg delivery.Config, with ...func(*delivery.Deps)) *fixture {
	t.Helper()
	f := &fixture{store: newMemStore(), tr: &memTransport{}, sched: &memScheduler{}}
	d := delivery.Deps{Store: f.store, Transport: f.tr, Scheduler: f.sched, Config: cfg,
		Links: mail.Links{Base: "https://m.example.test", Signer: mail.NewTokenSigner([]byte("0123456789abcdef0123456789abcdef"))}}
	for _, w := range with {
		w(&d)
	}
	f.e = delivery.New(d)
	return f
}

// drain runs what the engine scheduled, due or not, until nothing is
// left (at most rounds rounds), as a queue would; it answers every piece
// of work seen.
func (f *fixture) drain(t *testing.T, rounds int) []scheduled {
	t.Helper()
	var seen []scheduled
	for range rounds {
		work := f.sched.take()
		if len(work) == 0 {
			return seen
		}
		seen = append(seen, work...)
		for _, w := range work {
			var err error
			switch w.kind {
			case "chain":
				err = f.e.RunChain(context.Background(), w.sendID, w.k, false)
			case "revisit":
				err = f.e.RunChain(context.Background(), w.sendID, w.k, true)
			case "dispatch":
				err = f.e.Dispatch(context.Background(), w.sendID, w.version)
			case "expand":
				err = f.e.ExpandRest(context.Background(), w.sendID)
			}
			if err != nil {
				t.Fatalf("%+v: %v", w, err)
			}
		}
	}
	t.Fatalf("still scheduling after %d rounds", rounds)
	return nil
}

// dispatch runs send id's dispatch (version 1) and answers the work it
// scheduled, taken from the scheduler.
func (f *fixture) dispatch(t *testing.T, id int64) []scheduled {
	t.Helper()
	if err := f.e.Dispatch(context.Background(), id, 1); err != nil {
		t.Fatal(err)
	}
	return f.sched.take()
}

func addresses(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user%03d@x.example", i)
	}
	return out
}

// A dispatch starts Window chains; the chains send every recipient once,
// in ranges of BatchSize, each mail made from the send's template with the
// recipient's values, and the last record completes the send.
func TestSendGoesOutOnceEach(t *testing.T) {
	t.Parallel()
	f := newFixture(t, delivery.Config{BatchSize: 40, Window: 3, Slice: time.Nanosecond})
	to := addresses(250)
	f.store.add(1, to...)
	first := f.dispatch(t, 1)
	if len(first) != 3 || first[0].k != 0 || first[2].k != 2 || first[0].kind != "chain" {
		t.Fatalf("first window: %+v", first)
	}
	for _, w := range first {
		f.sched.add(w)
	}
	seen := f.drain(t, 20)
	// 250 in ranges of 40 is 7 ranges; a slice of 1 ns makes each chain
	// schedule its next range (k + window) rather than run it.
	var ks []int64
	for _, w := range seen {
		ks = append(ks, w.k)
	}
	slices.Sort(ks)
	if !slices.Equal(ks, []int64{0, 1, 2, 3, 4, 5, 6}) {
		t.Errorf("ranges run: %v", ks)
	}
	got := f.tr.accepted()
	var rcpts []string
	for _, m := range got {
		rcpts = append(rcpts, m.To)
		if m.From != "news@shop.example" {
			t.Fatalf("envelope from %q", m.From)
		}
		name := strings.Split(m.To, "@")[0]
		if !strings.Contains(string(m.Data), "Hello "+name) {
			t.Fatalf("the mail to %s lacks its subject:\n%s", m.To, m.Data)
		}
	}
	slices.Sort(rcpts)
	if !slices.Equal(rcpts, to) {
		t.Fatalf("%d mails accepted, want one to each of %d", len(rcpts), len(to))
	}
	for _, r := range f.store.rows(1) {
		if r.status != mail.DeliverySent || r.sent != 1 || r.attempts != 1 {
			t.Fatalf("row %+v", r)
		}
	}
	if f.store.status(1) != 3 {
		t.Errorf("send status %d, want completed", f.store.status(1))
	}
	// Dispatched again (a repeated task), nothing more happens.
	if err := f.e.Dispatch(context.Background(), 1, 1); err != nil || len(f.sched.take()) != 0 {
		t.Errorf("a repeated dispatch scheduled work (%v)", err)
	}
}

// A large audience goes in two steps: the first ExpandStep recipients at
// dispatch, their chains at once, the rest by an expansion scheduled
// beside them. The first step's mails all recorded, the send still runs
// (its audience is not whole); the rest, whose ids come after other
// sends', gets chains from its own first range, and every recipient one
// mail; the expansion run again does nothing.
func TestLargeSendExpandsInTwoSteps(t *testing.T) {
	t.Parallel()
	f := newFixture(t, delivery.Config{BatchSize: 10, Window: 2, ExpandStep: 30, Slice: time.Nanosecond})
	to := addresses(100)
	f.store.add(9, to...)
	var expand []scheduled
	for _, w := range f.dispatch(t, 9) {
		if w.kind == "expand" {
			expand = append(expand, w)
		} else {
			f.sched.add(w)
		}
	}
	if len(expand) != 1 {
		t.Fatalf("expansions scheduled: %+v", expand)
	}
	f.drain(t, 20) // the first step's chains alone
	if n := len(f.tr.accepted()); n != 30 || f.store.status(9) != 2 {
		t.Fatalf("after the first step: %d mails, status %d; want 30, still running", n, f.store.status(9))
	}
	f.sched.add(expand[0])
	seen := f.drain(t, 20)
	if seen[1].kind != "chain" || seen[1].k != 3 {
		t.Errorf("the rest's first chain: %+v (its ids start after a gap, in range 3)", seen[1])
	}
	var rcpts []string
	for _, m := range f.tr.accepted() {
		rcpts = append(rcpts, m.To)
	}
	slices.Sort(rcpts)
	if !slices.Equal(rcpts, to) || f.store.status(9) != 3 {
		t.Fatalf("%d mails, status %d; want one to each of %d, completed", len(rcpts), f.store.status(9), len(to))
	}
	if err := f.e.ExpandRest(context.Background(), 9); err != nil || len(f.sched.take()) != 0 {
		t.Errorf("a second expansion did something (%v)", err)
	}
}

// Two runs of one range at once (a task delivered twice) send each mail
// once: the second finds the range leased.
func TestRangeRunTwiceSendsOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, delivery.Config{BatchSize: 100, Window: 1})
	f.store.add(2, addresses(100)...)
	f.dispatch(t, 2)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := f.e.RunChain(context.Background(), 2, 0, false); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(f.tr.accepted()); n != 100 {
		t.Fatalf("%d mails sent, want 100", n)
	}
	for _, r := range f.store.rows(2) {
		if r.sent != 1 {
			t.Fatalf("row %+v", r)
		}
	}
}

// Each answer is classified and recorded as it should be: a 5xx at RCPT a
// hard bounce, a policy 5xx a failure, a 4xx a retry with its attempt
// counted, and the rest delivered; the send stays running while a retry
// is pending.
func TestAnswersRecorded(t *testing.T) {
	t.Parallel()
	reply := func(class smtp.Class, code int, msg string) smtp.Result {
		return smtp.Result{Class: class, Code: code, Stage: smtp.StageRecipient, Err: &textproto.Error{Code: code, Msg: msg}}
	}
	answers := map[string]smtp.Result{
		"user000@x.example": reply(smtp.Permanent, 550, "5.1.1 no such user"),
		"user001@x.example": reply(smtp.Permanent, 550, "5.7.1 blocked"),
		"user002@x.example": reply(smtp.Temporary, 452, "4.2.2 mailbox full"),
	}
	f := newFixture(t, delivery.Config{BatchSize: 10, Window: 1})
	f.tr.answer = func(to string) smtp.Result {
		if r, ok := answers[to]; ok {
			return r
		}
		return smtp.Result{Class: smtp.Accepted, Code: 250}
	}
	f.store.add(3, addresses(5)...)
	if err := f.e.Dispatch(context.Background(), 3, 1); err != nil {
		t.Fatal(err)
	}
	f.drain(t, 5)
	want := []mail.DeliveryStatus{mail.DeliveryBounced, mail.DeliveryFailed, mail.DeliveryPending, mail.DeliverySent, mail.DeliverySent}
	for i, r := range f.store.rows(3) {
		if r.status != want[i] || r.attempts != 1 {
			t.Errorf("%s: %v after %d attempts, want %v", r.email, r.status, r.attempts, want[i])
		}
		if i < 3 && !strings.Contains(r.errText, answers[r.email].Err.Error()) {
			t.Errorf("%s: error %q", r.email, r.errText)
		}
	}
	if r := f.store.rows(3)[2]; time.Until(r.nextAt) < time.Second {
		t.Errorf("the retry is due at %v", r.nextAt)
	}
	if f.store.status(3) != 2 {
		t.Errorf("send status %d with a retry pending, want running", f.store.status(3))
	}
	// Only the hard bounce suppresses its address; each outcome makes its
	// webhook event.
	f.store.mu.Lock()
	suppressed, events := f.store.suppressed, f.store.events
	f.store.mu.Unlock()
	if !slices.Equal(suppressed, []string{"user000@x.example"}) {
		t.Errorf("suppressed %q", suppressed)
	}
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("%d %s %s %d", e.Kind, e.Email, e.Type, e.DeliveryID-1000))
	}
	slices.Sort(got)
	want2 := []string{
		fmt.Sprintf("%d  %s %d", mail.HookDelivered, "", 3), fmt.Sprintf("%d  %s %d", mail.HookDelivered, "", 4),
		fmt.Sprintf("%d user000@x.example bounce 0", mail.HookBounce), fmt.Sprintf("%d user001@x.example blocked 1", mail.HookBounce),
		fmt.Sprintf("%d user002@x.example  2", mail.HookDeferred)}
	slices.Sort(want2)
	if !slices.Equal(got, want2) {
		t.Errorf("events\n%q, want\n%q", got, want2)
	}
}

// A relay that refuses every connection fails nobody: after a few mails
// in a row the range stops, the untried mails and the refused ones stay
// pending with no attempt counted, and the chain ends (the sweeper
// restarts it later).
func TestRelayDownFailsNobody(t *testing.T) {
	t.Parallel()
	var tries sync.Map
	f := newFixture(t, delivery.Config{BatchSize: 200, Window: 1, Concurrency: 2})
	f.tr.answer = func(to string) smtp.Result {
		tries.Store(to, true)
		return smtp.Result{Class: smtp.Temporary, Stage: smtp.StageConnect, Err: errors.New("connection refused")}
	}
	f.store.add(4, addresses(200)...)
	f.dispatch(t, 4)
	if err := f.e.RunChain(context.Background(), 4, 0, false); err != nil {
		t.Fatal(err)
	}
	n := 0
	tries.Range(func(any, any) bool { n++; return true })
	if n > 20 {
		t.Errorf("%d mails tried against a relay that is down", n)
	}
	for _, r := range f.store.rows(4) {
		if r.status != mail.DeliveryPending || r.attempts != 0 {
			t.Fatalf("row %+v", r)
		}
	}
	if w := f.sched.take(); len(w) != 0 {
		t.Errorf("the chain went on: %+v", w)
	}
}

// An account's sending rate spent: the mails past it wait untried, and
// the chain is scheduled again for when the rate allows more, under a tag
// of its own.
func TestAccountRateDefersTheRest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, delivery.Config{BatchSize: 50, Window: 1}, func(d *delivery.Deps) {
		d.Rates = memLimiter{perCall: 10, wait: 300 * time.Millisecond}
	})
	f.store.add(5, addresses(50)...)
	f.store.mu.Lock()
	f.store.sends[5].send.SendRate = 10
	f.store.mu.Unlock()
	f.dispatch(t, 5)
	start := time.Now()
	if err := f.e.RunChain(context.Background(), 5, 0, false); err != nil {
		t.Fatal(err)
	}
	if n := len(f.tr.accepted()); n != 10 {
		t.Fatalf("%d mails went, the rate allowed 10", n)
	}
	w := f.sched.take()
	if len(w) != 1 || w[0].kind != "chain" || w[0].k != 0 || !strings.HasPrefix(w[0].tag, "rate") ||
		w[0].at.Before(start.Add(300*time.Millisecond)) {
		t.Fatalf("scheduled %+v", w)
	}
	waiting := 0
	for _, r := range f.store.rows(5) {
		if r.status == mail.DeliveryPending {
			waiting++
			if r.attempts != 0 {
				t.Fatalf("a mail put off by the rate counted an attempt: %+v", r)
			}
		}
	}
	if waiting != 40 {
		t.Errorf("%d mails wait, want 40", waiting)
	}
}

// The sweeper dispatches a due send whose dispatch was lost, restarts a
// stalled send at its open ranges under a tag of its own, and completes a
// running send with nothing left open.
func TestSweepRecovers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, delivery.Config{BatchSize: 10, Window: 2, StallAfter: time.Millisecond})
	f.store.add(6, addresses(5)...)  // ready, its dispatch lost
	f.store.add(7, addresses(35)...) // running, its chains lost
	f.store.add(8, addresses(3)...)  // running, all recorded but not completed
	for _, id := range []int64{7, 8} {
		if err := f.e.Dispatch(context.Background(), id, 1); err != nil {
			t.Fatal(err)
		}
	}
	f.sched.take() // lost
	f.store.mu.Lock()
	for _, r := range f.store.sends[8].rows {
		r.status = mail.DeliverySent
	}
	f.store.mu.Unlock()
	time.Sleep(2 * time.Millisecond)
	if err := f.e.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range f.sched.take() {
		got = append(got, fmt.Sprintf("%s %d k%d %v", w.kind, w.sendID, w.k, strings.HasPrefix(w.tag, "sweep")))
	}
	slices.Sort(got)
	want := []string{"chain 7 k0 true", "chain 7 k1 true", "dispatch 6 k0 true"}
	if !slices.Equal(got, want) {
		t.Errorf("scheduled %q, want %q", got, want)
	}
	if f.store.status(8) != 3 {
		t.Errorf("send 8 status %d, want completed", f.store.status(8))
	}
}

// A send deleted while its chain was queued: the chain ends quietly.
func TestDeletedSendEndsTheChain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, delivery.Config{})
	if err := f.e.RunChain(context.Background(), 99, 0, false); err != nil {
		t.Fatal(err)
	}
	if len(f.tr.accepted()) != 0 || len(f.sched.take()) != 0 {
		t.Error("work done for a send that is gone")
	}
}

// The engine reaches the queue, the database and the web only through its
// interfaces: neither it nor anything it imports is asynq, pgx, gin or the
// packages built on them.
// A send whose hard bounces pass the account's guard is paused: its
// ranges hand out no further mail, its chain ends, and the rest stays
// pending (resumed, it goes on). Every tenth address bounces at RCPT TO;
// the guard pauses at 5 % after 100 attempted.
func TestBounceGuardPausesTheSend(t *testing.T) {
	t.Parallel()
	f := newFixture(t, delivery.Config{BatchSize: 50, Window: 2})
	f.store.guards = delivery.Guards{BounceRate: 0.05, BounceAfter: 100}
	f.tr.answer = func(to string) smtp.Result {
		if strings.HasSuffix(strings.Split(to, "@")[0], "0") {
			return smtp.Result{Class: smtp.Permanent, Code: 550, Stage: smtp.StageRecipient, Err: &textproto.Error{Code: 550, Msg: "5.1.1 no such user"}}
		}
		return smtp.Result{Class: smtp.Accepted, Code: 250}
	}
	f.store.add(9, addresses(1000)...)
	if err := f.e.Dispatch(context.Background(), 9, 1); err != nil {
		t.Fatal(err)
	}
	f.drain(t, 50)
	f.store.mu.Lock()
	s := f.store.sends[9]
	counts, why := s.counts, s.paused
	f.store.mu.Unlock()
	if why == "" || !strings.Contains(why, "hard bounces reached 10 % of") || !strings.Contains(why, "the limit is 5 % once 100 are attempted") {
		t.Fatalf("not paused for its bounces: %q (%+v)", why, counts)
	}
	// Two ranges of 50 at a time: the guard is judged at each record, so
	// the send stops within those ranges of the 100th attempt.
	if counts.Attempted < 100 || counts.Attempted > 200 {
		t.Fatalf("%d attempted when paused, want 100 to 200", counts.Attempted)
	}
	if f.store.status(9) != 2 {
		t.Fatalf("a paused send's status is %d, want 2 (running)", f.store.status(9))
	}
	pending := 0
	for _, r := range f.store.rows(9) {
		if r.status == mail.DeliveryPending {
			pending++
		}
		if r.sent > 1 {
			t.Fatalf("row %+v sent twice", r)
		}
	}
	if pending != 1000-int(counts.Attempted) {
		t.Fatalf("%d pending after the pause, want %d", pending, 1000-counts.Attempted)
	}
	// Resumed (the guard stays: the API resumes after review, when the
	// sender has cleaned the list; here the guard is turned off).
	f.store.mu.Lock()
	s.paused, f.store.guards = "", delivery.Guards{}
	f.store.mu.Unlock()
	for k := range int64(2) { // the window's chains, as the sweeper starts them
		if err := f.e.RunChain(context.Background(), 9, k, false); err != nil {
			t.Fatal(err)
		}
	}
	f.drain(t, 50)
	if f.store.status(9) != 3 || len(f.tr.accepted()) != 900 {
		t.Fatalf("resumed: status %d, %d accepted, want 3 and 900", f.store.status(9), len(f.tr.accepted()))
	}
}

func TestGuardsBreach(t *testing.T) {
	g := delivery.DefaultGuards
	for _, c := range []struct {
		counts delivery.SendCounts
		want   string
	}{
		{delivery.SendCounts{Attempted: 999, Bounces: 999}, ""}, // too few to judge
		{delivery.SendCounts{Attempted: 1000, Bounces: 49}, ""},
		{delivery.SendCounts{Attempted: 1000, Bounces: 50}, "hard bounces reached 5 % of 1000 attempted mails (50); the limit is 5 % once 1000 are attempted"},
		{delivery.SendCounts{Attempted: 2000, Delivered: 2000, Complaints: 5}, ""},
		{delivery.SendCounts{Attempted: 2000, Delivered: 2000, Complaints: 6}, "spam complaints reached 0.3 % of 2000 delivered mails (6); the limit is 0.3 % once 1000 are delivered"},
		{delivery.SendCounts{Attempted: 3000, Delivered: 2990, Complaints: 3000}, "spam complaints reached 100.33 % of 2990 delivered mails (3000); the limit is 0.3 % once 1000 are delivered"},
	} {
		if got := g.Breach(c.counts); got != c.want {
			t.Errorf("%+v: %q, want %q", c.counts, got, c.want)
		}
	}
	if got := (delivery.Guards{}).Breach(delivery.SendCounts{Attempted: 5000, Bounces: 5000}); got != "" {
		t.Errorf("guards off: %q", got)
	}
}

func TestEngineImportsNoQueueDriverOrFramework(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/hibiken/asynq", "github.com/jackc/pgx", "github.com/gin-gonic/gin",
			"github.com/mailroom/mailroom/internal/postgres", "github.com/mailroom/mailroom/jobs",
			"github.com/mailroom/mailroom/internal/httpapi"} {
			if p == banned || strings.HasPrefix(p, banned+"/") {
				t.Errorf("internal/delivery depends on %s", p)
			}
		}
	}
}
