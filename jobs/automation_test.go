package jobs_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// clock is a test's settable now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// A custom drip: members enrolled at set-live get the instant mail at
// once, the mail two hours later only once the clock passes it; a paused
// automation holds its enrollments and sends what came due on resume; an
// address unsubscribed in between leaves; the totals follow the runs.
func TestAutomationDrip(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "drip")
	if err != nil {
		t.Fatal(err)
	}
	typ := scalar[int64](t, d, `INSERT INTO contact_types (user_id, name) VALUES ($1, 'members') RETURNING id`, user)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name) VALUES ($1, $2, 'ann@drip.example', 'Ann'), ($1, $2, 'bob@drip.example', 'Bob')`, user, typ)
	sender := scalar[int64](t, d, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'Drip', 'drip@acme.example', 'drip@acme.example', 276, 'Street 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, user)
	group := scalar[int64](t, d, `INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description) VALUES ($1, gen_random_uuid()::text, 'g', 'g') RETURNING id`, user)
	auto := scalar[int64](t, d, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table,
			unsubscribe_group_id, status, live_at) VALUES ($1, gen_random_uuid(), 'Welcome', 2, $2, 'contacts_', $3, 1, now()) RETURNING id`, user, typ, group)
	for _, s := range []struct {
		subject, kind string
		period        int
	}{{"Welcome ((first_name))", "instantly", 1}, {"Two hours on, ((first_name))", "hours", 2}} {
		exec(t, d, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject, waiting_period, waiting_type, template_html)
			VALUES ($1, $2, gen_random_uuid(), $3, 1, $4, $5, $6, '<p>Hi ((first_name))</p>')`, user, auto, sender, s.subject, s.period, s.kind)
	}

	srv := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: srv.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	clk := &clock{t: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)}
	reg := prometheus.NewRegistry()
	mux, q := automationEngine(t, d, pool, clk, withMetrics(reg))
	step := func(at time.Time) {
		t.Helper()
		clk.t = at
		q.enqueue(ctx, jobs.NewStepAutomationsTask())
		q.drain(t, mux)
	}
	subjects := func() []string {
		var out []string
		for _, m := range srv.Messages() {
			for _, line := range strings.Split(string(m.Data), "\r\n") {
				if s, ok := strings.CutPrefix(line, "Subject: "); ok {
					out = append(out, m.To[0]+": "+s)
				}
			}
		}
		slices.Sort(out)
		return out
	}

	for range 2 { // what set-live queues, run twice: nobody is enrolled twice
		if err := mux.ProcessTask(ctx, jobs.NewEnrollMembersTask(auto)); err != nil {
			t.Fatal(err)
		}
	}
	q.drain(t, mux)
	if n := scalar[int64](t, d, "SELECT count(*) FROM automation_enrollments WHERE automation_id = $1", auto); n != 2 {
		t.Fatalf("%d enrollments, want 2", n)
	}
	step(clk.t)
	if got, want := subjects(), []string{"ann@drip.example: Welcome Ann", "bob@drip.example: Welcome Bob"}; !slices.Equal(got, want) {
		t.Fatalf("after the first step %v, want %v", got, want)
	}
	step(clk.t.Add(time.Hour)) // the second mail is not due
	if n := srv.Count(); n != 2 {
		t.Fatalf("%d mails an hour on, want 2", n)
	}

	// Paused past the second mail's time: nothing goes; bob unsubscribes.
	exec(t, d, "UPDATE automations SET status = 0 WHERE id = $1", auto)
	step(clk.t.Add(2 * time.Hour))
	if n := srv.Count(); n != 2 {
		t.Fatalf("%d mails while paused, want 2", n)
	}
	exec(t, d, `INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address) VALUES ($1, $2, 'bob@drip.example')`, user, group)
	exec(t, d, "UPDATE automations SET status = 1 WHERE id = $1", auto)
	step(clk.t.Add(time.Minute)) // resumed: what came due goes
	if got, want := subjects(), []string{"ann@drip.example: Two hours on, Ann", "ann@drip.example: Welcome Ann", "bob@drip.example: Welcome Bob"}; !slices.Equal(got, want) {
		t.Fatalf("after resuming %v, want %v", got, want)
	}
	states := scalar[[]string](t, d, `SELECT array_agg(c.email || ':' || e.state ORDER BY c.email) FROM automation_enrollments e
		JOIN contacts c ON c.id = e.contact_id WHERE e.automation_id = $1`, auto)
	if want := []string{"ann@drip.example:1", "bob@drip.example:2"}; !slices.Equal(states, want) {
		t.Errorf("enrollments %v, want %v (ann done, bob left)", states, want)
	}
	var triggered, delivered int64
	if err := d.Pool.QueryRow(ctx, "SELECT total_triggered, total_delivered FROM automations WHERE id = $1", auto).Scan(&triggered, &delivered); err != nil {
		t.Fatal(err)
	}
	if triggered != 3 || delivered != 3 {
		t.Errorf("totals triggered %d delivered %d, want 3 and 3", triggered, delivered)
	}
	// The statistics count the runs for their automation, and only there.
	utr := scalar[string](t, d, "SELECT utr::text FROM automations WHERE id = $1", auto)
	if st, err := d.AutomationStats(ctx, user, utr); err != nil || st.Triggered != 3 || st.Delivered != 3 || len(st.Timeline) == 0 {
		t.Errorf("automation statistics %+v (%v), want triggered and delivered 3", st, err)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM send_stats WHERE scope = 's' AND scope_id IN (SELECT id FROM single_sends WHERE automation_id = $1)", auto); n != 0 {
		t.Errorf("%d statistics rows of runs as single sends", n)
	}
	step(clk.t.Add(24 * time.Hour)) // nothing more
	if n := srv.Count(); n != 3 {
		t.Errorf("%d mails at the end, want 3", n)
	}
	// The passes that stepped: ann and bob at the welcome, then at the
	// second mail (bob leaving); the passes that found nothing due are not
	// timed.
	f := scrape(t, reg)
	if got := f.Value("mailroom_automation_enrollments_stepped_total"); got != 4 {
		t.Errorf("%v enrollments stepped, want 4", got)
	}
	if got := f.Value("mailroom_automation_step_duration_seconds"); got != 2 {
		t.Errorf("%v stepping passes timed, want 2", got)
	}
	if got := f.Value("mailroom_mails_total", "outcome", "sent"); got != 3 {
		t.Errorf("%v mails counted sent, want 3", got)
	}
}

// automationEngine is the worker's mux with the test's clock; each with
// changes the dependencies (Metrics).
func automationEngine(t *testing.T, d *postgres.DB, transport smtp.Transport, clk *clock, with ...func(*jobs.Deps)) (*asynq.ServeMux, *queue) {
	t.Helper()
	key, err := d.Secret(context.Background(), "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}
	q := &queue{}
	deps := jobs.Deps{DB: d, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Transport: transport, NotifyFrom: "mailroom <n@example.test>",
		Links: mail.Links{Base: "https://m.example.test", Signer: mail.NewTokenSigner(key)}, Enqueue: q.enqueue, Now: clk.now}
	for _, f := range with {
		f(&deps)
	}
	return jobs.NewMux(deps), q
}

// Exit criteria 1: a contact that left the target gets no more mail and
// leaves; a bounced address leaves whatever the criteria; a welcome
// automation enrolls nobody at set-live (only joins after).
func TestAutomationExitCriteria(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "exit")
	if err != nil {
		t.Fatal(err)
	}
	typ := scalar[int64](t, d, `INSERT INTO contact_types (user_id, name) VALUES ($1, 'members') RETURNING id`, user)
	other := scalar[int64](t, d, `INSERT INTO contact_types (user_id, name) VALUES ($1, 'others') RETURNING id`, user)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, 'stay@exit.example'), ($1, $2, 'move@exit.example'), ($1, $2, 'bounce@exit.example')`, user, typ)
	sender := scalar[int64](t, d, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'Exit', 'exit@acme.example', 'exit@acme.example', 276, 'Street 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, user)
	automation := func(kind int) int64 {
		id := scalar[int64](t, d, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table,
			exit_criteria, status) VALUES ($1, gen_random_uuid(), 'a', $2, $3, 'contacts_', 1, 1) RETURNING id`, user, kind, typ)
		exec(t, d, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject, waiting_period, waiting_type, template_html)
			VALUES ($1, $2, gen_random_uuid(), $3, 1, 'first', 1, 'instantly', '<p>1</p>'), ($1, $2, gen_random_uuid(), $3, 1, 'second', 1, 'hours', '<p>2</p>')`, user, id, sender)
		return id
	}
	custom, welcome := automation(2), automation(1)

	srv := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: srv.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	clk := &clock{t: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)}
	mux, q := automationEngine(t, d, pool, clk)
	for _, id := range []int64{custom, welcome} {
		if err := mux.ProcessTask(ctx, jobs.NewEnrollMembersTask(id)); err != nil {
			t.Fatal(err)
		}
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM automation_enrollments WHERE automation_id = $1", welcome); n != 0 {
		t.Fatalf("a welcome automation enrolled %d existing members at set-live", n)
	}
	q.drain(t, mux)
	if n := srv.Count(); n != 3 {
		t.Fatalf("%d first mails, want 3", n)
	}
	exec(t, d, "UPDATE contacts SET contact_type_id = $1 WHERE email = 'move@exit.example'", other)
	exec(t, d, "INSERT INTO bounces (user_id, email_lc) VALUES ($1, 'bounce@exit.example')", user)
	clk.t = clk.t.Add(2 * time.Hour)
	q.enqueue(ctx, jobs.NewStepAutomationsTask())
	q.drain(t, mux)
	var seconds []string
	for _, m := range srv.Messages()[3:] {
		seconds = append(seconds, m.To[0])
	}
	if !slices.Equal(seconds, []string{"stay@exit.example"}) {
		t.Errorf("second mails to %v, want stay@ only", seconds)
	}
	states := scalar[[]string](t, d, `SELECT array_agg(c.email || ':' || e.state ORDER BY c.email) FROM automation_enrollments e
		JOIN contacts c ON c.id = e.contact_id WHERE e.automation_id = $1`, custom)
	if want := []string{"bounce@exit.example:2", "move@exit.example:2", "stay@exit.example:1"}; !slices.Equal(states, want) {
		t.Errorf("enrollments %v, want %v", states, want)
	}
}

// Only the first set-live enrolls a custom automation's members: a resume
// enrolls again neither those who finished nor those who joined while it
// was paused; a deleted schedule's mail is not sent; runs record no
// single-send events.
func TestAutomationResumeAndDeletedSchedule(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "resume")
	if err != nil {
		t.Fatal(err)
	}
	typ := scalar[int64](t, d, `INSERT INTO contact_types (user_id, name) VALUES ($1, 'members') RETURNING id`, user)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, 'first@resume.example')`, user, typ)
	sender := scalar[int64](t, d, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'R', 'r@acme.example', 'r@acme.example', 276, 'Street 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, user)
	auto := scalar[int64](t, d, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table, status)
		VALUES ($1, gen_random_uuid(), 'r', 2, $2, 'contacts_', 1) RETURNING id`, user, typ)
	exec(t, d, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject, waiting_period, waiting_type, template_html)
		VALUES ($1, $2, gen_random_uuid(), $3, 1, 'one', 1, 'instantly', '<p>1</p>'), ($1, $2, gen_random_uuid(), $3, 1, 'two', 1, 'hours', '<p>2</p>'),
		       ($1, $2, gen_random_uuid(), $3, 1, 'three', 2, 'hours', '<p>3</p>')`, user, auto, sender)
	srv := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: srv.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	clk := &clock{t: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)}
	mux, q := automationEngine(t, d, pool, clk)
	if err := mux.ProcessTask(ctx, jobs.NewEnrollMembersTask(auto)); err != nil {
		t.Fatal(err)
	}
	q.drain(t, mux) // "one"
	exec(t, d, "UPDATE automation_schedules SET deleted_at = now() WHERE automation_id = $1 AND subject = 'two'", auto)
	clk.t = clk.t.Add(90 * time.Minute) // "two" is due: deleted, so "three" comes next, due now
	q.enqueue(ctx, jobs.NewStepAutomationsTask())
	q.drain(t, mux)
	clk.t = clk.t.Add(5 * time.Hour)
	q.enqueue(ctx, jobs.NewStepAutomationsTask())
	q.drain(t, mux)
	// Pause, a contact joins, resume (the API queues the enroll task again).
	exec(t, d, "UPDATE automations SET status = 0 WHERE id = $1", auto)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, 'paused@resume.example')`, user, typ)
	exec(t, d, "UPDATE automations SET status = 1 WHERE id = $1", auto)
	if err := mux.ProcessTask(ctx, jobs.NewEnrollMembersTask(auto)); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(24 * time.Hour)
	q.enqueue(ctx, jobs.NewStepAutomationsTask())
	q.drain(t, mux)
	var subjects []string
	for _, m := range srv.Messages() {
		for _, line := range strings.Split(string(m.Data), "\r\n") {
			if s, ok := strings.CutPrefix(line, "Subject: "); ok {
				subjects = append(subjects, m.To[0]+": "+s)
			}
		}
	}
	if want := []string{"first@resume.example: one", "first@resume.example: three"}; !slices.Equal(subjects, want) {
		t.Errorf("mails %v, want %v", subjects, want)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM events WHERE user_id = $1 AND kind LIKE 'single_send.%'", user); n != 0 {
		t.Errorf("%d single-send events for an automation's runs", n)
	}
}

// Runs are bucketed: a schedule that made a small run holds its next for
// 2 s doubled by each small run that follows closely, up to
// AUTOMATION_RUN_EVERY (30 s), so a steady trickle of joins costs a run per
// 30 s, not one per pass, a lone join goes at once, and a full-size run
// leaves the schedule free; a
// schedule whose sender is unverified sends nothing and its contacts wait
// for it; a run keeps no copy of the schedule's template.
func TestAutomationRunsAndSenderHold(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "runs")
	if err != nil {
		t.Fatal(err)
	}
	typ := scalar[int64](t, d, `INSERT INTO contact_types (user_id, name) VALUES ($1, 'members') RETURNING id`, user)
	sender := scalar[int64](t, d, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'Runs', 'runs@acme.example', 'runs@acme.example', 276, 'Street 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, user)
	auto := scalar[int64](t, d, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table,
			status, live_at) VALUES ($1, gen_random_uuid(), 'Welcome', 1, $2, 'contacts_', 1, now()) RETURNING id`, user, typ)
	exec(t, d, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject, waiting_period, waiting_type, template_html)
		VALUES ($1, $2, gen_random_uuid(), $3, 1, 'Welcome', 1, 'instantly', '<p>From the schedule, ((email))</p>')`, user, auto, sender)

	srv := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: srv.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	clk := &clock{t: t0}
	mux, q := automationEngine(t, d, pool, clk)
	// join enrolls n new contacts named prefix+i, due at the clock's now.
	join := func(prefix string, n int) {
		t.Helper()
		exec(t, d, `WITH c AS (INSERT INTO contacts (user_id, contact_type_id, email)
			SELECT $1, $2, $3 || i || '@runs.example' FROM generate_series(1, $4::int) i RETURNING id)
			INSERT INTO automation_enrollments (automation_id, user_id, contact_id, step, due_at)
			SELECT $5, $1, c.id, (SELECT id FROM automation_schedules WHERE automation_id = $5), $6 FROM c`, user, typ, prefix, n, auto, clk.t)
	}
	check := func(at time.Duration, mails, runs int64) {
		t.Helper()
		clk.t = t0.Add(at)
		q.enqueue(ctx, jobs.NewStepAutomationsTask())
		q.drain(t, mux)
		if n := int64(srv.Count()); n != mails {
			t.Fatalf("at +%v: %d mails, want %d", at, n, mails)
		}
		if n := scalar[int64](t, d, "SELECT count(*) FROM single_sends WHERE automation_id = $1", auto); n != runs {
			t.Fatalf("at +%v: %d runs, want %d", at, n, runs)
		}
	}

	// A small run holds the schedule's next for 2 s, doubled by each small
	// run that follows closely, up to 30 s.
	join("ann", 1)
	// While another stepping pass holds the steppers' lock, a pass does
	// nothing (one pass at a time across workers).
	holder, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_xact_lock(7885630533030798704)"); err != nil {
		t.Fatal(err)
	}
	check(0, 0, 0)
	holder.Rollback(ctx)
	check(0, 1, 1) // hold 2 s
	clk.t = t0.Add(time.Second)
	join("bob", 1)
	check(1*time.Second, 1, 1)
	check(2*time.Second, 2, 2) // hold 4 s
	clk.t = t0.Add(3 * time.Second)
	join("cat", 1)
	check(5*time.Second, 2, 2)
	check(6*time.Second, 3, 3) // hold 8 s
	clk.t = t0.Add(7 * time.Second)
	join("dee", 1)
	check(13*time.Second, 3, 3)
	check(14*time.Second, 4, 4) // hold 16 s
	clk.t = t0.Add(15 * time.Second)
	join("eve", 1)
	check(29*time.Second, 4, 4)
	check(30*time.Second, 5, 5) // hold 30 s (the most)
	clk.t = t0.Add(31 * time.Second)
	join("many", 1000) // a fifth of a stepping transaction: a full-size run
	check(59*time.Second, 5, 5)
	check(60*time.Second, 1005, 6)
	clk.t = t0.Add(61 * time.Second)
	join("carl", 1)
	check(61*time.Second, 1006, 7) // the full-size run held nothing
	// After a quiet spell (over 60 s since the last run) a join goes at
	// once, and the hold is back to 2 s.
	clk.t = t0.Add(200 * time.Second)
	join("fay", 1)
	check(200*time.Second, 1007, 8)
	clk.t = t0.Add(202 * time.Second)
	join("gus", 1)
	check(202*time.Second, 1008, 9)

	// The sender loses its verification: nothing goes, the contact waits
	// at its step, the schedule tried again every 30 s; verified again,
	// its mail goes at the next try.
	exec(t, d, "UPDATE senders SET is_verified = 0 WHERE id = $1", sender)
	clk.t = t0.Add(300 * time.Second)
	join("dan", 1)
	check(300*time.Second, 1008, 9)
	state := scalar[string](t, d, `SELECT e.state || ':' || (e.step = s.id) FROM automation_enrollments e JOIN contacts c ON c.id = e.contact_id
		JOIN automation_schedules s ON s.automation_id = e.automation_id WHERE c.email = 'dan1@runs.example'`)
	if state != "0:true" {
		t.Fatalf("dan's enrollment %s, want still active at the first schedule", state)
	}
	exec(t, d, "UPDATE senders SET is_verified = 1 WHERE id = $1", sender)
	check(320*time.Second, 1008, 9)
	check(330*time.Second, 1009, 10)

	if n := scalar[int64](t, d, "SELECT count(*) FROM single_sends WHERE automation_id = $1 AND (template_html IS NOT NULL OR template_json IS NOT NULL)", auto); n != 0 {
		t.Errorf("%d runs carry a copy of the template", n)
	}
	last := srv.Messages()[srv.Count()-1]
	if body := string(last.Data); !strings.Contains(body, "From the schedule,=20dan1@runs.example") { // quoted-printable
		t.Errorf("the last mail does not hold the schedule's template:\n%s", body)
	}
	if n := scalar[int64](t, d, "SELECT total_triggered FROM automations WHERE id = $1", auto); n != 1009 {
		t.Errorf("total_triggered %d, want 1009", n)
	}
}

// A custom automation set live whose members' enrollment was never queued
// (the API's hook lost) or stopped half way is found by the sweeper and
// finished; the enrollment goes in chunks that resume from their cursor.
func TestAutomationMembersEnrollmentRecovers(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "recover")
	if err != nil {
		t.Fatal(err)
	}
	typ := scalar[int64](t, d, `INSERT INTO contact_types (user_id, name) VALUES ($1, 'members') RETURNING id`, user)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email)
		SELECT $1, $2, 'm' || lpad(i::text, 5, '0') || '@recover.example' FROM generate_series(1, 45000) i`, user, typ)
	sender := scalar[int64](t, d, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'R', 'r@acme.example', 'r@acme.example', 276, 'Street 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, user)
	automation := func(enrolledAt, after any) int64 {
		id := scalar[int64](t, d, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table,
			status, live_at, members_enrolled_at, members_enroll_after) VALUES ($1, gen_random_uuid(), 'a', 2, $2, 'contacts_', 1, now(), $3, $4) RETURNING id`,
			user, typ, enrolledAt, after)
		exec(t, d, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject, waiting_period, waiting_type, template_html)
			VALUES ($1, $2, gen_random_uuid(), $3, 1, 'later', 1, 'days', '<p>1</p>')`, user, id, sender)
		return id
	}
	lost := automation(nil, nil)                                                        // set live, its task never ran
	stopped := automation(time.Now(), "m40000@recover.example")                         // a worker stopped after the chunk ending there
	done := automation(time.Now(), nil)                                                 // enrolled long ago: nothing to do
	exec(t, d, "UPDATE automations SET status = 0 WHERE id = $1", automation(nil, nil)) // paused before its enrollment: not now

	srv := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: srv.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	clk := &clock{t: time.Now()}
	mux, q := automationEngine(t, d, pool, clk)
	q.enqueue(ctx, jobs.NewSweepSendsTask())
	q.drain(t, mux)
	counts := scalar[[]string](t, d, `SELECT array_agg(a.id || ':' || (SELECT count(*) FROM automation_enrollments e WHERE e.automation_id = a.id)
		|| ':' || COALESCE(a.members_enroll_after, 'done') ORDER BY a.id) FROM automations a WHERE a.user_id = $1`, user)
	want := []string{fmt.Sprintf("%d:45000:done", lost), fmt.Sprintf("%d:5000:done", stopped), fmt.Sprintf("%d:0:done", done),
		fmt.Sprintf("%d:0:done", done+1)}
	if !slices.Equal(counts, want) {
		t.Fatalf("automation:enrollments:cursor %v, want %v", counts, want)
	}
	// Swept again: nothing more.
	q.enqueue(ctx, jobs.NewSweepSendsTask())
	q.drain(t, mux)
	if n := scalar[int64](t, d, "SELECT count(*) FROM automation_enrollments WHERE user_id = $1", user); n != 50000 {
		t.Errorf("%d enrollments after a second sweep, want 50000", n)
	}
}
