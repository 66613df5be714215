package e2e_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"github.com/mailroom/mailroom/internal/console"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// consoleSite is the real router with the console on a real listener.
func consoleSite(t *testing.T) (*postgres.DB, *httptest.Server) {
	t.Helper()
	d := testdb.New(t)
	con, err := console.New(console.Config{BcryptCost: bcrypt.MinCost}, console.Deps{DB: d, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: d, Geo: testdb.Geo(t), Log: quiet,
		Console: con, ConsolePaths: console.Prefixes})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return d, srv
}

// watchConsole collects what the tab's JavaScript console and log say
// (exceptions, CSP violations, warnings); the returned func stops and
// gives them.
func watchConsole(t *testing.T, tab context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	listen, stop := context.WithCancel(tab)
	if err := chromedp.Listen(listen, func(ev any) {
		var m string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			m = fmt.Sprintf("console.%s %d arguments", ev.Type, len(ev.Args))
		case *runtime.EventExceptionThrown:
			m = "exception: " + ev.ExceptionDetails.Text
		case *log.EventEntryAdded:
			// A form answered with its field errors is a 422 by design.
			if (ev.Entry.Level == log.EntryLevelWarning || ev.Entry.Level == log.EntryLevelError) &&
				!(ev.Entry.Source == log.EntrySourceNetwork && strings.Contains(ev.Entry.Text, "status of 422")) {
				m = fmt.Sprintf("%s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *page.EventJavascriptDialogOpening:
			// The console's confirmations (data-confirm): accept them.
			go chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
		if m != "" {
			mu.Lock()
			lines = append(lines, m)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		stop()
		mu.Lock()
		defer mu.Unlock()
		return lines
	}
}

// screenshots writes the tab's page at a desktop and a phone width to
// docs/console/NAME-desktop.png and NAME-phone.png when
// UPDATE_SCREENSHOTS is set (make screenshots).
func screenshots(t *testing.T, tab context.Context, name string) {
	t.Helper()
	if os.Getenv("UPDATE_SCREENSHOTS") == "" {
		return
	}
	for _, v := range []struct {
		suffix        string
		width, height int64
		mobile        bool
	}{{"desktop", 1280, 800, false}, {"phone", 390, 844, true}} {
		var png []byte
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if v.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		run(t, tab, chromedp.EmulateViewport(v.width, v.height, opts...), chromedp.Sleep(150*time.Millisecond))
		png = value(t, tab, chromedp.FullScreenshot(100))
		path := filepath.Join("..", "..", "docs", "console", name+"-"+v.suffix+".png")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, tab, chromedp.EmulateViewport(1280, 800))
}

// The console in Chromium: the owner signs in, makes new keys (the API
// refuses the old ones at once and takes the new), invites a member; the
// member opens the invitation mail's link, chooses a password, lands
// signed in with the role given, and sees no keys. No page writes to the
// JavaScript console or breaks its CSP.
func TestConsoleSignInKeysAndTeamInBrowser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, srv := consoleSite(t)
	acct, keys, err := d.CreateAccount(ctx, "Acme Browsers")
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte("owner's long password"), bcrypt.MinCost)
	if _, _, err := d.CreateOwner(ctx, acct, "owner@browsers.example", string(hash)); err != nil {
		t.Fatal(err)
	}
	api := func(k mail.Keys) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/custom-fields", nil)
		req.Header.Set("PublicKey", k.Public)
		req.Header.Set("SecretKey", k.Secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}

	tab := browser(t)
	said := watchConsole(t, tab)
	run(t, tab, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/account"), chromedp.WaitVisible(chromedp.CSS("#email")))
	if u := value(t, tab, chromedp.Location()); !strings.HasSuffix(u, "/signin?next=%2Faccount") {
		t.Fatalf("signed out /account went to %s", u)
	}
	screenshots(t, tab, "signin")
	run(t, tab, chromedp.SendKeys(chromedp.CSS("#email"), "owner@browsers.example"),
		chromedp.SendKeys(chromedp.CSS("#password"), "a wrong password"), chromedp.Submit(chromedp.CSS("#password")),
		chromedp.WaitVisible(chromedp.CSS("p.error")))
	if got := text(t, tab, chromedp.CSS("p.error")); got != "These credentials do not match our records." {
		t.Fatalf("wrong password says %q", got)
	}
	run(t, tab, chromedp.SendKeys(chromedp.CSS("#password"), "owner's long password"), chromedp.Submit(chromedp.CSS("#password")),
		chromedp.WaitVisible(chromedp.CSS("#team")))
	if got := text(t, tab, chromedp.CSS("#public-key")); got != keys.Public {
		t.Fatalf("public key %q, want %q", got, keys.Public)
	}

	// New keys: shown once, the old ones refused by the API at once.
	run(t, tab, chromedp.Click(chromedp.CSS("#rotate-keys")), chromedp.WaitVisible(chromedp.CSS("#secret-key")))
	fresh := mail.Keys{Public: text(t, tab, chromedp.CSS("#public-key")), Secret: text(t, tab, chromedp.CSS("#secret-key"))}
	if fresh.Public == keys.Public || !strings.HasPrefix(fresh.Secret, "sk_") {
		t.Fatalf("keys after rotation %+v", fresh)
	}
	if c := api(keys); c != http.StatusUnauthorized {
		t.Fatalf("the old keys: %d, want 401", c)
	}
	if c := api(fresh); c != http.StatusOK {
		t.Fatalf("the new keys: %d, want 200", c)
	}

	// Invite an editor; the worker mails the invitation.
	run(t, tab, chromedp.SendKeys(chromedp.CSS("#invite-email"), "editor@browsers.example"),
		chromedp.SetValue(chromedp.CSS("#invite-role"), "editor"), chromedp.Submit(chromedp.CSS("#invite-email")),
		chromedp.WaitVisible(chromedp.CSS("p.notice")))
	if got := text(t, tab, chromedp.CSS("p.notice")); got != "The invitation is on its way." {
		t.Fatalf("notice %q", got)
	}
	if got := text(t, tab, chromedp.CSS("#audit tbody")); !strings.Contains(got, "invited editor editor@browsers.example") ||
		!strings.Contains(got, "rotated the API keys") || !strings.Contains(got, "signed in") {
		t.Fatalf("audit trail:\n%s", got)
	}
	screenshots(t, tab, "account")

	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	defer pool.Close()
	mailer := jobs.ConsoleMails(jobs.Deps{DB: d, Log: quiet, Transport: pool, NotifyFrom: "mailroom <console@example.test>", PublicURL: srv.URL})
	if err := mailer(ctx, jobs.NewConsoleMailsTask()); err != nil {
		t.Fatal(err)
	}
	if !s.Wait(1, 5*time.Second) {
		t.Fatal("no invitation mailed")
	}
	body := strings.ReplaceAll(string(s.Messages()[0].Data), "=\r\n", "")
	link := regexp.MustCompile(regexp.QuoteMeta(srv.URL) + `/invite/[A-Za-z0-9_-]+`).FindString(body)
	if link == "" {
		t.Fatalf("no link in the invitation:\n%s", body)
	}

	// The member, in a browser of its own.
	member := browser(t)
	memberSaid := watchConsole(t, member)
	run(t, member, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#password")))
	screenshots(t, member, "invitation")
	run(t, member, chromedp.SendKeys(chromedp.CSS("#password"), "editor's own password"),
		chromedp.SendKeys(chromedp.CSS("#password_confirmation"), "editor's own password"),
		chromedp.Submit(chromedp.CSS("#password")), chromedp.WaitVisible(chromedp.CSS("#new-send")))
	// Signed in, the member lands on the console's first page, the sends.
	if u := value(t, member, chromedp.Location()); !strings.HasSuffix(u, "/sends") {
		t.Fatalf("the taken invitation went to %s", u)
	}
	run(t, member, chromedp.Navigate(srv.URL+"/account"), chromedp.WaitVisible(chromedp.CSS("#team")))
	if got := text(t, member, chromedp.CSS(".who-name")); !strings.Contains(got, "editor@browsers.example") || !strings.Contains(got, "editor") {
		t.Fatalf("signed in as %q", got)
	}
	if n := value(t, member, chromedp.Evaluate[int](`document.querySelectorAll("#rotate-keys, #invite-email").length`)); n != 0 {
		t.Fatalf("an editor sees %d key or team controls", n)
	}

	for who, lines := range map[string][]string{"owner": said(), "member": memberSaid()} {
		if len(lines) > 0 {
			t.Errorf("the %s's JavaScript console:\n%s", who, strings.Join(lines, "\n"))
		}
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
