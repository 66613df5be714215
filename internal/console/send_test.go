package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/mailroom/mailroom/internal/console"
	"github.com/mailroom/mailroom/internal/domains"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

// dispatches records the console's EnqueueDispatch calls.
type dispatches struct {
	mu  sync.Mutex
	ids []int64
}

func (d *dispatches) enqueue(_ context.Context, id int64, _ int32, _ time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids = append(d.ids, id)
	return nil
}

func (d *dispatches) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ids)
}

// newSendSite is newSite whose console enqueues dispatches into the
// returned recorder.
func newSendSite(t *testing.T) (*site, *dispatches) {
	t.Helper()
	return newSendSiteWith(t, console.Config{})
}

// newSendSiteWith is newSendSite with its own configuration; each with
// changes the dependencies.
func newSendSiteWith(t *testing.T, cfg console.Config, with ...func(*console.Deps)) (*site, *dispatches) {
	t.Helper()
	s := &site{t: t, d: testdb.New(t)}
	rec := &dispatches{}
	cfg.PublicURL, cfg.BcryptCost = "http://console.test", bcrypt.MinCost
	deps := console.Deps{DB: s.d, Log: quiet, EnqueueDispatch: rec.enqueue}
	for _, f := range with {
		f(&deps)
	}
	con, err := console.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: s.d, Geo: testdb.Geo(t), Log: quiet,
		Console: con, ConsolePaths: console.Prefixes})
	s.srv = httptest.NewServer(h)
	t.Cleanup(s.srv.Close)
	return s, rec
}

// sendAccount is an account with what a send needs: a verified and an
// unverified sender, a group, a list of contacts (some suppressed), a
// segment and a list to exclude.
type sendAccount struct {
	id                            int64
	verified, unverified, group   int64
	list, staff, segment          int64
	owner, editor, viewer         string
	ownerPW, editorPW, viewerPW   string
	listKey, staffKey, segmentKey string
}

func (s *site) sendAccount(name, domain string, contacts int) sendAccount {
	s.t.Helper()
	a := sendAccount{owner: "owner@" + domain, editor: "editor@" + domain, viewer: "viewer@" + domain,
		ownerPW: "owner password 1", editorPW: "editor password 1", viewerPW: "viewer password 1"}
	a.id, _ = s.account(name, a.owner, a.ownerPW)
	for _, m := range []struct {
		email, password string
		role            mail.Role
	}{{a.editor, a.editorPW, mail.RoleEditor}, {a.viewer, a.viewerPW, mail.RoleViewer}} {
		// Stored with a password, not invited: no invitation mail waits
		// for the package's tests that run the console mail task.
		hash, _ := bcrypt.GenerateFromPassword([]byte(m.password), bcrypt.MinCost)
		if _, err := s.d.Pool.Exec(context.Background(), `INSERT INTO console_users (user_id, email, email_lc, password_hash, role)
			VALUES ($1, $2, lower($2), $3, $4)`, a.id, m.email, string(hash), string(m.role)); err != nil {
			s.t.Fatal(err)
		}
	}
	q := func(sql string, args ...any) int64 {
		s.t.Helper()
		var id int64
		if err := s.d.Pool.QueryRow(context.Background(), sql, args...).Scan(&id); err != nil {
			s.t.Fatalf("%s: %v", sql, err)
		}
		return id
	}
	sender := `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, $2, $3, $3, 276, 'Marienplatz 1', 'n', gen_random_uuid()::text, $4) RETURNING id`
	a.unverified = q(sender, a.id, "Unverified", "new@"+domain, 0)
	a.verified = q(sender, a.id, "Acme News", "news@"+domain, 1)
	a.group = q(`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		VALUES ($1, gen_random_uuid()::text, 'Newsletter', 'News', 1) RETURNING id`, a.id)
	a.list = q("INSERT INTO contact_types (user_id, name) VALUES ($1, 'Customers') RETURNING id", a.id)
	a.staff = q("INSERT INTO contact_types (user_id, name) VALUES ($1, 'Staff') RETURNING id", a.id)
	q(`WITH c AS (INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'c' || i || '@' || $3, 'C' || i FROM generate_series(1, $4::int) i RETURNING 1) SELECT count(*) FROM c`,
		a.id, a.list, domain, contacts)
	q(`INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, 'c1@' || $3), ($1, $2, 'boss@' || $3) RETURNING 1`,
		a.id, a.staff, domain)
	q(`INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address) VALUES ($1, NULL, 'c2@' || $2), ($1, $3, 'c3@' || $2) RETURNING 1`,
		a.id, domain, a.group)
	q("INSERT INTO bounces (user_id, email_lc) VALUES ($1, 'c4@' || $2) RETURNING 1", a.id, domain)
	a.segment = q(`INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value)
		VALUES ($1, $2, 'Early birds', '{}', '{}', '{}') RETURNING id`, a.id, a.list)
	q("INSERT INTO segment_recipients (user_id, segment_id, first_name, last_name, email) VALUES ($1, $2, 'H', 'H', 'hand@' || $3) RETURNING 1",
		a.id, a.segment, domain)
	if err := s.d.Recount(context.Background(), a.id); err != nil {
		s.t.Fatal(err)
	}
	a.listKey, a.staffKey, a.segmentKey = fmt.Sprintf("contacts_%d", a.list), fmt.Sprintf("contacts_%d", a.staff), fmt.Sprintf("segments_%d", a.segment)
	return a
}

// form is a valid compose form of a.
func (a sendAccount) form() url.Values {
	return url.Values{"single_send_name": {"March news"}, "subject": {"Hello ((first_name))"}, "preheader": {"What is new"},
		"sender_id": {fmt.Sprint(a.verified)}, "unsubscribe_group_id": {fmt.Sprint(a.group)},
		"recipient_id": {a.listKey, a.segmentKey}, "exclude_specific_recipient_id": {a.staffKey}, "template_id": {"2"},
		"schedule_type": {"0"}}
}

func (b *browser) signedIn(email, password string) *browser {
	b.s.t.Helper()
	want(b.s.t, "sign-in "+email, b.signIn(email, password), 303)
	return b
}

var sendLocation = regexp.MustCompile(`^/sends/([0-9a-f-]{36})\?notice=(sending|scheduled)$`)

// The compose form is checked as the API checks a send, with the API's
// messages next to the fields; a valid one is reviewed (names, the live
// count) and saved through the API's storage, and its dispatch enqueued.
func TestSendComposeReviewSave(t *testing.T) {
	t.Parallel()
	s, queued := newSendSite(t)
	a := s.sendAccount("Acme", "composereviewsave.example", 30)
	b := s.browser().signedIn(a.editor, a.editorPW)

	page := b.get("/sends/new")
	want(t, "compose", page, 200, "Customers", "Staff", "Early birds", "Newsletter", `value="`+a.listKey+`"`,
		"Unverified &lt;new@composereviewsave.example&gt; (not verified)", "verification mail", `hx-get="/sends/count"`)
	if i, j := strings.Index(page.body, "Acme News &lt;news@"), strings.Index(page.body, "Unverified &lt;new@"); i < 0 || j < i {
		t.Fatal("the verified sender is not listed first")
	}
	if !regexp.MustCompile(`<option value="` + fmt.Sprint(a.verified) + `" selected>`).MatchString(page.body) {
		t.Fatal("a new form does not start from the verified sender")
	}

	empty := url.Values{"schedule_type": {"0"}}
	want(t, "empty", b.post("/sends/review", "/sends/new", empty), 422,
		"The single send name field is required.", "The sender id field is required.", "The subject field is required.",
		"The preheader field is required.", "The unsubscribe group id field is required.", "The recipient id field is required.",
		`id="f-name" name="single_send_name" type="text" value="" maxlength="255" required
        aria-invalid="true" aria-describedby="f-name-error"`)
	bad := a.form()
	bad.Set("sender_id", fmt.Sprint(a.unverified))
	bad.Set("schedule_type", "1")
	bad.Set("schedule_date", "2026-02-30")
	bad.Set("schedule_time", "25:00")
	bad.Set("subject", "Hi ((first_name)")
	res := b.post("/sends/review", "/sends/new", bad)
	want(t, "bad", res, 422, "The selected sender is not verified.",
		"The schedule date must be a valid date in the form YYYY-MM-DD.", "The schedule time must be a valid time in the form HH:MM:SS or HH:MM.",
		`value="Hi ((first_name)"`)
	// Without the page's script the date-time field is read as UTC.
	noScript := a.form()
	noScript.Set("schedule_type", "1")
	noScript.Set("schedule_local", "2031-05-06T07:08")
	want(t, "schedule without script", b.post("/sends/review", "/sends/new", noScript), 200, `name="schedule_date" value="2031-05-06"`,
		`name="schedule_time" value="07:08"`, `datetime="2031-05-06T07:08:00Z"`, ">Schedule<")

	review := b.post("/sends/review", "/sends/new", a.form())
	want(t, "review", review, 200, "Review: March news", "Acme News &lt;news@composereviewsave.example&gt;", "Customers", "Early birds",
		"Staff", "Newsletter", "Newsletter</dd>", ">Send now<", `name="recipient_id" value="`+a.segmentKey+`"`)
	m := regexp.MustCompile(`hx-get="(/sends/count\?[^"]+)"`).FindStringSubmatch(review.body)
	if m == nil {
		t.Fatalf("no count on the review page:\n%s", review.body)
	}
	// 30 contacts and one address stored by hand, less the excluded c1,
	// the unsubscribed c2 (global) and c3 (the group) and the bounced c4.
	want(t, "count", b.count(strings.ReplaceAll(m[1], "&amp;", "&")), 200, `data-count="27"`)
	want(t, "change", b.post("/sends/review", "/sends/new", withStep(a.form(), "edit")), 200, `value="March news"`, "Review</button>")
	if queued.count() != 0 {
		t.Fatal("a review enqueued a dispatch")
	}

	saved := b.post("/sends", "/sends/new", a.form())
	loc := sendLocation.FindStringSubmatch(saved.header.Get("Location"))
	if saved.status != 303 || loc == nil || loc[2] != "sending" {
		t.Fatalf("save: %d %q\n%s", saved.status, saved.header.Get("Location"), saved.body)
	}
	ss, err := s.d.SingleSend(context.Background(), a.id, loc[1])
	if err != nil {
		t.Fatal(err)
	}
	if ss.Status != mail.SendReady || ss.Name != "March news" || ss.TemplateID != 2 || ss.SenderID != a.verified || len(ss.Recipients) != 2 ||
		ss.Recipients[1].Key() != a.segmentKey || len(ss.Excluded) != 1 || ss.ScheduleType != 0 || queued.count() != 1 || queued.ids[0] != ss.ID {
		t.Fatalf("stored %+v, dispatches %v", ss, queued.ids)
	}
	want(t, "show", b.get("/sends/"+ss.UTR+"?notice=sending"), 200, "The send is saved and on its way.", "March news", "Hello ((first_name))")
	ev, err := s.d.AuditEvents(context.Background(), a.id, 0, 1)
	if err != nil || len(ev) != 1 || ev[0].Action != "created a single send" || ev[0].Target != "March news" || ev[0].Actor != a.editor {
		t.Fatalf("audit %+v %v", ev, err)
	}

	// A scheduled save goes at its time, stored in UTC.
	later := a.form()
	later.Set("schedule_type", "1")
	later.Set("schedule_date", "2031-05-06")
	later.Set("schedule_time", "07:08:00")
	saved = b.post("/sends", "/sends/new", later)
	loc = sendLocation.FindStringSubmatch(saved.header.Get("Location"))
	if loc == nil || loc[2] != "scheduled" {
		t.Fatalf("scheduled save: %d %q", saved.status, saved.header.Get("Location"))
	}
	ss, _ = s.d.SingleSend(context.Background(), a.id, loc[1])
	if ss.ScheduleType != 1 || ss.ScheduleDate != "2031-05-06" || ss.ScheduleTime != "07:08:00" {
		t.Fatalf("scheduled %+v", ss)
	}
	want(t, "show scheduled", b.get("/sends/"+ss.UTR), 200, "Scheduled", `datetime="2031-05-06T07:08:00Z"`, "Waiting for its time")
}

func withStep(v url.Values, step string) url.Values {
	v.Set("step", step)
	return v
}

// A duplicate is a draft opened in the form; saved, it is the same row,
// updated and queued. A send that started can be neither edited nor
// deleted.
func TestSendDuplicateEditDelete(t *testing.T) {
	t.Parallel()
	s, queued := newSendSite(t)
	a := s.sendAccount("Acme", "duplicateeditdelete.example", 5)
	b := s.browser().signedIn(a.owner, a.ownerPW)
	loc := sendLocation.FindStringSubmatch(b.post("/sends", "/sends/new", a.form()).header.Get("Location"))
	if loc == nil {
		t.Fatal("not saved")
	}
	orig := loc[1]

	dup := b.post("/sends/"+orig+"/duplicate", "/sends", url.Values{})
	m := regexp.MustCompile(`^/sends/([0-9a-f-]{36})/edit\?notice=duplicated$`).FindStringSubmatch(dup.header.Get("Location"))
	if dup.status != 303 || m == nil {
		t.Fatalf("duplicate: %d %q", dup.status, dup.header.Get("Location"))
	}
	copyUTR := m[1]
	edit := b.get(dup.header.Get("Location"))
	want(t, "edit the copy", edit, 200, "This is a copy, saved as a draft", `value="March news"`, `action="/sends/`+copyUTR+`/review"`,
		`href="/design/editor/single-send/`+copyUTR+`"`, `value="`+a.listKey+`" checked`)
	f := a.form()
	f.Set("single_send_name", "March news, again")
	want(t, "review the copy", b.post("/sends/"+copyUTR+"/review", "/sends/"+copyUTR+"/edit", f), 200, `action="/sends/`+copyUTR+`"`)
	if a := b.post("/sends/"+copyUTR, "/sends/"+copyUTR+"/edit", f); a.status != 303 || a.header.Get("Location") != "/sends/"+copyUTR+"?notice=sending" {
		t.Fatalf("update: %d %q\n%s", a.status, a.header.Get("Location"), a.body)
	}
	ss, _ := s.d.SingleSend(context.Background(), a.id, copyUTR)
	if ss.Status != mail.SendReady || ss.Name != "March news, again" || ss.Version != 2 || queued.count() != 2 {
		t.Fatalf("updated copy %+v, %d dispatches", ss, queued.count())
	}

	// The original starts: it can no longer be changed from the console.
	if _, err := s.d.Pool.Exec(context.Background(), "UPDATE single_sends SET status = 2 WHERE utr = $1", orig); err != nil {
		t.Fatal(err)
	}
	if a := b.get("/sends/" + orig + "/edit"); a.status != 303 || a.header.Get("Location") != "/sends/"+orig {
		t.Fatalf("edit a running send: %d %q", a.status, a.header.Get("Location"))
	}
	want(t, "update a running send", b.post("/sends/"+orig, "/sends", a.form()), 409, "This single send is running and cannot be updated.")
	want(t, "delete a running send", b.post("/sends/"+orig+"/delete", "/sends", url.Values{}), 409, "This single send is running and cannot be deleted.")
	list := b.get("/sends")
	want(t, "list", list, 200, "March news, again", "Sending", "Scheduled")
	if strings.Contains(list.body, `href="/sends/`+orig+`/edit"`) || strings.Contains(list.body, `action="/sends/`+orig+`/delete"`) {
		t.Fatal("the list offers to edit or delete a running send")
	}

	if a := b.post("/sends/"+copyUTR+"/delete", "/sends", url.Values{}); a.status != 303 || a.header.Get("Location") != "/sends?notice=deleted" {
		t.Fatalf("delete: %d %q", a.status, a.header.Get("Location"))
	}
	want(t, "deleted", b.get("/sends/"+copyUTR), 404)
	ev, _ := s.d.AuditEvents(context.Background(), a.id, 0, 3)
	if len(ev) != 3 || ev[0].Action != "deleted a single send" || ev[0].Target != "March news, again" || ev[1].Action != "updated a single send" ||
		ev[2].Action != "duplicated a single send" {
		t.Fatalf("audit %+v", ev)
	}
}

// A viewer reads every send page but sees no write button, and each
// write answers 403; another account's send is 404 on every route.
func TestSendRolesAndAccounts(t *testing.T) {
	t.Parallel()
	s, queued := newSendSite(t)
	a := s.sendAccount("Acme", "sendrolesandaccounts.example", 3)
	other := s.sendAccount("Other", "sendrolesandaccounts-other.example", 3)
	owner := s.browser().signedIn(a.owner, a.ownerPW)
	loc := sendLocation.FindStringSubmatch(owner.post("/sends", "/sends/new", a.form()).header.Get("Location"))
	if loc == nil {
		t.Fatal("not saved")
	}
	utr := loc[1]
	ownerList := owner.get("/sends")
	want(t, "owner's list", ownerList, 200, "New send", "Duplicate", "Delete", "/edit")

	v := s.browser().signedIn(a.viewer, a.viewerPW)
	for _, p := range []string{"/sends", "/sends/" + utr, "/sends/" + utr + "/stats"} {
		page := v.get(p)
		want(t, "viewer "+p, page, 200, "March news")
		for _, hidden := range []string{"New send", "Duplicate", "Delete", "/edit\"", "/design/editor", `action="/sends`} {
			if strings.Contains(page.body, hidden) {
				t.Fatalf("viewer sees %q on %s", hidden, p)
			}
		}
	}
	want(t, "viewer progress", v.get("/sends/"+utr+"/progress"), 200, `id="progress"`)
	csrf := v.csrf("/sends")
	for _, p := range []string{"/sends/new", "/sends/count?recipient_id=" + a.listKey, "/sends/" + utr + "/edit"} {
		want(t, "viewer GET "+p, v.get(p), 403, "may not do this")
	}
	for _, p := range []string{"/sends", "/sends/review", "/sends/" + utr, "/sends/" + utr + "/review", "/sends/" + utr + "/duplicate", "/sends/" + utr + "/delete"} {
		f := a.form()
		f.Set("csrf", csrf)
		want(t, "viewer POST "+p, v.post(p, "", f), 403, "may not do this")
	}
	if n := queued.count(); n != 1 {
		t.Fatalf("%d dispatches after refused writes", n)
	}

	o := s.browser().signedIn(other.owner, other.ownerPW)
	for _, p := range []string{"/sends/" + utr, "/sends/" + utr + "/progress", "/sends/" + utr + "/stats", "/sends/" + utr + "/edit",
		"/sends/not-a-utr", "/sends/00000000-0000-4000-8000-000000000000/stats"} {
		want(t, "other GET "+p, o.get(p), 404)
	}
	for _, p := range []string{"/sends/" + utr, "/sends/" + utr + "/review", "/sends/" + utr + "/duplicate", "/sends/" + utr + "/delete"} {
		want(t, "other POST "+p, o.post(p, "/sends", other.form()), 404)
	}
	if o := o.get("/sends"); strings.Contains(o.body, utr) {
		t.Fatal("another account lists the send")
	}
	// Another account's lists name no list of this one: the API's message.
	f := other.form()
	f.Set("recipient_id", a.listKey)
	want(t, "other's list", o.post("/sends/review", "/sends/new", f), 422, "The selected recipient id is invalid.")
	// And count nothing.
	want(t, "other's count", o.count("/sends/count?recipient_id="+a.listKey), 200, `data-count="0"`)
	if ss, err := s.d.SingleSend(context.Background(), a.id, utr); err != nil || ss.Name != "March news" {
		t.Fatalf("the send after another account's writes: %+v %v", ss, err)
	}
}

// Every text a user enters is shown escaped on the list, the send's page,
// the review, the form and the statistics.
func TestSendTextIsEscaped(t *testing.T) {
	t.Parallel()
	s, _ := newSendSite(t)
	a := s.sendAccount("Acme", "sendtextisescaped.example", 2)
	evil := `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
	ctx := context.Background()
	if _, err := s.d.Pool.Exec(ctx, "UPDATE contact_types SET name = $1 WHERE id = $2", evil, a.list); err != nil {
		t.Fatal(err)
	}
	if _, err := s.d.Pool.Exec(ctx, "UPDATE senders SET from_name = $1 WHERE id = $2", evil, a.verified); err != nil {
		t.Fatal(err)
	}
	b := s.browser().signedIn(a.owner, a.ownerPW)
	f := a.form()
	f.Set("single_send_name", evil)
	f.Set("subject", evil+" ((first_name))")
	f.Set("preheader", evil)
	review := b.post("/sends/review", "/sends/new", f)
	want(t, "review", review, 200, "&lt;script&gt;alert(1)&lt;/script&gt;")
	loc := sendLocation.FindStringSubmatch(b.post("/sends", "/sends/new", f).header.Get("Location"))
	if loc == nil {
		t.Fatal("not saved")
	}
	var id int64
	if err := s.d.Pool.QueryRow(ctx, `UPDATE single_sends SET status = 3, triggered = 2, delivered = 2, sent_at = now(), started_at = now()
		WHERE utr = $1 RETURNING id`, loc[1]).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.d.Pool.Exec(ctx, `INSERT INTO link_stats (scope, scope_id, url, unique_clicks, total_clicks) VALUES ('s', $1, $2, 1, 1)`,
		id, "https://x.example/?q="+evil); err != nil {
		t.Fatal(err)
	}
	bad := regexp.MustCompile(`<script>alert|<img src=x|onerror=alert\(2\)>`)
	for _, p := range []string{"/sends", "/sends/" + loc[1], "/sends/" + loc[1] + "/stats", "/sends/" + loc[1] + "/progress", "/sends/new"} {
		page := b.get(p)
		if page.status != 200 || bad.MatchString(page.body) {
			t.Fatalf("%s (%d) renders markup from stored text:\n%s", p, page.status, page.body)
		}
	}
	if strings.Contains(review.body, "<script>alert") {
		t.Fatal("the review renders markup")
	}
	want(t, "escaped on the list", b.get("/sends"), 200, "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&#39;&gt;&lt;img src=x onerror=alert(2)&gt;")
}

// Sends are listed newest first, 20 to a page, with their state and
// progress; / sends a signed-in browser to them.
func TestSendListPages(t *testing.T) {
	t.Parallel()
	s, _ := newSendSite(t)
	a := s.sendAccount("Acme", "sendlistpages.example", 1)
	ctx := context.Background()
	if _, err := s.d.Pool.Exec(ctx, `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject,
			preheader, status, triggered, remaining, delivered, bounces, unique_opens, sent_at)
		SELECT $1, gen_random_uuid(), 1, $2, $3, 'Send ' || i, 'S', 'P', CASE WHEN i = 25 THEN 2 WHEN i < 24 THEN 3 ELSE 0 END,
			1000, CASE WHEN i = 25 THEN 250 ELSE 0 END, 700, 5, 300, CASE WHEN i < 24 THEN now() END
		FROM generate_series(1, 25) i`, a.id, a.verified, a.group); err != nil {
		t.Fatal(err)
	}
	b := s.browser().signedIn(a.owner, a.ownerPW)
	if home := b.get("/"); home.status != 303 || home.header.Get("Location") != "/sends" {
		t.Fatalf("/: %d %q", home.status, home.header.Get("Location"))
	}
	first := b.get("/sends")
	want(t, "page 1", first, 200, "Page 1 of 2 · 25 sends", `href="/sends?page=2"`, `aria-current="page">Sends`, "Draft", "Sending",
		`value="75"`, "1,000")
	rows := regexp.MustCompile(`class="send-name">([^<]+)<`).FindAllStringSubmatch(first.body, -1)
	if len(rows) != 20 || rows[0][1] != "Send 25" || rows[19][1] != "Send 6" {
		t.Fatalf("page 1 rows: %v", rows)
	}
	second := b.get("/sends?page=2")
	want(t, "page 2", second, 200, "Page 2 of 2", `href="/sends?page=1"`)
	if rows := regexp.MustCompile(`class="send-name">([^<]+)<`).FindAllStringSubmatch(second.body, -1); len(rows) != 5 || rows[4][1] != "Send 1" {
		t.Fatalf("page 2 rows: %v", rows)
	}
	want(t, "past the end", b.get("/sends?page=9"), 200, "No sends on this page.")
}

// The progress fragment shows the counters the API shows, the rate over
// the samples it carried, and stops asking once the send completed.
func TestSendProgressFragment(t *testing.T) {
	t.Parallel()
	s, _ := newSendSite(t)
	a := s.sendAccount("Acme", "sendprogressfragment.example", 1)
	ctx := context.Background()
	var id int64
	var utr string
	if err := s.d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name,
			subject, preheader, status, triggered, remaining, delivered, bounces, started_at)
		VALUES ($1, gen_random_uuid(), 1, $2, $3, 'Running', 'S', 'P', 2, 10000, 4000, 5900, 100, now() - interval '1 minute')
		RETURNING id, utr::text`, a.id, a.verified, a.group).Scan(&id, &utr); err != nil {
		t.Fatal(err)
	}
	if _, err := s.d.Pool.Exec(ctx, `INSERT INTO send_stats (scope, scope_id, hour, deferred) VALUES ('s', $1, date_trunc('hour', now()), 7)`, id); err != nil {
		t.Fatal(err)
	}
	b := s.browser().signedIn(a.viewer, a.viewerPW)
	// 2,000 deliveries became final over the last 2 seconds of samples.
	past := time.Now().Add(-2 * time.Second).UnixMilli()
	frag := b.get(fmt.Sprintf("/sends/%s/progress?s=%d@%d,junk,5@1", utr, 4000, past))
	want(t, "running", frag, 200, `id="progress-final">6,000<`, `id="progress-total">10,000<`, `value="60"`,
		`id="progress-delivered">5,900<`, `id="progress-remaining">4,000<`, `id="progress-bounced">100<`, `id="progress-deferred">7<`,
		`hx-trigger="load delay:1s"`, "hx-vals=")
	if strings.Contains(frag.body, "<html") {
		t.Fatal("the fragment carries the layout")
	}
	rate := regexp.MustCompile(`id="progress-rate">([0-9,]+) mails/s<`).FindStringSubmatch(frag.body)
	if rate == nil {
		t.Fatalf("no rate in\n%s", frag.body)
	}
	if n, _ := strconv.Atoi(strings.ReplaceAll(rate[1], ",", "")); n < 500 || n > 1000 { // 2,000 in 2 s or a little more
		t.Fatalf("rate %s mails/s, want about 1,000", rate[1])
	}
	if _, err := s.d.Pool.Exec(ctx, "UPDATE single_sends SET status = 3, remaining = 0, delivered = 9890, bounces = 110, sent_at = now() WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	done := b.get("/sends/" + utr + "/progress")
	want(t, "completed", done, 200, `id="progress-done"`, "Finished: 9,890 delivered, 110 bounced.", `value="100"`, "/sends/"+utr+"/stats")
	if strings.Contains(done.body, "hx-trigger") {
		t.Fatal("a completed send's fragment still polls")
	}
	want(t, "page", b.get("/sends/"+utr), 200, `id="progress"`, "Finished", `href="/sends/`+utr+`/stats"`)
}

// The statistics page shows the API's statistics as numbers and rates,
// the hourly series for the chart and the clicks by link.
func TestSendStatsPage(t *testing.T) {
	t.Parallel()
	s, _ := newSendSite(t)
	a := s.sendAccount("Acme", "sendstatspage.example", 1)
	ctx := context.Background()
	var id int64
	var utr string
	if err := s.d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name,
			subject, preheader, status, triggered, delivered, bounces, sent_at)
		VALUES ($1, gen_random_uuid(), 1, $2, $3, 'Done', 'S', 'P', 3, 1000, 980, 20, now()) RETURNING id, utr::text`,
		a.id, a.verified, a.group).Scan(&id, &utr); err != nil {
		t.Fatal(err)
	}
	if _, err := s.d.Pool.Exec(ctx, `INSERT INTO send_stats (scope, scope_id, hour, triggered, delivered, bounces, soft_bounces, unique_opens,
			total_opens, unique_clicks, total_clicks, unsubscribes, complaints)
		VALUES ('s', $1, '2026-03-01 10:00Z', 1000, 900, 20, 3, 400, 500, 100, 130, 4, 1),
		       ('s', $1, '2026-03-01 11:00Z', 0, 80, 0, 0, 90, 95, 20, 20, 1, 0)`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.d.Pool.Exec(ctx, `INSERT INTO link_stats (scope, scope_id, url, unique_clicks, total_clicks)
		VALUES ('s', $1, 'https://shop.example/sale', 90, 110), ('s', $1, 'https://shop.example/about', 30, 40)`, id); err != nil {
		t.Fatal(err)
	}
	b := s.browser().signedIn(a.viewer, a.viewerPW)
	page := b.get("/sends/" + utr + "/stats")
	want(t, "stats", page, 200, "Statistics: Done", "980", "98.0%", "490", "50.0%", "120", "12.2%", "2.0%", "0.5%", "0.1%",
		"https://shop.example/sale</code></td><td data-label=\"Unique clicks\">90<", "uPlot.iife.min.js", "uPlot.min.css", "sends.js",
		`data-series="{&#34;hours&#34;:[1772359200,1772362800],&#34;delivered&#34;:[900,80],&#34;opens&#34;:[400,90],&#34;clicks&#34;:[100,20],&#34;bounces&#34;:[20,0]}"`)
	if strings.Index(page.body, "shop.example/sale") > strings.Index(page.body, "shop.example/about") {
		t.Fatal("links are not most clicked first")
	}
	// The same figures as the API's statistics.
	st, err := s.d.SingleSendStats(ctx, a.id, utr)
	if err != nil || st.Delivered != 980 || st.UniqueOpens != 490 {
		t.Fatalf("API statistics %+v %v", st.Counts, err)
	}
}

// pausedSend stores a running send of a that a reputation guard paused
// for reason, 1,300 of its 10,000 mails attempted, and answers its utr.
func (s *site) pausedSend(a sendAccount, reason string) string {
	s.t.Helper()
	var utr string
	if err := s.d.Pool.QueryRow(context.Background(), `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id,
			single_send_name, subject, preheader, status, triggered, remaining, delivered, bounces, attempted, started_at, paused_at, paused_reason)
		VALUES ($1, gen_random_uuid(), 1, $2, $3, 'Paused', 'S', 'P', 2, 10000, 8700, 1170, 130, 1300, now() - interval '1 minute', now(), $4)
		RETURNING utr::text`, a.id, a.verified, a.group, reason).Scan(&utr); err != nil {
		s.t.Fatal(err)
	}
	return utr
}

// A send a reputation guard paused says why on its page and in its
// progress fragment; an editor resumes it there (audited), a viewer sees
// no button and is refused, another account finds no such send, and a
// send not paused answers the API's 409.
func TestSendPausedAndResumed(t *testing.T) {
	t.Parallel()
	s, _ := newSendSite(t)
	a := s.sendAccount("Acme", "sendpausedandresumed.example", 1)
	other := s.sendAccount("Other", "sendpausedandresumed-other.example", 1)
	ctx := context.Background()
	utr := s.pausedSend(a, "hard bounces reached 10 % of 1300 attempted mails (130) <b>")
	reason := "hard bounces reached 10 % of 1300 attempted mails (130) &lt;b&gt;"
	v := s.browser().signedIn(a.viewer, a.viewerPW)
	for _, p := range []string{"/sends/" + utr, "/sends/" + utr + "/progress"} {
		page := v.get(p)
		want(t, "viewer "+p, page, 200, `id="progress-paused"`, "Paused by a reputation guard:", reason, `class="state state-paused">Paused<`)
		if strings.Contains(page.body, "resume-send") {
			t.Fatalf("a viewer sees the resume button on %s", p)
		}
	}
	want(t, "list paused", v.get("/sends"), 200, `class="state state-paused">Paused<`)
	want(t, "stats paused", v.get("/sends/"+utr+"/stats"), 200, `class="state state-paused">Paused<`)
	f := url.Values{"csrf": {v.csrf("/sends")}}
	want(t, "viewer resume", v.post("/sends/"+utr+"/resume", "", f), 403, "may not do this")

	o := s.browser().signedIn(other.owner, other.ownerPW)
	want(t, "other resume", o.post("/sends/"+utr+"/resume", "/sends", url.Values{}), 404)

	b := s.browser().signedIn(a.owner, a.ownerPW)
	frag := b.get("/sends/" + utr + "/progress")
	want(t, "owner fragment", frag, 200, `id="resume-send"`, `action="/sends/`+utr+`/resume"`, `name="csrf"`)
	want(t, "no token", b.post("/sends/"+utr+"/resume", "", url.Values{}), 403)
	res := b.post("/sends/"+utr+"/resume", "/sends/"+utr, url.Values{})
	if res.status != 303 || res.header.Get("Location") != "/sends/"+utr+"?notice=resumed" {
		t.Fatalf("resume: %d %s", res.status, res.header.Get("Location"))
	}
	page := b.get("/sends/" + utr + "?notice=resumed")
	want(t, "resumed", page, 200, "The send is resumed")
	if strings.Contains(page.body, "progress-paused") {
		t.Fatal("the resumed send still shows paused")
	}
	if list := b.get("/sends"); strings.Contains(list.body, "state-paused") || !strings.Contains(list.body, `class="state state-running">Sending<`) {
		t.Fatalf("the list after the resume:\n%s", list.body)
	}
	want(t, "resume again", b.post("/sends/"+utr+"/resume", "/sends/"+utr, url.Values{}), 409, "Only paused single sends can be resumed.")
	var audited int
	if err := s.d.Pool.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE user_id = $1 AND action = 'resumed a paused single send'", a.id).Scan(&audited); err != nil || audited != 1 {
		t.Fatalf("audit lines %d (%v)", audited, err)
	}
}

// With several relays the composer offers them; the review carries the
// choice, the save stores it and the edit page shows it. Without them a
// relay named through the API is kept by an edit in the console.
func TestSendRelayInConsole(t *testing.T) {
	t.Parallel()
	s, _ := newSendSiteWith(t, console.Config{Relays: []string{"primary", "bulk"}})
	a := s.sendAccount("Acme", "sendrelay.example", 3)
	b := s.browser().signedIn(a.owner, a.ownerPW)
	want(t, "compose", b.get("/sends/new"), 200, `<select id="f-relay" name="relay" >`,
		`<option value="">Chosen by the relays' rules and weights</option>`, `<option value="bulk">bulk</option>`)
	f := a.form()
	f.Set("relay", "nope")
	want(t, "unknown relay", b.post("/sends/review", "/sends/new", f), 422, "The selected relay is invalid.",
		`aria-invalid="true" aria-describedby="f-relay-error"`)
	f.Set("relay", "bulk")
	want(t, "review", b.post("/sends/review", "/sends/new", f), 200, `<input type="hidden" name="relay" value="bulk">`,
		`<dd id="review-relay">bulk first</dd>`)
	loc := sendLocation.FindStringSubmatch(b.post("/sends", "/sends/new", f).header.Get("Location"))
	if loc == nil {
		t.Fatal("not saved")
	}
	if ss, err := s.d.SingleSend(context.Background(), a.id, loc[1]); err != nil || ss.Relay != "bulk" {
		t.Fatalf("saved relay %q (%v)", ss.Relay, err)
	}
	want(t, "edit", b.get("/sends/"+loc[1]+"/edit"), 200, `<option value="bulk" selected>bulk</option>`)
	// A relay SMTP_URL no longer names is shown as such, and saving says so
	// next to the field rather than dropping it.
	if _, err := s.d.Pool.Exec(context.Background(), "UPDATE single_sends SET relay = 'retired' WHERE utr = $1", loc[1]); err != nil {
		t.Fatal(err)
	}
	want(t, "edit with a retired relay", b.get("/sends/"+loc[1]+"/edit"), 200, `<option value="retired" selected>retired (not in SMTP_URL)</option>`)
	g := a.form()
	g.Set("relay", "retired")
	want(t, "review with a retired relay", b.post("/sends/"+loc[1]+"/review", "/sends/"+loc[1]+"/edit", g), 422,
		`aria-describedby="f-relay-error"`, "The selected relay is invalid.")

	// One console without relays: the relay stays through an edit.
	s2, _ := newSendSite(t)
	a2 := s2.sendAccount("Beta", "sendrelay2.example", 3)
	b2 := s2.browser().signedIn(a2.owner, a2.ownerPW)
	loc = sendLocation.FindStringSubmatch(b2.post("/sends", "/sends/new", a2.form()).header.Get("Location"))
	if loc == nil {
		t.Fatal("not saved")
	}
	if _, err := s2.d.Pool.Exec(context.Background(), "UPDATE single_sends SET relay = 'eu-1' WHERE utr = $1", loc[1]); err != nil {
		t.Fatal(err)
	}
	edit := b2.get("/sends/" + loc[1] + "/edit")
	want(t, "edit without relays", edit, 200, `<input type="hidden" name="relay" value="eu-1">`)
	if strings.Contains(edit.body, `id="f-relay"`) {
		t.Fatal("a console without relays offers a choice of relay")
	}
	g = a2.form()
	g.Set("relay", "eu-1")
	if r := b2.post("/sends/"+loc[1], "/sends/"+loc[1]+"/edit", g); r.status != 303 {
		t.Fatalf("update: %d\n%s", r.status, r.body)
	}
	if ss, _ := s2.d.SingleSend(context.Background(), a2.id, loc[1]); ss.Relay != "eu-1" {
		t.Fatalf("after the edit the relay is %q", ss.Relay)
	}
}

// A paused send is cancelled from its page: a viewer sees no button and
// is refused; after the cancel the page, its fragment and the list read
// Cancelled, and the audit trail has it.
func TestSendPausedCancelled(t *testing.T) {
	t.Parallel()
	s, _ := newSendSite(t)
	a := s.sendAccount("Acme", "sendpausedcancelled.example", 1)
	ctx := context.Background()
	utr := s.pausedSend(a, "hard bounces reached 10 % of 1300 attempted mails (130)")
	v := s.browser().signedIn(a.viewer, a.viewerPW)
	if page := v.get("/sends/" + utr); page.status != 200 || strings.Contains(page.body, "cancel-send") {
		t.Fatalf("a viewer's page: %d, cancel button shown: %v", page.status, strings.Contains(page.body, "cancel-send"))
	}
	want(t, "viewer cancel", v.post("/sends/"+utr+"/cancel", "", url.Values{"csrf": {v.csrf("/sends")}}), 403, "may not do this")

	b := s.browser().signedIn(a.owner, a.ownerPW)
	want(t, "owner page", b.get("/sends/"+utr), 200, `id="cancel-send"`, `action="/sends/`+utr+`/cancel"`,
		`data-confirm="Cancel the rest of this send?`)
	want(t, "no token", b.post("/sends/"+utr+"/cancel", "", url.Values{}), 403)
	res := b.post("/sends/"+utr+"/cancel", "/sends/"+utr, url.Values{})
	if res.status != 303 || res.header.Get("Location") != "/sends/"+utr+"?notice=cancelled" {
		t.Fatalf("cancel: %d %s\n%s", res.status, res.header.Get("Location"), res.body)
	}
	want(t, "cancelled page", b.get("/sends/"+utr+"?notice=cancelled"), 200, "The send is cancelled", `class="state state-cancelled">Cancelled<`)
	want(t, "cancelled fragment", b.get("/sends/"+utr+"/progress"), 200, `data-state="cancelled"`, "Finished: 1,170 delivered", `>1,300</span> of <span id="progress-total">10,000</span> recipients done (13%) · <span id="progress-cancelled">8,700</span> cancelled`)
	want(t, "cancelled list", b.get("/sends"), 200, `class="state state-cancelled">Cancelled<`)
	want(t, "cancelled stats", b.get("/sends/"+utr+"/stats"), 200, `class="state state-cancelled">Cancelled<`)
	want(t, "cancel again", b.post("/sends/"+utr+"/cancel", "/sends/"+utr, url.Values{}), 409, "Only paused single sends can be cancelled.")
	var audited int
	if err := s.d.Pool.QueryRow(ctx, "SELECT count(*) FROM audit_events WHERE user_id = $1 AND action = 'cancelled a paused single send'", a.id).Scan(&audited); err != nil || audited != 1 {
		t.Fatalf("audit lines %d (%v)", audited, err)
	}
}

// A send whose sender's domain is not a verified sending domain of an
// account that has added one is warned of on its review and its page,
// as the API's details warn; once the domain is verified, not.
func TestSendDomainWarning(t *testing.T) {
	t.Parallel()
	s, _ := newSendSiteWith(t, console.Config{}, func(d *console.Deps) {
		d.Domains = &domains.Service{Store: testdb.New(t)}
	})
	a := s.sendAccount("Acme", "senddomainwarning.example", 3)
	b := s.browser().signedIn(a.owner, a.ownerPW)
	review := b.post("/sends/review", "/sends/new", a.form())
	if review.status != 200 || strings.Contains(review.body, "send-warnings") {
		t.Fatalf("an account without sending domains is warned: %d", review.status)
	}
	if _, err := s.d.Pool.Exec(context.Background(), `INSERT INTO sending_domains (user_id, domain, selector, rsa_private, records)
		VALUES ($1, 'senddomainwarning.example', 'mr1', '\x00', '[]')`, a.id); err != nil {
		t.Fatal(err)
	}
	warning := "The sender&#39;s domain senddomainwarning.example is not a verified sending domain of the account"
	want(t, "review", b.post("/sends/review", "/sends/new", a.form()), 200, `id="send-warnings"`, warning)
	loc := sendLocation.FindStringSubmatch(b.post("/sends", "/sends/new", a.form()).header.Get("Location"))
	if loc == nil {
		t.Fatal("not saved")
	}
	want(t, "page", b.get("/sends/"+loc[1]), 200, `id="send-warnings"`, warning)
	if _, err := s.d.Pool.Exec(context.Background(), "UPDATE sending_domains SET verified_at = now() WHERE user_id = $1", a.id); err != nil {
		t.Fatal(err)
	}
	if page := b.get("/sends/" + loc[1]); page.status != 200 || strings.Contains(page.body, "send-warnings") {
		t.Fatalf("a verified domain is still warned of: %d", page.status)
	}
}
