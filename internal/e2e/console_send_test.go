package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hibiken/asynq"
	"golang.org/x/crypto/bcrypt"

	"github.com/mailroom/mailroom/internal/console"
	"github.com/mailroom/mailroom/internal/domains"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// taskQueue is an in-process stand-in for Redis: the console and the
// engine enqueue tasks, workers run them through the worker's real mux
// as they come.
type taskQueue struct {
	tasks chan *asynq.Task
	mu    sync.Mutex
	ids   map[string]bool // queued, as asynq keeps one task per TaskID
}

func (q *taskQueue) enqueue(_ context.Context, t *asynq.Task) error {
	id := t.Type() + string(t.Payload())
	q.mu.Lock()
	if q.ids[id] {
		q.mu.Unlock()
		return asynq.ErrTaskIDConflict
	}
	q.ids[id] = true
	q.mu.Unlock()
	q.tasks <- t
	return nil
}

// work runs the queue's tasks on n workers until ctx ends; a task that
// fails is run again a moment later, as asynq would retry it.
func (q *taskQueue) work(ctx context.Context, t *testing.T, mux *asynq.ServeMux, n int) {
	for range n {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case task := <-q.tasks:
					q.mu.Lock()
					delete(q.ids, task.Type()+string(task.Payload()))
					q.mu.Unlock()
					if err := mux.ProcessTask(ctx, task); err != nil && ctx.Err() == nil {
						t.Logf("%s %s: %v (retried)", task.Type(), task.Payload(), err)
						time.Sleep(100 * time.Millisecond)
						q.enqueue(ctx, task)
					}
				}
			}
		}()
	}
}

// counted waits until the audience count shows n, settled: no count
// request under way, none still counting.
func counted(n string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](`(() => {
		const el = document.querySelector("#audience-n");
		return el && el.dataset.count === "`+n+`" && !document.querySelector(".htmx-request, [data-counting]");
	})()`, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
}

// A marketer signs in, composes a send to a list of 1,000 contacts in the
// console (the live count, the review), sends it, watches the progress
// page reach completion while the real engine sends through a real SMTP
// server, and reads the statistics with the chart drawn. The pages write
// nothing to the browser's console (no CSP violation, no script error).
func TestConsoleSingleSendInBrowser(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	tab := browser(t)
	d := testdb.New(t)

	// The engine: the worker's mux over an in-process queue, mailing to a
	// real SMTP server that takes a few milliseconds a mail, so the
	// progress can be watched.
	smtpd := smtptest.New(t, smtptest.Options{Reply: func(string) error { time.Sleep(10 * time.Millisecond); return nil }})
	pool := smtp.NewPool(smtp.Config{Addr: smtpd.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	queue := &taskQueue{tasks: make(chan *asynq.Task, 10000), ids: map[string]bool{}}

	var srv *httptest.Server
	var base string
	// A deployment whose SMTP_URL names two relays (the composer offers
	// them), with the API's domain service (the review warns of a sender
	// whose domain is not verified).
	con, err := console.New(console.Config{PublicURL: "http://console.test", BcryptCost: bcrypt.MinCost, Relays: []string{"primary", "bulk-eu"}},
		console.Deps{DB: d, Log: quiet, Domains: &domains.Service{Store: d},
			EnqueueDispatch: func(ctx context.Context, id int64, version int32, at time.Time) error {
				return queue.enqueue(ctx, jobs.NewDispatchTask(id, version, at))
			}})
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20},
		httpapi.Deps{DB: d, Geo: testdb.Geo(t), Log: quiet, Console: con, ConsolePaths: console.Prefixes}))
	t.Cleanup(srv.Close)
	base = srv.URL
	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}
	links := mail.Links{Base: base, Signer: mail.NewTokenSigner(key)}
	mux := jobs.NewMux(jobs.Deps{DB: d, Log: quiet, Transport: pool, NotifyFrom: "mailroom <n@example.test>", PublicURL: base,
		Links: links, UnsubscribeMailto: "unsubscribe@example.test", Enqueue: queue.enqueue, ClickTracking: true,
		Engine: jobs.Engine{BatchSize: 100, Window: 2}})
	queue.work(ctx, t, mux, 2)

	// The account: its owner, a verified sender, a group, a list of 1,000
	// contacts, one of them unsubscribed, and a list of staff, one of them
	// a customer too.
	acct, _, err := d.CreateAccount(ctx, "Northwind")
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte("correct horse battery"), bcrypt.MinCost)
	if _, _, err := d.CreateOwner(ctx, acct, "owner@northwind.example", string(hash)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		 VALUES ($1, 'Northwind News', 'news@northwind.example', 'help@northwind.example', 276, 'Marienplatz 1', 'news', gen_random_uuid()::text, 1)`,
		`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display) VALUES ($1, gen_random_uuid()::text, 'Newsletter', 'Monthly news', 1)`,
		`INSERT INTO contact_types (user_id, name) VALUES ($1, 'Customers'), ($1, 'Staff')`,
		`INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		 SELECT $1, (SELECT id FROM contact_types WHERE user_id = $1 AND name = 'Customers'), 'customer' || i || '@example.com', 'Cust' || i
		 FROM generate_series(1, 1000) i`,
		`INSERT INTO contacts (user_id, contact_type_id, email) SELECT $1, id, unnest(ARRAY['boss@northwind.example', 'Customer5@example.com'])
		 FROM contact_types WHERE user_id = $1 AND name = 'Staff'`,
		`INSERT INTO unsubscribes (user_id, email_address) VALUES ($1, 'customer7@example.com')`,
		// Its sending domain added, not verified yet.
		`INSERT INTO sending_domains (user_id, domain, selector, rsa_private, records) VALUES ($1, 'northwind.example', 'mr1', '\x00', '[]')`,
	} {
		if _, err := d.Pool.Exec(ctx, q, acct); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := d.Recount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	var customers int64
	if err := d.Pool.QueryRow(ctx, "SELECT id FROM contact_types WHERE user_id = $1 AND name = 'Customers'", acct).Scan(&customers); err != nil {
		t.Fatal(err)
	}

	problems := watchConsole(t, tab)

	// Sign in: the console opens on the list of sends.
	run(t, tab, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/sends"), chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), "owner@northwind.example"),
		chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"),
		chromedp.Click(chromedp.CSS(`main button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#new-send")))
	if loc := value(t, tab, chromedp.Location()); loc != base+"/sends" {
		t.Fatalf("after sign-in: %s", loc)
	}

	// Compose: the live count follows the selection.
	run(t, tab, chromedp.Click(chromedp.CSS("#new-send")), chromedp.WaitVisible(chromedp.CSS("#compose")))
	group := value(t, tab, chromedp.Evaluate[string](`document.querySelector("#f-group option:nth-child(2)").value`))
	run(t, tab, chromedp.SendKeys(chromedp.CSS("#f-name"), "Spring sale"),
		chromedp.SendKeys(chromedp.CSS("#f-subject"), "((first_name)), the spring sale is on"),
		chromedp.SendKeys(chromedp.CSS("#f-preheader"), "Everything 20% off until Sunday"),
		chromedp.SetValue(chromedp.CSS("#f-group"), group),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name=recipient_id][value="contacts_%d"]`, customers))), counted("999"))
	run(t, tab, chromedp.Click(chromedp.Search(`//input[@name="exclude_specific_recipient_id"][ancestor::tr[contains(., "Staff")]]`)),
		counted("998"), chromedp.Click(chromedp.CSS(`input[name=template_id][value="2"]`)), chromedp.SetValue(chromedp.CSS("#f-relay"), "bulk-eu"))
	if tz := text(t, tab, chromedp.CSS("[data-tz]")); !strings.HasPrefix(tz, "your time zone: ") {
		t.Errorf("time zone label %q", tz)
	}
	screenshots(t, tab, "sends-compose")

	// Review, then send.
	run(t, tab, chromedp.Click(chromedp.CSS("#review")), chromedp.WaitVisible(chromedp.CSS("#review-form")), counted("998"))
	if got := text(t, tab, chromedp.CSS("#review-subject")); got != "((first_name)), the spring sale is on" {
		t.Errorf("review subject %q", got)
	}
	if got := text(t, tab, chromedp.CSS("#review-relay")); got != "bulk-eu first" {
		t.Errorf("review relay %q", got)
	}
	if got := text(t, tab, chromedp.CSS("#send-warnings")); !strings.Contains(got, "The sender's domain northwind.example is not a verified sending domain") {
		t.Errorf("review warnings %q", got)
	}
	screenshots(t, tab, "sends-review")
	run(t, tab, chromedp.Click(chromedp.CSS("#send")), chromedp.WaitVisible(chromedp.CSS("#progress")))
	loc := value(t, tab, chromedp.Location())
	m := regexp.MustCompile(`/sends/([0-9a-f-]{36})\?notice=sending$`).FindStringSubmatch(loc)
	if m == nil {
		t.Fatalf("after send: %s", loc)
	}
	utr := m[1]
	if got := text(t, tab, chromedp.CSS("#show-relay")); got != "bulk-eu first" {
		t.Errorf("the send's relay %q", got)
	}

	// The progress updates itself until the send completes.
	seen := map[string]bool{}
	deadline := time.Now().Add(90 * time.Second)
	shot := false
	for {
		state := value(t, tab, chromedp.Evaluate[string](`document.querySelector("#progress").dataset.state`))
		seen[state] = true
		if state == "running" && !shot {
			if final := value(t, tab, chromedp.Evaluate[string](`(document.querySelector("#progress-final")||{}).textContent||""`)); final != "" && final != "0" {
				screenshots(t, tab, "sends-progress")
				shot = true
			}
		}
		if state == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the send did not complete in time; states seen %v", seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
	run(t, tab, chromedp.WaitVisible(chromedp.CSS("#progress-done")))
	if got := text(t, tab, chromedp.CSS("#progress-delivered")); got != "998" {
		t.Errorf("delivered %q, want 998", got)
	}
	if got := text(t, tab, chromedp.CSS("#progress-remaining")); got != "0" {
		t.Errorf("remaining %q", got)
	}
	if smtpd.Count() != 998 {
		t.Errorf("%d mails received, want 998", smtpd.Count())
	}
	if !seen["running"] {
		t.Errorf("the page never showed the send running: %v", seen)
	}
	if !shot {
		screenshots(t, tab, "sends-progress")
	}

	// Some recipients open and click, through the real tracking routes.
	pixel := regexp.MustCompile(`<img src="(` + regexp.QuoteMeta(base) + `/o/[^"]+)"`)
	click := regexp.MustCompile(`href="(` + regexp.QuoteMeta(base) + `/t/c/[^"]+)"`)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, msg := range smtpd.Messages()[:400] {
		html, _ := htmlPart(t, msg.Data)
		urls := pixel.FindStringSubmatch(html)[1:]
		if i%4 == 0 {
			if c := click.FindStringSubmatch(html); c != nil {
				urls = append(urls, c[1])
			}
		}
		for _, u := range urls {
			res, err := noRedirect.Get(strings.ReplaceAll(u, "&amp;", "&"))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		}
	}
	run(t, tab, chromedp.Poll[chromedp.Void](`fetch(location.pathname + "/stats").then(r => r.text()).then(t => t.includes("Unique opens</dt><dd><span class=\"figure-value\">400<"))`,
		chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(300*time.Millisecond)))

	// The statistics, with the chart drawn.
	run(t, tab, chromedp.Click(chromedp.CSS(`#progress-done a`)), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-drawn="true"] canvas`)))
	if loc := value(t, tab, chromedp.Location()); loc != base+"/sends/"+utr+"/stats" {
		t.Fatalf("statistics at %s", loc)
	}
	inked := value(t, tab, chromedp.Evaluate[int](`(() => {
		const c = document.querySelector("#timeline canvas");
		const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
		return n;
	})()`))
	if inked < 100 {
		t.Errorf("the chart's canvas has %d painted pixels", inked)
	}
	figures := text(t, tab, chromedp.CSS(".figures"))
	for _, f := range []string{"Delivered", "998", "Unique opens", "400", "40.1%", "Unique clicks", "100"} {
		if !strings.Contains(figures, f) {
			t.Errorf("figures lack %q: %q", f, figures)
		}
	}
	if rows := value(t, tab, chromedp.Evaluate[int](`document.querySelectorAll("table.links tbody tr").length`)); rows < 1 {
		t.Errorf("%d link rows", rows)
	}
	screenshots(t, tab, "sends-stats")

	// A send a reputation guard paused: its page says why and offers the
	// owner a resume (a copy of the send's row, running, paused).
	var paused string
	if err := d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name,
			subject, preheader, recipient_id, exclude_specific_recipient_id, status, triggered, remaining, delivered, bounces, attempted,
			started_at, paused_at, paused_reason)
		SELECT user_id, gen_random_uuid(), template_id, sender_id, unsubscribe_group_id, 'Autumn sale', subject, preheader, recipient_id,
			exclude_specific_recipient_id, 2, 8000, 6700,
			1170, 130, 1300, now() - interval '3 minutes', now(),
			'hard bounces reached 9.92 % of 1048 attempted mails (104); the limit is 5 % once 1000 are attempted'
		FROM single_sends WHERE utr = $1::uuid RETURNING utr::text`, utr).Scan(&paused); err != nil {
		t.Fatal(err)
	}
	run(t, tab, chromedp.Navigate(base+"/sends/"+paused), chromedp.WaitVisible(chromedp.CSS("#progress-paused")))
	if got := text(t, tab, chromedp.CSS("#progress-paused")); !strings.Contains(got, "Paused by a reputation guard: hard bounces reached 9.92 %") ||
		!strings.Contains(got, "Resume the send") {
		t.Errorf("paused panel %q", got)
	}
	if got := text(t, tab, chromedp.CSS(".progress-state .state")); got != "Paused" {
		t.Errorf("paused send's state %q", got)
	}
	if shown := value(t, tab, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById("stats-link")).display !== "none"`)); !shown {
		t.Error("a paused send's page hides its statistics link")
	}
	screenshots(t, tab, "sends-paused")

	// The list reads it Paused; its owner cancels the rest (the
	// confirmation accepted), and it reads Cancelled.
	run(t, tab, chromedp.Navigate(base+"/sends"), chromedp.WaitVisible(chromedp.CSS("table.sends")))
	if got := value(t, tab, chromedp.Evaluate[string](`[...document.querySelectorAll("table.sends tbody tr")].map(r => r.innerText).find(s => s.includes("Autumn sale")) || ""`)); !strings.Contains(got, "Paused") {
		t.Errorf("the paused send's list row %q", got)
	}
	run(t, tab, chromedp.Navigate(base+"/sends/"+paused), chromedp.WaitVisible(chromedp.CSS("#cancel-send")),
		chromedp.Click(chromedp.CSS("#cancel-send")), chromedp.WaitVisible(chromedp.CSS(".progress-state .state-cancelled")))
	if got := text(t, tab, chromedp.CSS(".progress-state .state")); got != "Cancelled" {
		t.Errorf("cancelled send's state %q", got)
	}
	if n := value(t, tab, chromedp.Evaluate[int](`document.querySelectorAll("#progress-paused, #cancel-send, #resume-send").length`)); n != 0 {
		t.Errorf("a cancelled send still offers %d paused controls", n)
	}
	screenshots(t, tab, "sends-cancelled")

	// The list shows it sent.
	run(t, tab, chromedp.Navigate(base+"/sends"), chromedp.WaitVisible(chromedp.CSS("table.sends")))
	// (The paused copy is the newest, listed first.)
	if got := value(t, tab, chromedp.Evaluate[string](`[...document.querySelectorAll("table.sends tbody tr")].map(r => r.innerText).find(s => s.includes("Spring sale")) || ""`)); !strings.Contains(got, "Sent") {
		t.Errorf("list row %q", got)
	}
	screenshots(t, tab, "sends-list")

	if lines := problems(); len(lines) > 0 {
		t.Errorf("browser console:\n%s", strings.Join(lines, "\n"))
	}
}
