package e2e_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/render"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// browser is a headless Chromium tab, or a skip when the machine has no
// Chromium (.ci/run installs Debian's chromium package).
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); name != "" && err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no Chromium on this machine (install Debian's chromium package, or set CHROMIUM): browser tests skipped")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first Run starts the browser, on a context without a deadline.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// run runs steps in the tab, a minute at most.
func run(t *testing.T, tab context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// text is the text of the first node sel finds.
func text[S chromedp.Selectable](t *testing.T, tab context.Context, sel S) string {
	t.Helper()
	return value(t, tab, chromedp.Text(sel))
}

// value runs one action that answers a value.
func value[T any](t *testing.T, tab context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// site is the real router on a real listener, with the package's database.
func site(t *testing.T) (*postgres.DB, *httptest.Server) {
	t.Helper()
	d := testdb.New(t)
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: d, Geo: testdb.Geo(t),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return d, srv
}

// htmlPart is the text/html part of a received multipart/alternative mail,
// decoded, and the mail's headers.
func htmlPart(t *testing.T, data []byte) (string, netmail.Header) {
	t.Helper()
	m, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q: %v", m.Header.Get("Content-Type"), err)
	}
	r := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := r.NextRawPart()
		if err != nil {
			t.Fatalf("no text/html part: %v", err)
		}
		if strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			b, err := io.ReadAll(quotedprintable.NewReader(p))
			if err != nil {
				t.Fatal(err)
			}
			return string(b), m.Header
		}
	}
}

var prefsLinkRE = regexp.MustCompile(`<a href="([^"]+)">Manage your preferences</a>`)

// A mail goes through a real SMTP server; its preferences link, opened in
// Chromium, shows the page; leaving a group and then everything take
// effect in the database. The List-Unsubscribe header of another mail
// unsubscribes with one POST.
func TestPreferencesInBrowser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tab := browser(t)
	d, srv := site(t)

	user, _, err := d.CreateAccount(ctx, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	var weekly, offers int64
	for _, g := range []struct {
		name string
		id   *int64
	}{{"Weekly digest", &weekly}, {"Offers", &offers}} { // in this order: the page lists groups by id
		if err := d.Pool.QueryRow(ctx, `INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
			VALUES ($1, gen_random_uuid()::text, $2, 'About ' || $2, 1) RETURNING id`, user, g.name).Scan(g.id); err != nil {
			t.Fatal(err)
		}
	}
	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}
	links := mail.Links{Base: srv.URL, Signer: mail.NewTokenSigner(key)}
	tpl, err := render.Compile("Hello ((first_name))", "This week",
		`<html><body><p>Hi ((first_name)), here is the news.</p><p><a href="((unsubscribe_preferences))">Manage your preferences</a></p></body></html>`)
	if err != nil {
		t.Fatal(err)
	}
	sender := &mail.Sender{FromName: "Acme", FromEmail: "news@acme.example"}
	form := render.NewForm(tpl, sender, render.FormOptions{SendID: 7, UnsubscribeMailto: "unsubscribe@acme.example"})

	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	defer pool.Close()
	for i, to := range []string{"ann@example.com", "bob@example.com"} {
		r := &mail.Recipient{Email: mail.Email(to), FirstName: "Ann"}
		links.Fill(r, mail.UnsubscribeToken{UserID: user, Email: r.Email, GroupID: weekly, SendID: 7})
		var b render.Buffer
		tpl.Render(&b, r, sender)
		if res := pool.Send(ctx, &smtp.Message{From: "news@acme.example", To: to, Data: form.Build(nil, &b, r, int64(i+1))}); res.Class != smtp.Accepted {
			t.Fatalf("send to %s: %+v", to, res)
		}
	}
	if !s.Wait(2, 5*time.Second) {
		t.Fatalf("%d mails received", s.Count())
	}
	received := s.Messages()

	// Ann opens the link of her mail.
	html, _ := htmlPart(t, received[0].Data)
	m := prefsLinkRE.FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("no preferences link in\n%s", html)
	}
	link := m[1]
	if !strings.HasPrefix(link, srv.URL+"/unsubscribe/") {
		t.Fatalf("link %q", link)
	}
	run(t, tab, chromedp.Navigate(link))
	title, who := text(t, tab, chromedp.CSS("h1")), text(t, tab, chromedp.CSS("main > p"))
	groups := value(t, tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll("li h3")].map(e => e.textContent)`))
	if title != "Email preferences" || who != "Mail to ann@example.com." || strings.Join(groups, ",") != "Weekly digest,Offers" {
		t.Fatalf("page: %q %q %q", title, who, groups)
	}
	if rows := suppressed(t, d, user); rows != "" {
		t.Fatalf("opening the page changed: %s", rows)
	}

	run(t, tab, chromedp.Click(chromedp.CSS(`button[aria-label="Leave Offers"]`)), chromedp.WaitVisible(chromedp.CSS(`[role="status"]`)))
	status := text(t, tab, chromedp.CSS(`[role="status"]`))
	state := value(t, tab, chromedp.Evaluate[string](`[...document.querySelectorAll("li")].map(e => e.querySelector("h3").textContent + ": " +
		(e.querySelector("button") ? "leave" : e.querySelector("p.muted").textContent)).join("; ")`))
	if status != "Done: you left the list." || state != "Weekly digest: leave; Offers: You left this list." {
		t.Fatalf("after leaving: %q %q", status, state)
	}
	if rows := suppressed(t, d, user); rows != itoa(offers)+":ann@example.com" {
		t.Fatalf("after leaving Offers: %s", rows)
	}

	all := chromedp.Search(`//p[contains(., "unsubscribed from all mail")]`)
	run(t, tab, chromedp.Click(chromedp.Search(`//button[normalize-space()="Unsubscribe from everything"]`)), chromedp.WaitVisible(all))
	if status := text(t, tab, chromedp.CSS(`[role="status"]`)); status != "Done: you are unsubscribed from everything." {
		t.Fatalf("after everything: %q", status)
	}
	if rows := suppressed(t, d, user); rows != itoa(offers)+":ann@example.com 0:ann@example.com" {
		t.Fatalf("after everything: %s", rows)
	}

	// Bob's mail client uses the List-Unsubscribe header (RFC 8058).
	_, header := htmlPart(t, received[1].Data)
	lu := regexp.MustCompile(`^<(http[^>]+)>,\s*<mailto:unsubscribe@acme\.example\?subject=unsubscribe-([A-Za-z0-9_-]+)>$`).
		FindStringSubmatch(header.Get("List-Unsubscribe"))
	if lu == nil || header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" || !strings.HasSuffix(lu[1], "/"+lu[2]) {
		t.Fatalf("List-Unsubscribe %q, -Post %q", header.Get("List-Unsubscribe"), header.Get("List-Unsubscribe-Post"))
	}
	res, err := http.PostForm(lu[1], url.Values{"List-Unsubscribe": {"One-Click"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("one-click: %d", res.StatusCode)
	}
	if rows := suppressed(t, d, user); rows != itoa(offers)+":ann@example.com 0:ann@example.com "+itoa(weekly)+":bob@example.com" {
		t.Fatalf("after one-click: %s", rows)
	}
}

// A new sender's verification mail, received by a real SMTP server; its
// link opened in Chromium verifies the sender.
func TestSenderVerificationInBrowser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tab := browser(t)
	d, srv := site(t)
	user, _, err := d.CreateAccount(ctx, "verify")
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, verify_requested_at)
		VALUES ($1, 'Acme', 'news@acme.example', 'help@acme.example', 276, 'Marienplatz 1', 'news', gen_random_uuid()::text, now()) RETURNING id`, user).Scan(&id); err != nil {
		t.Fatal(err)
	}
	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	defer pool.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	verify := jobs.VerifySenders(jobs.Deps{DB: d, Log: log, Transport: pool, NotifyFrom: "mailroom <verify@example.test>", PublicURL: srv.URL})
	if err := verify(ctx, jobs.NewVerifySendersTask()); err != nil {
		t.Fatal(err)
	}
	if !s.Wait(1, 5*time.Second) {
		t.Fatal("no verification mail")
	}
	body := strings.ReplaceAll(string(s.Messages()[0].Data), "=\r\n", "")
	link := regexp.MustCompile(regexp.QuoteMeta(srv.URL) + `/senders/verify/[A-Za-z0-9_-]+`).FindString(body)
	if link == "" {
		t.Fatalf("no link in\n%s", body)
	}
	run(t, tab, chromedp.Navigate(link))
	if title, p := text(t, tab, chromedp.CSS("h1")), text(t, tab, chromedp.CSS("main p")); title != "Sender verified" ||
		p != "news@acme.example is verified: mailroom may now send from it." {
		t.Fatalf("page %q %q", title, p)
	}
	var verified int
	if err := d.Pool.QueryRow(ctx, "SELECT is_verified FROM senders WHERE id = $1", id).Scan(&verified); err != nil || verified != 1 {
		t.Fatalf("is_verified %d %v", verified, err)
	}
	// Opened again (a reload), the spent link says so.
	run(t, tab, chromedp.Reload())
	if title := text(t, tab, chromedp.CSS("h1")); title != "Link not valid" {
		t.Fatalf("second visit: %q", title)
	}
}

// suppressed is the account's unsubscribes as "group:address" (0 the
// global list) in id order.
func suppressed(t *testing.T, d *postgres.DB, user int64) string {
	t.Helper()
	var s string
	if err := d.Pool.QueryRow(context.Background(), `SELECT COALESCE(string_agg(COALESCE(unsubscribe_groups_id, 0) || ':' || email_address, ' ' ORDER BY id), '')
		FROM unsubscribes WHERE user_id = $1`, user).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
