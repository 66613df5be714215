package console_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/mailroom/mailroom/internal/console"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/redisconn"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// site is the real router with the console on a real listener, the
// package's database, and (when limit > 0) sign-in limits of limit tries
// per address and per IP in Redis db 12 under a prefix of the test's own.
type site struct {
	t   *testing.T
	d   *postgres.DB
	srv *httptest.Server
	// mailer counts the console's requests to mail links now.
	mailer atomic.Int32
}

var sitePrefix atomic.Int64

func newSite(t *testing.T, limit int) *site {
	t.Helper()
	return newSiteWith(t, limit, console.Config{})
}

// newSiteWith is newSite with cfg's TrustedProxies.
func newSiteWith(t *testing.T, limit int, cfg console.Config) *site {
	t.Helper()
	s := &site{t: t, d: testdb.New(t)}
	deps := console.Deps{DB: s.d, Log: quiet, ConsoleMails: func(context.Context) error { s.mailer.Add(1); return nil }}
	if limit > 0 {
		conn, err := redisconn.Parse("redis://127.0.0.1:6379/12")
		if err != nil {
			t.Fatal(err)
		}
		rdb := conn.Client()
		t.Cleanup(func() { rdb.Close() })
		p := "test:console:" + time.Now().Format("150405.000000") + ":" + string(rune('a'+sitePrefix.Add(1))) + ":"
		deps.LimitAddressIP = ratelimit.NewKeyed(rdb, p+"addrip:", limit, limit, time.Hour).Allow
		deps.LimitAddress = ratelimit.NewKeyed(rdb, p+"addr:", 2*limit, 2*limit, time.Hour).Allow
		deps.LimitIP = ratelimit.NewKeyed(rdb, p+"ip:", 100*limit, 100*limit, time.Hour).Allow
	}
	public := "http://console.test"
	if cfg.PublicURL != "" {
		public = cfg.PublicURL
	}
	con, err := console.New(console.Config{PublicURL: public, BcryptCost: bcrypt.MinCost,
		TrustedProxies: cfg.TrustedProxies}, deps)
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: s.d, Geo: testdb.Geo(t), Log: quiet,
		Console: con, ConsolePaths: console.Prefixes})
	s.srv = httptest.NewServer(h)
	t.Cleanup(s.srv.Close)
	return s
}

// account makes an account with an owner who has password, and returns
// the account's id and keys.
func (s *site) account(name, owner, password string) (int64, mail.Keys) {
	s.t.Helper()
	ctx := context.Background()
	id, keys, err := s.d.CreateAccount(ctx, name)
	if err != nil {
		s.t.Fatal(err)
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if _, _, err := s.d.CreateOwner(ctx, id, mail.Email(owner), string(hash)); err != nil {
		s.t.Fatal(err)
	}
	return id, keys
}

// member adds a member with a password and role to account.
func (s *site) member(account int64, email string, role mail.Role, password string) int64 {
	s.t.Helper()
	ctx := context.Background()
	u, err := s.d.Invite(ctx, account, postgres.Actor{Name: "test"}, mail.Email(email), role)
	if err != nil {
		s.t.Fatal(err)
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if _, err := s.d.Pool.Exec(ctx, "UPDATE console_users SET password_hash = $1 WHERE id = $2", string(hash), u.ID); err != nil {
		s.t.Fatal(err)
	}
	return u.ID
}

// browser is a client with its own cookies that does not follow
// redirects.
type browser struct {
	s *site
	c *http.Client
}

func (s *site) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// answer is a response with its body read.
type answer struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(req *http.Request) answer {
	b.s.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.s.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, res.Header, string(body)}
}

func (b *browser) get(path string) answer {
	b.s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.s.srv.URL+path, nil)
	return b.do(req)
}

// count gets the count fragment at path as the page does: a fragment
// still counting (the count took longer than the request waits, as on a
// loaded machine) is asked again, for up to 20 s.
func (b *browser) count(path string) answer {
	b.s.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		a := b.get(path)
		if a.status != http.StatusOK || !strings.Contains(a.body, "data-counting") || time.Now().After(deadline) {
			return a
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// post posts form to path as a same-origin form would, with the CSRF
// token of the page at from (none when from is "").
func (b *browser) post(path, from string, form url.Values) answer {
	b.s.t.Helper()
	if from != "" {
		form.Set("csrf", b.csrf(from))
	}
	req, _ := http.NewRequest(http.MethodPost, b.s.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the token in the forms of the page at path.
func (b *browser) csrf(path string) string {
	b.s.t.Helper()
	a := b.get(path)
	m := csrfRE.FindStringSubmatch(a.body)
	if m == nil {
		b.s.t.Fatalf("GET %s: %d, no csrf field in\n%s", path, a.status, a.body)
	}
	return m[1]
}

func (b *browser) signIn(email, password string) answer {
	b.s.t.Helper()
	return b.post("/signin", "/signin", url.Values{"email": {email}, "password": {password}, "next": {"/account"}})
}

func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.s.srv.URL)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func want(t *testing.T, what string, a answer, status int, contains ...string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: status %d, want %d\n%s", what, a.status, status, a.body)
	}
	for _, c := range contains {
		if !strings.Contains(a.body, c) {
			t.Fatalf("%s: the page lacks %q\n%s", what, c, a.body)
		}
	}
}

func TestSignInAndOut(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	s.account("Acme", "owner@signinandout.example", "correct horse battery")
	b := s.browser()

	a := b.get("/account")
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/signin?next=%2Faccount" {
		t.Fatalf("signed out /account: %d %q", a.status, a.header.Get("Location"))
	}
	want(t, "empty form", b.post("/signin", "/signin", url.Values{}), 422,
		"The email field is required.", "The password field is required.")
	want(t, "bad address", b.post("/signin", "/signin", url.Values{"email": {"nope"}, "password": {"x"}}), 422,
		"The email must be a valid email address.")
	want(t, "wrong password", b.signIn("owner@signinandout.example", "wrong password!"), 422, "These credentials do not match our records.")
	want(t, "unknown address", b.signIn("nobody@signinandout.example", "correct horse battery"), 422, "These credentials do not match our records.")

	res, err := b.c.Do(func() *http.Request {
		form := url.Values{"email": {"OWNER@signinandout.example"}, "password": {"correct horse battery"}, "next": {"//evil.example/x"}, "csrf": {b.csrf("/signin")}}
		req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/signin", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return req
	}())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("sign-in: %d to %q (an outside next must not be followed)", res.StatusCode, res.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "mailroom_session" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Secure || len(cookie.Value) < 40 {
		t.Fatalf("session cookie %+v", cookie)
	}
	want(t, "account", b.get("/account"), 200, "owner@signinandout.example", "Acme", "signed in")
	var stored int
	if err := s.d.Pool.QueryRow(context.Background(), "SELECT count(*) FROM console_sessions WHERE token_hash = $1",
		mail.HashToken(cookie.Value)).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("sessions stored under the token's hash: %d, %v", stored, err)
	}

	a = b.post("/signout", "/account", url.Values{})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/signin" {
		t.Fatalf("sign-out: %d %q", a.status, a.header.Get("Location"))
	}
	if a := b.get("/account"); a.status != http.StatusSeeOther {
		t.Fatalf("after sign-out /account: %d", a.status)
	}
	// The old cookie, replayed, is dead too.
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/account", nil)
	req.AddCookie(cookie)
	if a := s.browser().do(req); a.status != http.StatusSeeOther {
		t.Fatalf("replayed cookie after sign-out: %d", a.status)
	}
}

func TestSecurityHeadersAndAssets(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	b := s.browser()
	a := b.get("/signin")
	csp := a.header.Get("Content-Security-Policy")
	for _, part := range []string{"default-src 'none'", "script-src 'self';", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, part) {
			t.Fatalf("CSP %q lacks %q", csp, part)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Fatalf("CSP allows inline code: %q", csp)
	}
	for h, v := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
		"X-Content-Type-Options": "nosniff"} {
		if a.header.Get(h) != v {
			t.Fatalf("%s: %q, want %q", h, a.header.Get(h), v)
		}
	}
	if strings.Contains(a.body, "<script>") || regexp.MustCompile(`<script(?: [^>]*)?>[^<]`).MatchString(a.body) {
		t.Fatalf("inline script in\n%s", a.body)
	}
	m := regexp.MustCompile(`href="(/static/([0-9a-f]+)/app\.css)"`).FindStringSubmatch(a.body)
	if m == nil {
		t.Fatalf("no hashed stylesheet in\n%s", a.body)
	}
	css := b.get(m[1])
	if css.status != 200 || css.header.Get("Cache-Control") != "public, max-age=31536000, immutable" ||
		!strings.HasPrefix(css.header.Get("Content-Type"), "text/css") || !strings.Contains(css.body, "--accent") {
		t.Fatalf("stylesheet: %d %v", css.status, css.header)
	}
	if old := b.get("/static/0000000000/app.css"); old.status != 200 || old.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("stylesheet under an old hash: %d %q", old.status, old.header.Get("Cache-Control"))
	}
	for _, p := range []string{"/static/" + m[2] + "/nope.js", "/static/" + m[2] + "/../console.go", "/static/" + m[2] + "/vendor/LICENSES.txt",
		"/static/" + m[2] + "/%2e%2e/console.go"} {
		if a := b.get(p); a.status == 200 || strings.Contains(a.body, "package console") {
			t.Fatalf("%s: %d, want 404", p, a.status)
		}
	}
	for _, v := range []string{"vendor/htmx.min.js", "app.js"} {
		if !strings.Contains(a.body, "/"+v+`"`) {
			t.Fatalf("page does not load %s", v)
		}
	}
}

func TestCSRFAndCrossOrigin(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	acct, _ := s.account("Acme", "owner@csrfandcrossorigin.example", "correct horse battery")
	b := s.browser()
	want(t, "sign-in", b.signIn("owner@csrfandcrossorigin.example", "correct horse battery"), 303)
	invite := url.Values{"email": {"new@csrfandcrossorigin.example"}, "role": {"editor"}}

	want(t, "no token", b.post("/account/team", "", invite), 403, "The form has expired.")
	bad := url.Values{"email": {"new@csrfandcrossorigin.example"}, "role": {"editor"}, "csrf": {strings.Repeat("x", 43)}}
	want(t, "wrong token", b.post("/account/team", "", bad), 403, "The form has expired.")
	// Another browser's token (its own session's) does not work here.
	other := s.browser()
	want(t, "other sign-in", other.signIn("owner@csrfandcrossorigin.example", "correct horse battery"), 303)
	bad.Set("csrf", other.csrf("/account"))
	want(t, "another session's token", b.post("/account/team", "", bad), 403)
	// A cross-site request is refused even with the right token.
	form := url.Values{"email": {"new@csrfandcrossorigin.example"}, "role": {"editor"}, "csrf": {b.csrf("/account")}}
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/account/team", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	want(t, "cross-site", b.do(req), 403, "another site")
	// The sign-in form needs the browser's pre-session token too.
	fresh := s.browser()
	want(t, "sign-in without token", fresh.post("/signin", "", url.Values{"email": {"owner@csrfandcrossorigin.example"}, "password": {"correct horse battery"}}), 403)

	team, err := s.d.ConsoleUsers(context.Background(), acct)
	if err != nil || len(team) != 1 {
		t.Fatalf("team after refused forms: %v %v", team, err)
	}
	want(t, "with token", b.post("/account/team", "/account", invite), 303)
	if team, _ := s.d.ConsoleUsers(context.Background(), acct); len(team) != 2 || team[1].Email != "new@csrfandcrossorigin.example" || team[1].Role != mail.RoleEditor || team[1].Active {
		t.Fatalf("team: %+v", team)
	}
	if s.mailer.Load() != 1 {
		t.Fatalf("mailer woken %d times, want 1", s.mailer.Load())
	}
}

func TestSessionFixationAndExpiry(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	s.account("Acme", "owner@sessionfixationandex.example", "correct horse battery")
	acct2, _ := s.account("Other", "owner@sessionfixationandex-other.example", "another long password")
	b := s.browser()
	want(t, "first sign-in", b.signIn("owner@sessionfixationandex-other.example", "another long password"), 303)
	first := b.cookie("mailroom_session")
	// A browser that brings a live session and signs in gets a new one;
	// the one it brought ends.
	want(t, "second sign-in", b.post("/signin", "/account", url.Values{"email": {"owner@sessionfixationandex.example"},
		"password": {"correct horse battery"}}), 303)
	second := b.cookie("mailroom_session")
	if second == "" || second == first {
		t.Fatalf("session token kept across a sign-in: %q", second)
	}
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/account", nil)
	req.AddCookie(&http.Cookie{Name: "mailroom_session", Value: first})
	if a := s.browser().do(req); a.status != http.StatusSeeOther {
		t.Fatalf("the brought session still works: %d", a.status)
	}
	// A made-up cookie is no session.
	req, _ = http.NewRequest(http.MethodGet, s.srv.URL+"/account", nil)
	req.AddCookie(&http.Cookie{Name: "mailroom_session", Value: strings.Repeat("A", 43)})
	if a := s.browser().do(req); a.status != http.StatusSeeOther {
		t.Fatalf("a made-up session: %d", a.status)
	}
	// An expired session is sent to sign in, and its cookie cleared.
	want(t, "account", b.get("/account"), 200, "owner@sessionfixationandex.example")
	if _, err := s.d.Pool.Exec(context.Background(), "UPDATE console_sessions SET idle_expires_at = now() - interval '1 second' WHERE token_hash = $1",
		mail.HashToken(second)); err != nil {
		t.Fatal(err)
	}
	a := b.get("/account")
	if a.status != http.StatusSeeOther || !strings.HasPrefix(a.header.Get("Location"), "/signin") || b.cookie("mailroom_session") != "" {
		t.Fatalf("stale session: %d %q cookie %q", a.status, a.header.Get("Location"), b.cookie("mailroom_session"))
	}
	// A disabled account's sessions stop working.
	o := s.browser()
	want(t, "other sign-in", o.signIn("owner@sessionfixationandex-other.example", "another long password"), 303)
	if err := s.d.SetDisabled(context.Background(), acct2, true); err != nil {
		t.Fatal(err)
	}
	if a := o.get("/account"); a.status != http.StatusSeeOther {
		t.Fatalf("disabled account's session: %d", a.status)
	}
	want(t, "disabled sign-in", o.signIn("owner@sessionfixationandex-other.example", "another long password"), 422, "The account is disabled.")
}

func TestRoles(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	acct, _ := s.account("Acme", "owner@roles.example", "correct horse battery")
	s.member(acct, "editor@roles.example", mail.RoleEditor, "editor password 1")
	viewerID := s.member(acct, "viewer@roles.example", mail.RoleViewer, "viewer password 1")

	for _, tc := range []struct {
		email, password string
	}{{"viewer@roles.example", "viewer password 1"}, {"editor@roles.example", "editor password 1"}} {
		b := s.browser()
		want(t, tc.email+" sign-in", b.signIn(tc.email, tc.password), 303)
		page := b.get("/account")
		want(t, tc.email+" account", page, 200, "owner@roles.example", "viewer@roles.example")
		for _, hidden := range []string{"Make new keys", `action="/account/team"`, "/remove", "/role", "pk_"} {
			if strings.Contains(page.body, hidden) {
				t.Fatalf("%s sees %q", tc.email, hidden)
			}
		}
		csrf := b.csrf("/account")
		for _, path := range []string{"/account/keys", "/account/team", "/account/team/" + itoa(viewerID) + "/role", "/account/team/" + itoa(viewerID) + "/remove"} {
			want(t, tc.email+" POST "+path, b.post(path, "", url.Values{"csrf": {csrf}, "email": {"x@roles.example"}, "role": {"owner"}}), 403, "may not do this")
		}
	}
	team, _ := s.d.ConsoleUsers(context.Background(), acct)
	if len(team) != 3 || team[2].Role != mail.RoleViewer {
		t.Fatalf("team changed by refused writes: %+v", team)
	}
}

func itoa(n int64) string { return strconvFormat(n) }

func TestTeamAcrossAccountsAndLastOwner(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	acct, _ := s.account("Acme", "owner@teamacrossaccountsan.example", "correct horse battery")
	other, _ := s.account("Other", "owner@teamacrossaccountsan-other.example", "another long password")
	otherMember := s.member(other, "someone@teamacrossaccountsan-other.example", mail.RoleEditor, "someone password")
	b := s.browser()
	want(t, "sign-in", b.signIn("owner@teamacrossaccountsan.example", "correct horse battery"), 303)

	for _, path := range []string{"/account/team/" + itoa(otherMember) + "/role", "/account/team/" + itoa(otherMember) + "/remove",
		"/account/team/abc/role", "/account/team/-1/remove", "/account/team/99999999999999999999/role"} {
		want(t, "POST "+path, b.post(path, "/account", url.Values{"role": {"viewer"}}), 404)
	}
	if u, _ := s.d.ConsoleUsers(context.Background(), other); len(u) != 2 || u[1].Role != mail.RoleEditor {
		t.Fatalf("another account's team changed: %+v", u)
	}
	team, _ := s.d.ConsoleUsers(context.Background(), acct)
	me := itoa(team[0].ID)
	want(t, "demote the last owner", b.post("/account/team/"+me+"/role", "/account", url.Values{"role": {"editor"}}), 409,
		"The account must keep at least one owner.")
	want(t, "remove the last owner", b.post("/account/team/"+me+"/remove", "/account", url.Values{}), 409,
		"The account must keep at least one owner.")
	want(t, "bad role", b.post("/account/team/"+me+"/role", "/account", url.Values{"role": {"admin"}}), 422, "The selected role is invalid.")
	want(t, "invite taken address", b.post("/account/team", "/account", url.Values{"email": {"Someone@teamacrossaccountsan-other.example"}, "role": {"viewer"}}), 422,
		"The email has already been taken.")
	want(t, "invite bad", b.post("/account/team", "/account", url.Values{"email": {"<script>@x"}, "role": {""}}), 422,
		"The email must be a valid email address.", "The role field is required.", "value=\"&lt;script&gt;@x\"")

	// A second owner makes the first removable; removing oneself signs out.
	second := s.member(acct, "second@teamacrossaccountsan.example", mail.RoleEditor, "second password")
	want(t, "promote", b.post("/account/team/"+itoa(second)+"/role", "/account", url.Values{"role": {"owner"}}), 303)
	a := b.post("/account/team/"+me+"/remove", "/account", url.Values{})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/signin" {
		t.Fatalf("remove oneself: %d %q", a.status, a.header.Get("Location"))
	}
	if a := b.get("/account"); a.status != http.StatusSeeOther {
		t.Fatalf("removed owner still signed in: %d", a.status)
	}
	ev, err := s.d.AuditEvents(context.Background(), acct, 0, 10)
	if err != nil || len(ev) < 3 || ev[0].Action != "removed" || ev[0].Target != "owner@teamacrossaccountsan.example" || ev[0].Actor != "owner@teamacrossaccountsan.example" ||
		ev[1].Action != "changed the role to owner" || ev[1].Target != "second@teamacrossaccountsan.example" || ev[0].IP != "127.0.0.1" {
		t.Fatalf("audit: %+v %v", ev, err)
	}
}

func TestKeyRotationRefusesTheOldKeys(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	acct, keys := s.account("Acme", "owner@keyrotationrefusesth.example", "correct horse battery")
	b := s.browser()
	want(t, "sign-in", b.signIn("owner@keyrotationrefusesth.example", "correct horse battery"), 303)
	api := func(k mail.Keys) int {
		req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/api/custom-fields", nil)
		req.Header.Set("PublicKey", k.Public)
		req.Header.Set("SecretKey", k.Secret)
		return s.browser().do(req).status
	}
	if c := api(keys); c != 200 {
		t.Fatalf("API with the first keys: %d", c)
	}
	a := b.post("/account/keys", "/account", url.Values{})
	want(t, "rotate", a, 200, "Copy it now")
	m := regexp.MustCompile(`id="public-key">(pk_[A-Za-z0-9_-]+)<.*id="secret-key">(sk_[A-Za-z0-9_-]+)<`).FindStringSubmatch(strings.ReplaceAll(a.body, "\n", " "))
	if m == nil {
		t.Fatalf("no new keys shown in\n%s", a.body)
	}
	if c := api(keys); c != 401 {
		t.Fatalf("API with the old keys: %d, want 401", c)
	}
	if c := api(mail.Keys{Public: m[1], Secret: m[2]}); c != 200 {
		t.Fatalf("API with the new keys: %d", c)
	}
	if again := b.get("/account"); strings.Contains(again.body, m[2]) || !strings.Contains(again.body, m[1]) {
		t.Fatal("the account page shows the secret again, or not the new public key")
	}
	ev, _ := s.d.AuditEvents(context.Background(), acct, 0, 1)
	if len(ev) != 1 || ev[0].Action != "rotated the API keys" || ev[0].Actor != "owner@keyrotationrefusesth.example" {
		t.Fatalf("audit: %+v", ev)
	}
}

func TestSignInLimit(t *testing.T) {
	t.Parallel()
	s := newSite(t, 3)
	acct, _ := s.account("Acme", "owner@signinlimit.example", "correct horse battery")
	b := s.browser()
	for i := 0; i < 3; i++ {
		want(t, "wrong password", b.signIn("owner@signinlimit.example", "wrong password!!"), 422)
	}
	a := b.signIn("owner@signinlimit.example", "correct horse battery")
	want(t, "over the limit", a, 429, "Too many attempts.")
	if a.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	// Another address from the same IP still gets its tries.
	s.member(acct, "x@signinlimit.example", mail.RoleViewer, "x password 12")
	want(t, "another address", b.signIn("x@signinlimit.example", "wrong password!!"), 422, "These credentials do not match")
}

// One client spending an address's tries does not lock the others out of
// it; the address's own, looser allowance holds against many clients. An
// IPv6 client counts by its /64.
func TestSignInLimitPerClient(t *testing.T) {
	t.Parallel()
	s := newSiteWith(t, 3, console.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	s.account("Acme", "owner@perclient.example", "correct horse battery")
	from := func(client, password string) answer {
		t.Helper()
		b := s.browser()
		form := url.Values{"email": {"owner@perclient.example"}, "password": {password}, "csrf": {b.csrf("/signin")}}
		req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/signin", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", client)
		return b.do(req)
	}
	for i := 0; i < 3; i++ {
		want(t, "attacker", from("2001:db8::1", "wrong password!!"), 422)
	}
	want(t, "attacker over its limit", from("2001:db8::1", "wrong password!!"), 429)
	want(t, "the attacker's /64", from("2001:db8::ffff", "wrong password!!"), 429)
	want(t, "the owner elsewhere", from("203.0.113.5", "correct horse battery"), 303)
	// The address's allowance (6 here: 3, then 1 above) is spent by many
	// clients together.
	want(t, "second client", from("203.0.113.6", "wrong password!!"), 422)
	want(t, "third client", from("203.0.113.7", "wrong password!!"), 422)
	want(t, "fourth client", from("203.0.113.8", "correct horse battery"), 429)
}

var linkRE = regexp.MustCompile(`http://console\.test(/(?:invite|reset)/[A-Za-z0-9_-]+)`)

// mailedLink runs the worker's console mail task into a real SMTP server
// and returns the path of the link in the one mail to addr. Its callers
// are not parallel tests: a run mails every waiting link, so two at once
// could each send the other's.
func mailedLink(t *testing.T, d *postgres.DB, addr string) (path, subject string) {
	t.Helper()
	srv := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: srv.Addr, Size: 1, Timeout: 5 * time.Second})
	defer pool.Close()
	run := jobs.ConsoleMails(jobs.Deps{DB: d, Log: quiet, Transport: pool, NotifyFrom: "mailroom <console@example.test>", PublicURL: "http://console.test"})
	for range 2 { // the second run finds nothing to send
		if err := run(context.Background(), jobs.NewConsoleMailsTask()); err != nil {
			t.Fatal(err)
		}
	}
	// Links other tests asked for may go out in the same run: only the
	// mails to addr count.
	var mine []smtptest.Message
	for _, m := range srv.Messages() {
		if len(m.To) == 1 && m.To[0] == addr {
			mine = append(mine, m)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("%d mails to %s, want 1", len(mine), addr)
	}
	msg := mine[0]
	body := strings.ReplaceAll(string(msg.Data), "=\r\n", "")
	m := linkRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no link in\n%s", body)
	}
	sm := regexp.MustCompile(`(?m)^Subject: (.*)\r$`).FindStringSubmatch(body)
	if sm != nil {
		subject = sm[1]
	}
	return m[1], subject
}

func TestInvitationMailSignsTheMemberIn(t *testing.T) {
	s := newSite(t, 0)
	acct, _ := s.account("Acme", "owner@invitationmailsignst.example", "correct horse battery")
	owner := s.browser()
	want(t, "sign-in", owner.signIn("owner@invitationmailsignst.example", "correct horse battery"), 303)
	want(t, "invite", owner.post("/account/team", "/account", url.Values{"email": {"Bob@Invitationmailsignst.example"}, "role": {"viewer"}}), 303)
	want(t, "invited", owner.get("/account?notice=invited"), 200, "The invitation is on its way.", "Bob@Invitationmailsignst.example", "invited")
	// Invited but without a password: no sign-in yet.
	bob := s.browser()
	want(t, "sign-in before the invitation", bob.signIn("bob@invitationmailsignst.example", "whatever password"), 422, "These credentials do not match")

	link, subject := mailedLink(t, s.d, "Bob@Invitationmailsignst.example")
	if subject != "You are invited to Acme on mailroom" {
		t.Fatalf("subject %q", subject)
	}
	want(t, "link", bob.get(link), 200, "Bob@Invitationmailsignst.example", "Acme", "Choose a password")
	want(t, "short password", bob.post(link, link, url.Values{"password": {"short"}, "password_confirmation": {"short"}}), 422,
		"The password must be at least 10 characters.")
	want(t, "mismatch", bob.post(link, link, url.Values{"password": {"bob's long password"}, "password_confirmation": {"other"}}), 422,
		"The password confirmation does not match.")
	a := bob.post(link, link, url.Values{"password": {"bob's long password"}, "password_confirmation": {"bob's long password"}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/" {
		t.Fatalf("take the invitation: %d %q\n%s", a.status, a.header.Get("Location"), a.body)
	}
	want(t, "bob's account page", bob.get("/account"), 200, "Bob@Invitationmailsignst.example", "viewer")
	// The link works once.
	want(t, "link again", s.browser().get(link), 404, "This link has expired or was used already.")
	want(t, "link posted again", s.browser().post(link, "/signin", url.Values{"password": {"another long one"}, "password_confirmation": {"another long one"}}), 404)
	want(t, "sign-in with the new password", s.browser().signIn("bob@invitationmailsignst.example", "bob's long password"), 303)
	if team, _ := s.d.ConsoleUsers(context.Background(), acct); len(team) != 2 || !team[1].Active {
		t.Fatalf("team: %+v", team)
	}
}

func TestPasswordReset(t *testing.T) {
	s := newSite(t, 0)
	s.account("Acme", "owner@passwordreset.example", "correct horse battery")
	elsewhere := s.browser()
	want(t, "sign-in elsewhere", elsewhere.signIn("owner@passwordreset.example", "correct horse battery"), 303)

	b := s.browser()
	unknown := b.post("/reset", "/reset", url.Values{"email": {"nobody@passwordreset.example"}})
	known := b.post("/reset", "/reset", url.Values{"email": {"owner@passwordreset.example"}})
	want(t, "unknown", unknown, 200, "a mail with a link")
	want(t, "known", known, 200, "a mail with a link")
	if strings.ReplaceAll(unknown.body, "nobody@passwordreset.example", "X") != strings.ReplaceAll(known.body, "owner@passwordreset.example", "X") &&
		len(unknown.body) != len(known.body)+len("nobody")-len("owner") {
		// The pages differ only in the address shown (and the CSRF token is the same browser's).
		t.Fatalf("the answers tell the addresses apart")
	}
	if s.mailer.Load() != 1 {
		t.Fatalf("mailer woken %d times, want 1 (only for the known address)", s.mailer.Load())
	}
	link, subject := mailedLink(t, s.d, "owner@passwordreset.example")
	if !strings.HasPrefix(link, "/reset/") || subject != "Reset your mailroom password" {
		t.Fatalf("link %q subject %q", link, subject)
	}
	want(t, "new password", b.post(link, link, url.Values{"password": {"a brand new password"}, "password_confirmation": {"a brand new password"}}), 303)
	if a := elsewhere.get("/account"); a.status != http.StatusSeeOther {
		t.Fatalf("the other session survived the reset: %d", a.status)
	}
	want(t, "old password", s.browser().signIn("owner@passwordreset.example", "correct horse battery"), 422)
	want(t, "new password sign-in", s.browser().signIn("owner@passwordreset.example", "a brand new password"), 303)
}

// A next that leaves the site is never followed, before the sign-in (the
// POST's redirect) nor after it (GET /signin redirects at once): browsers
// read a backslash as a slash, so a Location starting /\ is another
// host's, and the redirect cleans dot segments before it answers.
func TestSignInNextStaysOnSite(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	s.account("Acme", "owner@nextstaysonsite.example", "correct horse battery")
	offsite := func(loc string) bool {
		l := strings.ReplaceAll(loc, `\`, "/")
		return !strings.HasPrefix(l, "/") || strings.HasPrefix(l, "//")
	}
	for _, next := range []string{"//evil.example", `/\evil.example`, `/./\evil.example`, `/a/../\evil.example`,
		`/.\/evil.example`, "/\t/evil.example", "https://evil.example", "javascript:alert(1)"} {
		b := s.browser()
		a := b.post("/signin", "/signin", url.Values{"email": {"owner@nextstaysonsite.example"},
			"password": {"correct horse battery"}, "next": {next}})
		if a.status != http.StatusSeeOther || offsite(a.header.Get("Location")) {
			t.Fatalf("sign-in with next %q: %d to %q", next, a.status, a.header.Get("Location"))
		}
		a = b.get("/signin?next=" + url.QueryEscape(next))
		if a.status != http.StatusSeeOther || offsite(a.header.Get("Location")) {
			t.Fatalf("signed in, GET /signin?next=%q: %d to %q", next, a.status, a.header.Get("Location"))
		}
	}
}

// A link that fails for want of the database is logged without its
// token, which works for whoever reads it until it is used.
func TestFailedLinkLogsNoToken(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	// A pool of its own, closed: the package's database is shared.
	d, err := postgres.Open(context.Background(), testdb.DSN(t), quiet)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	con, err := console.New(console.Config{BcryptCost: bcrypt.MinCost}, console.Deps{DB: d, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	con.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/invite/TheSecretToken", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(logs.String(), "console request failed") {
		t.Fatalf("%d, log:\n%s", rec.Code, logs.String())
	}
	if strings.Contains(logs.String(), "TheSecretToken") {
		t.Fatalf("the token is in the log:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer for a logger's writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTextIsEscapedOnEveryPage(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	evil := `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
	acct, _ := s.account(evil, "owner@textisescapedonevery.example", "correct horse battery")
	if err := s.d.RecordAudit(context.Background(), acct, postgres.Actor{Name: evil, IP: evil}, evil, evil); err != nil {
		t.Fatal(err)
	}
	b := s.browser()
	want(t, "sign-in", b.signIn("owner@textisescapedonevery.example", "correct horse battery"), 303)
	for _, p := range []string{"/account", "/signin?next=" + url.QueryEscape(`"><script>alert(3)</script>`)} {
		a := b.get(p)
		if strings.Contains(a.body, "<script>alert") || strings.Contains(a.body, "<img src=x") {
			t.Fatalf("%s renders markup from stored text:\n%s", p, a.body)
		}
	}
	want(t, "escaped", b.get("/account"), 200, "&lt;script&gt;alert(1)&lt;/script&gt;")
}

func strconvFormat(n int64) string { return strconv.FormatInt(n, 10) }

// The mux's own answers (no route, wrong method) carry the pages' headers.
func TestHeadersOnEveryAnswer(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	b := s.browser()
	for _, tc := range []struct {
		method, path string
		status       int
	}{{"PUT", "/account", 405}, {"DELETE", "/signin", 405}, {"GET", "/account/nope", 404}, {"GET", "/static/x/y", 404}, {"HEAD", "/signin", 200}} {
		req, _ := http.NewRequest(tc.method, s.srv.URL+tc.path, nil)
		a := b.do(req)
		if a.status != tc.status || !strings.HasPrefix(a.header.Get("Content-Security-Policy"), "default-src 'none'") ||
			a.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s %s: %d %v", tc.method, tc.path, a.status, a.header)
		}
	}
}

// Behind a trusted proxy the client is the last address X-Forwarded-For
// names that is no proxy; from anywhere else the header is ignored.
func TestClientIPBehindAProxy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		proxies []netip.Prefix
		xff     string
		want    string
	}{
		{nil, "203.0.113.9", "127.0.0.1"},
		{[]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "6.6.6.6, 203.0.113.9", "203.0.113.9"},
		{[]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}, "6.6.6.6, 203.0.113.9, 10.1.2.3", "203.0.113.9"},
		{[]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "not an address", "127.0.0.1"},
	} {
		s := newSiteWith(t, 0, console.Config{TrustedProxies: tc.proxies})
		acct, _ := s.account("Acme", "owner@clientip"+strconv.Itoa(len(tc.proxies))+strconv.Itoa(len(tc.xff))+".example", "correct horse battery")
		b := s.browser()
		form := url.Values{"email": {"owner@clientip" + strconv.Itoa(len(tc.proxies)) + strconv.Itoa(len(tc.xff)) + ".example"},
			"password": {"correct horse battery"}, "csrf": {b.csrf("/signin")}}
		req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/signin", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", tc.xff)
		want(t, "sign-in", b.do(req), 303)
		ev, err := s.d.AuditEvents(context.Background(), acct, 0, 1)
		if err != nil || len(ev) != 1 || ev[0].IP != tc.want {
			t.Errorf("proxies %v, X-Forwarded-For %q: audit %+v %v, want IP %s", tc.proxies, tc.xff, ev, err, tc.want)
		}
	}
}

// Over https the cookies are __Host- cookies: Secure, the whole site, no
// domain.
func TestCookiesOverHTTPS(t *testing.T) {
	t.Parallel()
	s := newSiteWith(t, 0, console.Config{PublicURL: "https://console.test"})
	s.account("Acme", "owner@https.example", "correct horse battery")
	res, err := http.Get(s.srv.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var csrf *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "__Host-mailroom_csrf" {
			csrf = c
		}
	}
	if csrf == nil || !csrf.Secure || csrf.Path != "/" || csrf.Domain != "" {
		t.Fatalf("CSRF cookie %+v in %v", csrf, res.Header["Set-Cookie"])
	}
	form := url.Values{"email": {"owner@https.example"}, "password": {"correct horse battery"}, "csrf": {csrf.Value}}
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/signin", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(csrf)
	a := s.browser().do(req)
	if a.status != http.StatusSeeOther || !strings.Contains(strings.Join(a.header["Set-Cookie"], "\n"), "__Host-mailroom_session=") {
		t.Fatalf("sign-in: %d %v", a.status, a.header["Set-Cookie"])
	}
	for _, c := range a.header["Set-Cookie"] {
		if strings.HasPrefix(c, "__Host-mailroom_session=") && (!strings.Contains(c, "; Secure") || !strings.Contains(c, "; HttpOnly") ||
			!strings.Contains(c, "; Path=/") || strings.Contains(c, "Domain")) {
			t.Fatalf("session cookie %q", c)
		}
	}
}

// A form over the limit is 413, not a missing token.
func TestFormTooLarge(t *testing.T) {
	t.Parallel()
	s := newSite(t, 0)
	s.account("Acme", "owner@large.example", "correct horse battery")
	b := s.browser()
	want(t, "sign-in", b.signIn("owner@large.example", "correct horse battery"), 303)
	want(t, "large", b.post("/account/team", "/account", url.Values{"email": {strings.Repeat("a", 2<<20)}, "role": {"viewer"}}), 413,
		"The form is too large.")
}
