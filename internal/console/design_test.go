package console_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"mime/quotedprintable"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/mailroom/mailroom/internal/console"
	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/media"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// editorSite is a site whose console has an image store served at
// /media/, and whose test mails the worker's handler sends at once into a
// real SMTP server.
type editorSite struct {
	*site
	con    *console.Handler
	store  media.Store
	smtp   *smtptest.Server
	acct   int64
	sender int64
	owner  *browser
	email  string // the owner's
	mu     sync.Mutex
	tests  []int64 // the test mails queued
}

func newEditorSite(t *testing.T) *editorSite {
	t.Helper()
	s := &editorSite{site: &site{t: t, d: testdb.New(t)}}
	var err error
	if s.store, err = media.NewFS(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	s.smtp = smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.smtp.Addr, Size: 1, Timeout: 5 * time.Second})
	t.Cleanup(func() { pool.Close() })
	send := jobs.DesignTestSend(jobs.Deps{DB: s.d, Log: quiet, Transport: pool, PublicURL: "http://console.test"})
	con, err := console.New(console.Config{PublicURL: "http://console.test", BcryptCost: bcrypt.MinCost, MediaQuota: 5 << 20},
		console.Deps{DB: s.d, Log: quiet, Media: s.store, DesignTest: func(ctx context.Context, id int64) error {
			s.mu.Lock()
			s.tests = append(s.tests, id)
			s.mu.Unlock()
			return send(ctx, jobs.NewDesignTestSendTask(id))
		}})
	if err != nil {
		t.Fatal(err)
	}
	s.con = con
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: s.d, Geo: testdb.Geo(t), Log: quiet,
		Console: con, ConsolePaths: console.Prefixes, Media: media.NewHandler(s.store, quiet)})
	s.srv = httptest.NewServer(h)
	t.Cleanup(s.srv.Close)
	s.email = strings.ToLower(t.Name()) + "@editor.example"
	s.acct, _ = s.account("Acme", s.email, "correct horse battery")
	s.sender = s.newSender(s.acct, true)
	s.owner = s.browser()
	want(t, "owner sign-in", s.owner.signIn(s.email, "correct horse battery"), 303)
	return s
}

func (s *editorSite) exec(q string, args ...any) {
	s.t.Helper()
	if _, err := s.d.Pool.Exec(context.Background(), q, args...); err != nil {
		s.t.Fatalf("%s: %v", q, err)
	}
}

func scan[T any](s *editorSite, q string, args ...any) T {
	s.t.Helper()
	var v T
	if err := s.d.Pool.QueryRow(context.Background(), q, args...).Scan(&v); err != nil {
		s.t.Fatalf("%s: %v", q, err)
	}
	return v
}

func (s *editorSite) newSender(acct int64, verified bool) int64 {
	v := 0
	if verified {
		v = 1
	}
	return scan[int64](s, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'Acme Shop', 'news@acme.example', 'help@acme.example', 276, 'Marienplatz 1', 'n', gen_random_uuid()::text, $2) RETURNING id`, acct, v)
}

// newSend stores a single send of acct with status and the design, and
// answers its utr.
func (s *editorSite) newSend(acct, sender int64, name string, status int16, js, html *string) string {
	return scan[string](s, `INSERT INTO single_sends (user_id, utr, template_id, template_json, template_html, sender_id, unsubscribe_group_id,
			single_send_name, subject, preheader, recipient_id, exclude_specific_recipient_id, status, due_at, unique_open_token)
		VALUES ($1, gen_random_uuid(), 1, $2, $3, $4, 0, $5, 'Hello ((first_name))', 'Our news', '[]', '[]', $6, now(), '{}')
		RETURNING utr::text`, acct, js, html, sender, name, status)
}

// newSchedule stores an automation of acct with one schedule of the
// design, and answers the schedule's utr.
func (s *editorSite) newSchedule(acct, sender int64, js, html *string) string {
	a := scan[int64](s, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table)
		VALUES ($1, gen_random_uuid(), 'Onboarding', 1, 1, 'contacts_') RETURNING id`, acct)
	return scan[string](s, `INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject, waiting_period,
		waiting_type, template_json, template_html) VALUES ($1, $2, gen_random_uuid(), $3, 4, 'Welcome, ((first_name))', 1, 'instantly', $4, $5)
		RETURNING utr::text`, acct, a, sender, js, html)
}

// sendDesign is a send's stored template_json ("<null>" for NULL),
// template_html, status and version.
func (s *editorSite) sendDesign(utr string) (js, html string, status int16, version int32) {
	var j, h *string
	if err := s.d.Pool.QueryRow(context.Background(), `SELECT template_json, template_html, status, version FROM single_sends WHERE utr = $1::uuid`,
		utr).Scan(&j, &h, &status, &version); err != nil {
		s.t.Fatal(err)
	}
	js, html = "<null>", "<null>"
	if j != nil {
		js = *j
	}
	if h != nil {
		html = *h
	}
	return js, html, status, version
}

// postForm posts fields to path as the editor's form does (multipart),
// with the CSRF token of the page at from.
func (b *browser) postForm(path, from string, fields map[string]string) answer {
	b.s.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if from != "" {
		w.WriteField("csrf", b.csrf(from))
	}
	for k, v := range fields {
		w.WriteField(k, v)
	}
	w.Close()
	req, _ := http.NewRequest(http.MethodPost, b.s.srv.URL+path, &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

// upload posts a file as the editor's script does: the CSRF token in the
// header (token "" sends none); field true puts it in a csrf field before
// the file instead.
func (b *browser) upload(token string, field bool, name string, data []byte) answer {
	b.s.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if field {
		w.WriteField("csrf", token)
	}
	fw, _ := w.CreateFormFile("file", name)
	fw.Write(data)
	w.Close()
	req, _ := http.NewRequest(http.MethodPost, b.s.srv.URL+"/design/editor/media", &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if !field && token != "" {
		req.Header.Set("X-CSRF-Token", token)
	}
	return b.do(req)
}

// document is a catalogue template's document, changed by edit, as JSON.
func document(t *testing.T, id int64, edit func(d *design.Document)) string {
	t.Helper()
	for _, tpl := range design.Templates() {
		if tpl.ID == id {
			d, err := design.ParseDocument([]byte(tpl.JSON))
			if err != nil {
				t.Fatal(err)
			}
			if edit != nil {
				edit(d)
			}
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatalf("no template %d", id)
	return ""
}

// insert puts b before the document's footer.
func insert(d *design.Document, b design.Block) {
	n := len(d.Blocks)
	d.Blocks = append(d.Blocks[:n-1:n-1], b, d.Blocks[n-1])
}

func ptr(s string) *string { return &s }

const welcome = 4 // the catalogue's Welcome

// The editor's pages: a draft send's in design mode (its blocks as
// fields, the scripts it needs and no other), code mode with the code
// editor, a schedule's at its design_url; another account's utr, a
// malformed one and any other address below /design/editor are the
// console's 404; the API keeps /design/previews.
func TestDesignEditorPages(t *testing.T) {
	t.Parallel()
	s := newEditorSite(t)
	js := document(t, welcome, nil)
	utr := s.newSend(s.acct, s.sender, "Spring news", mail.SendDraft, &js, nil)
	base := "/design/editor/single-send/" + utr

	a := s.owner.get(base)
	want(t, "design mode", a, 200, "Spring news", `data-mode="design"`, `name="template_json"`, "Great to have you, ((first_name))!",
		`data-type="steps"`, `data-type="footer"`, `id="new-image"`, "/vendor/Sortable.min.js", "/editor.js", `aria-label="Move block 3 (Heading) up"`,
		`formaction="`+base+`/preview"`, `formtarget="preview"`, `sandbox="allow-popups allow-popups-to-escape-sandbox"`, "((unsubscribe_preferences))",
		`id="save"`, "Send a test")
	if strings.Contains(a.body, "codemirror") || strings.Contains(a.header.Get("Content-Security-Policy"), "frame-ancestors 'self'") ||
		a.header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("design mode: code editor loaded or the page may be framed: %v", a.header)
	}
	// Welcome's 11 blocks, and a template of each of the 14 types a block
	// may be added as (all but the footer).
	if n := len(blockCountRE.FindAllString(a.body, -1)); n != 11+14 {
		t.Fatalf("%d blocks and templates", n)
	}
	want(t, "code mode", s.owner.get(base+"?mode=code"), 200, `data-mode="code"`, "/vendor/codemirror.min.js", `name="template_html"`,
		"&lt;!DOCTYPE html&gt;", "Great to have you, ((first_name))!")

	schedule := s.newSchedule(s.acct, s.sender, nil, ptr("<p>Hi ((first_name))</p>"))
	want(t, "schedule, HTML only", s.owner.get("/design/editor/"+schedule), 200, "Onboarding", `data-mode="code"`, "Welcome, ((first_name))",
		"&lt;p&gt;Hi ((first_name))&lt;/p&gt;")
	want(t, "schedule, design mode without a document", s.owner.get("/design/editor/"+schedule+"?mode=design"), 200,
		"This mail has no design document", "?mode=design&amp;start=2")
	want(t, "schedule, started from a template", s.owner.get("/design/editor/"+schedule+"?mode=design&start=2"), 200,
		`data-dirty="true"`, `data-type="columns"`, "Not saved yet.")

	other, _ := s.account("Other", "owner@other-editor.example", "another long password")
	theirs := s.newSend(other, s.newSender(other, true), "Theirs", mail.SendDraft, &js, nil)
	theirSchedule := s.newSchedule(other, s.sender, &js, nil)
	for _, p := range []string{"/design/editor/single-send/" + theirs, "/design/editor/" + theirSchedule, "/design/editor/" + theirs,
		"/design/editor/single-send/" + schedule, "/design/editor/not-a-utr", "/design/editor/single-send/x", "/design/editor/" + utr + "/nope",
		"/design/editor", "/design/editor/"} {
		want(t, p, s.owner.get(p), 404, "There is no such record in this account.")
	}
	for _, p := range []string{"/design/editor/single-send/" + theirs + "/save", "/design/editor/single-send/" + theirs + "/preview",
		"/design/editor/" + theirSchedule + "/save", "/design/editor/" + theirSchedule + "/test", "/design/editor/" + theirSchedule + "/text"} {
		want(t, "POST "+p, s.owner.postForm(p, base, map[string]string{"mode": "code", "template_html": "<p>x</p>"}), 404)
	}
	if js2, _, _, _ := s.sendDesign(theirs); js2 != js {
		t.Fatal("another account's send changed")
	}
	// Signed out: to the sign-in, back here after.
	a = s.browser().get(base)
	if a.status != 303 || a.header.Get("Location") != "/signin?next="+url.QueryEscape(base) {
		t.Fatalf("signed out: %d %q", a.status, a.header.Get("Location"))
	}
	// The API's catalogue previews beside the console's /design/editor.
	if a := s.owner.get("/design/previews/blank.png"); a.status != 200 || a.header.Get("Content-Type") != "image/png" {
		t.Fatalf("/design/previews: %d %v", a.status, a.header)
	}
}

var blockCountRE = regexp.MustCompile(`<li class="block[^"]*" data-block`)

// Saving: a changed document is stored with its HTML built by
// design.Build, and the page opens it again; a document the design check
// refuses comes back as posted with the API's message beside its block,
// and nothing changes; code mode stores HTML alone; a draft stays a
// draft, a ready send keeps its status and version; a running or
// completed send is read-only and its save answers 409 as the API's.
func TestDesignSave(t *testing.T) {
	t.Parallel()
	s := newEditorSite(t)
	js := document(t, welcome, nil)
	utr := s.newSend(s.acct, s.sender, "Spring news", mail.SendDraft, &js, nil)
	base := "/design/editor/single-send/" + utr

	changed := document(t, welcome, func(d *design.Document) {
		insert(d, design.Block{Type: "button", Text: "Shop now", URL: "https://acme.example/shop"})
		insert(d, design.Block{Type: "image", Src: "http://console.test/media/" + strings.Repeat("a", 64) + ".png", Alt: "A photo", Width: 300, Height: 200})
	})
	a := s.owner.postForm(base+"/save", base, map[string]string{"mode": "design", "template_json": changed})
	if a.status != 303 || a.header.Get("Location") != base+"?saved=1&mode=design" {
		t.Fatalf("save: %d %q\n%s", a.status, a.header.Get("Location"), a.body)
	}
	built, err := design.Build([]byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	gotJS, gotHTML, status, _ := s.sendDesign(utr)
	if gotJS != changed || gotHTML != built || status != mail.SendDraft {
		t.Fatalf("stored %.60q / %.60q status %d", gotJS, gotHTML, status)
	}
	a = s.owner.get(base + "?saved=1&mode=design")
	want(t, "after the save", a, 200, "The design is saved.", "Shop now", "A photo")
	if n := len(blockCountRE.FindAllString(a.body, -1)); n != 13+14 {
		t.Fatalf("%d block items, want 13 blocks and 14 templates", n)
	}
	ev, _ := s.d.AuditEvents(context.Background(), s.acct, 0, 1)
	if len(ev) != 1 || ev[0].Action != "saved the design of" || ev[0].Target != "Spring news" {
		t.Fatalf("audit: %+v", ev)
	}

	// Refused: the API's message, the block marked, the posted document
	// shown, nothing stored.
	bad := document(t, welcome, func(d *design.Document) {
		insert(d, design.Block{Type: "image", Src: "javascript:alert(1)", Alt: "x"})
	})
	a = s.owner.postForm(base+"/save", base, map[string]string{"mode": "design", "template_json": bad})
	want(t, "refused", a, 422, `The template json is not a valid design: block 11 (image): src &#34;javascript:alert(1)&#34;: want an absolute http or https URL.`,
		`class="block has-error"`, `data-dirty="true"`, "javascript:alert(1)")
	for _, tc := range []struct{ name, json, msg string }{
		{"no footer", `{"version":1,"name":"x","settings":{"width":600,"background":"#fff","content_background":"#fff","font_family":"Arial",` +
			`"text_color":"#000","heading_color":"#000","accent_color":"#000","muted_color":"#000","border_color":"#000"},"blocks":[]}`,
			"The template json is not a valid design: the last block, and only it, must be the footer."},
		{"not JSON", "{", "The template json is not a valid design: unexpected EOF."},
		{"empty", "", "The template json field is required when template html is not present."},
		{"too large", strings.Repeat(" ", 1<<20+1), "The template json may not be larger than 1048576 bytes."},
	} {
		want(t, tc.name, s.owner.postForm(base+"/save", base, map[string]string{"mode": "design", "template_json": tc.json}), 422, tc.msg)
	}
	if j, _, _, _ := s.sendDesign(utr); j != changed {
		t.Fatal("a refused save changed the design")
	}

	// Code mode: HTML alone.
	a = s.owner.postForm(base+"/save", base, map[string]string{"mode": "code", "template_html": "<p>Hand made for ((first_name))</p>"})
	if a.status != 303 || a.header.Get("Location") != base+"?saved=1&mode=code" {
		t.Fatalf("code save: %d %s", a.status, a.body)
	}
	if j, h, _, _ := s.sendDesign(utr); j != "<null>" || h != "<p>Hand made for ((first_name))</p>" {
		t.Fatalf("code save stored %q %q", j, h)
	}
	want(t, "opens in code mode", s.owner.get(base), 200, `data-mode="code"`, "Hand made for")

	// A ready send keeps its status and version.
	ready := s.newSend(s.acct, s.sender, "Ready", mail.SendReady, &js, nil)
	_, _, _, v0 := s.sendDesign(ready)
	want(t, "ready", s.owner.postForm("/design/editor/single-send/"+ready+"/save", base, map[string]string{"mode": "design", "template_json": changed}), 303)
	if j, _, st, v := s.sendDesign(ready); j != changed || st != mail.SendReady || v != v0 {
		t.Fatalf("ready send: status %d version %d (was %d)", st, v, v0)
	}

	// Running and completed sends are read-only.
	for _, st := range []int16{mail.SendRunning, mail.SendCompleted} {
		locked := s.newSend(s.acct, s.sender, "Locked", st, &js, nil)
		lb := "/design/editor/single-send/" + locked
		a := s.owner.get(lb)
		word := map[int16]string{mail.SendRunning: "running", mail.SendCompleted: "completed"}[st]
		want(t, word+" page", a, 200, "its design can no longer change", `<fieldset class="plain" disabled>`, `data-writable="false"`)
		if strings.Contains(a.body, `id="save"`) || strings.Contains(a.body, `id="add-block"`) {
			t.Fatalf("%s send shows its write buttons", word)
		}
		want(t, word+" save", s.owner.postForm(lb+"/save", lb, map[string]string{"mode": "design", "template_json": changed}), 409,
			"This single send is "+word+" and cannot be updated.")
		if j, _, _, _ := s.sendDesign(locked); j != js {
			t.Fatalf("%s send changed", word)
		}
		// Still previewed.
		want(t, word+" preview", s.owner.postForm(lb+"/preview", lb, map[string]string{"mode": "design", "template_json": js}), 200, "Great to have you, Ada!")
	}

	// A schedule's design, at its design_url.
	schedule := s.newSchedule(s.acct, s.sender, nil, ptr("<p>x</p>"))
	sb := "/design/editor/" + schedule
	want(t, "schedule save", s.owner.postForm(sb+"/save", sb, map[string]string{"mode": "design", "template_json": changed}), 303)
	if got := scan[string](s, "SELECT template_json || template_html FROM automation_schedules WHERE utr = $1::uuid", schedule); got != changed+built {
		t.Fatalf("schedule stored %.80q", got)
	}
}

// A viewer reads the editor and its preview, without the write buttons;
// every write answers 403, the role checked before anything else.
func TestDesignEditorRoles(t *testing.T) {
	t.Parallel()
	s := newEditorSite(t)
	s.member(s.acct, "viewer@editor.example", mail.RoleViewer, "viewer password 1")
	s.member(s.acct, "editor@editor.example", mail.RoleEditor, "editor password 1")
	js := document(t, welcome, nil)
	utr := s.newSend(s.acct, s.sender, "Spring news", mail.SendDraft, &js, nil)
	base := "/design/editor/single-send/" + utr

	v := s.browser()
	want(t, "viewer sign-in", v.signIn("viewer@editor.example", "viewer password 1"), 303)
	a := v.get(base)
	want(t, "viewer page", a, 200, "may look at the design but not change it", `<fieldset class="plain" disabled>`)
	for _, hidden := range []string{`id="save"`, `id="add-block"`, "Send a test", `id="insert-placeholder"`} {
		if strings.Contains(a.body, hidden) {
			t.Fatalf("the viewer sees %q", hidden)
		}
	}
	want(t, "viewer preview", v.postForm(base+"/preview", base, map[string]string{"mode": "design", "template_json": js}), 200, "Great to have you, Ada!")
	want(t, "viewer text", v.postForm(base+"/text", base, map[string]string{"mode": "design", "template_json": js}), 200, "Great to have you, Ada!")
	other := document(t, 2, nil)
	for _, p := range []string{base + "/save", base + "/test"} {
		want(t, "viewer "+p, v.postForm(p, base, map[string]string{"mode": "design", "template_json": other, "test_recipients": "v@editor.example"}),
			403, "Your role (viewer) may not do this.")
	}
	want(t, "viewer upload", v.upload(v.csrf(base), false, "a.png", pngOf(t, 4, 4)), 403, "may not do this")
	if j, _, _, _ := s.sendDesign(utr); j != js {
		t.Fatal("a viewer changed the design")
	}
	if len(s.tests) != 0 || s.smtp.Count() != 0 {
		t.Fatal("a viewer sent a test")
	}
	// An editor writes.
	e := s.browser()
	want(t, "editor sign-in", e.signIn("editor@editor.example", "editor password 1"), 303)
	want(t, "editor save", e.postForm(base+"/save", base, map[string]string{"mode": "design", "template_json": other}), 303)
	// Without the form's token, nobody writes.
	want(t, "no token", s.owner.postForm(base+"/save", "", map[string]string{"mode": "design", "template_json": js}), 403, "The form has expired.")
}

// The preview is the server's render of the posted design, with the
// sample contact's values or a contact's of the account, under its own
// CSP: the only console answer a page of this site may frame. The
// plain-text part is the send's (render's HTML to text).
func TestDesignPreview(t *testing.T) {
	t.Parallel()
	s := newEditorSite(t)
	js := document(t, welcome, nil)
	utr := s.newSend(s.acct, s.sender, "Spring news", mail.SendDraft, &js, nil)
	base := "/design/editor/single-send/" + utr
	typ := scan[int64](s, `INSERT INTO contact_types (user_id, name) VALUES ($1, 'All') RETURNING id`, s.acct)
	s.exec(`INSERT INTO contacts (user_id, contact_type_id, email, first_name, custom) VALUES ($1, $2, 'Grace@Example.com', '<b>Grace</b>', '{"company_name":"Navy"}')`, s.acct, typ)

	unsaved := document(t, welcome, func(d *design.Document) {
		insert(d, design.Block{Type: "text", Text: "Unsaved line for ((company_name))."})
	})
	a := s.owner.postForm(base+"/preview", base, map[string]string{"mode": "design", "template_json": unsaved})
	want(t, "preview", a, 200, "Great to have you, Ada!", "Unsaved line for Analytical Engines Ltd.", "Acme Shop", "Marienplatz 1",
		`href="http://console.test/unsubscribe/test"`, "Our news")
	if csp := a.header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'; img-src https: http: data:; style-src 'unsafe-inline'; frame-ancestors 'self'") ||
		strings.Contains(csp, "script-src") || a.header.Get("X-Frame-Options") != "SAMEORIGIN" || a.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("preview headers: %v", a.header)
	}
	a = s.owner.postForm(base+"/preview", base, map[string]string{"mode": "design", "template_json": unsaved, "preview_contact": " grace@example.com "})
	want(t, "a contact's preview", a, 200, "Great to have you, &lt;b&gt;Grace&lt;/b&gt;!", "Unsaved line for Navy.")
	want(t, "unknown contact", s.owner.postForm(base+"/preview", base, map[string]string{"mode": "design", "template_json": unsaved, "preview_contact": "nobody@example.com"}),
		422, "The account has no contact with this address.")
	a = s.owner.postForm(base+"/preview", base, map[string]string{"mode": "design", "template_json": `{"version":1,"name":"<script>alert(1)</script>"}`})
	want(t, "refused preview", a, 422, "The preview is not shown", "The template json is not a valid design: width 0, want 320 to 600.")
	if a.header.Get("X-Frame-Options") != "SAMEORIGIN" {
		t.Fatal("a refused preview cannot show in the frame")
	}
	a = s.owner.postForm(base+"/preview", base, map[string]string{"mode": "code", "template_html": `<p>Hi ((first_name))</p><script>alert(1)</script>`})
	want(t, "code preview", a, 200, "<p>Hi Ada</p>")
	if !strings.Contains(a.header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatal("the code preview runs under no CSP")
	}

	a = s.owner.postForm(base+"/text", base, map[string]string{"mode": "design", "template_json": unsaved})
	want(t, "text part", a, 200, "Great to have you, Ada!", "Unsaved line for Analytical Engines Ltd.", "Go to your dashboard")
	if a.header.Get("Content-Type") != "text/plain; charset=utf-8" || strings.Contains(a.body, "<p") {
		t.Fatalf("text part: %v\n%s", a.header, a.body)
	}
	want(t, "text of a refused design", s.owner.postForm(base+"/text", base, map[string]string{"mode": "design", "template_json": "{"}), 422,
		"The template json is not a valid design: unexpected EOF.")
}

// pngOf is a w×h PNG of noise (which does not compress).
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(r.UintN(256))
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// bombPNG is a PNG whose header claims w×h pixels over a few bytes.
func bombPNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6
	chunk("IHDR", ihdr)
	chunk("IDAT", make([]byte, 64))
	chunk("IEND", nil)
	return b.Bytes()
}

// Uploads: a PNG is stored under its content's key and served at
// /media/{key}; the token comes in the header or a csrf field before the
// file, whose body the upload route's own limit (above the forms' 1 MB)
// lets through; SVG, text, an oversized file and a pixel bomb are refused
// with media's messages; without a token nothing is stored.
func TestMediaUpload(t *testing.T) {
	t.Parallel()
	s := newEditorSite(t)
	js := document(t, welcome, nil)
	base := "/design/editor/single-send/" + s.newSend(s.acct, s.sender, "Spring news", mail.SendDraft, &js, nil)
	token := s.owner.csrf(base)

	img := pngOf(t, 120, 80)
	a := s.owner.upload(token, false, `<img src=x onerror=alert(1)>.png`, img)
	var got struct {
		URL, Key, Name string
		Width, Height  int
	}
	if a.status != 200 || json.Unmarshal([]byte(a.body), &got) != nil {
		t.Fatalf("upload: %d %s", a.status, a.body)
	}
	if !strings.HasPrefix(got.URL, "http://console.test/media/") || !strings.HasSuffix(got.URL, ".png") || got.Width != 120 || got.Height != 80 ||
		got.Name != "<img src=x onerror=alert(1)>" || strings.Contains(a.body, "<img") {
		t.Fatalf("upload answer %s", a.body)
	}
	// A right-to-left override or a zero-width character in the name does
	// not reach the suggested alt text.
	if a := s.owner.upload(token, false, "C:\\photos\\\u202egnp.exe\u200b.png", img); a.status != 200 || !strings.Contains(a.body, `"name":"gnp.exe"`) {
		t.Fatalf("format characters: %d %s", a.status, a.body)
	}
	served := s.browser().get("/media/" + got.Key)
	if served.status != 200 || served.body != string(img) || served.header.Get("Content-Type") != "image/png" {
		t.Fatalf("served: %d %v", served.status, served.header)
	}
	ev, _ := s.d.AuditEvents(context.Background(), s.acct, 0, 1)
	if len(ev) != 1 || ev[0].Action != "uploaded an image" || ev[0].Target != got.Key {
		t.Fatalf("audit: %+v", ev)
	}

	// 4.4 MB: over the forms' 1 MB, the token in a field the CSRF check
	// reads from the parsed form.
	big := pngOf(t, 1100, 1000)
	if len(big) < 4<<20 || len(big) > media.DefaultMaxBytes {
		t.Fatalf("%d bytes", len(big))
	}
	if a := s.owner.upload(token, true, "big.png", big); a.status != 200 || !strings.Contains(a.body, `"width":1100`) {
		t.Fatalf("big upload: %d %.200s", a.status, a.body)
	}
	// The account's 5 MB quota: the same image again is not counted twice;
	// a new one that does not fit is refused and not stored.
	if a := s.owner.upload(token, true, "big again.png", big); a.status != 200 {
		t.Fatalf("the same image again: %d %.200s", a.status, a.body)
	}
	over := pngOf(t, 600, 600)
	want(t, "over quota", s.owner.upload(token, false, "over.png", over), 422, `{"errors":{"file":["The account's images take `+
		console.ApproxBytes(int64(len(img)+len(big)))+` of its 5 MB: this one does not fit. Reuse an uploaded image by its address."]}}`)
	if n := scan[int64](s, "SELECT count(*) FROM media_uploads WHERE user_id = $1", s.acct); n != 2 {
		t.Fatalf("%d uploads recorded", n)
	}

	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>`)
	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"x.svg", svg, "The file must be a PNG, JPEG, GIF or WebP image."},
		{"x.png", []byte("just text, called a PNG"), "The file must be a PNG, JPEG, GIF or WebP image."},
		{"bomb.png", bombPNG(100000, 100000), "The image must be at most 4000 pixels wide and high."},
		{"wide.png", bombPNG(4000, 4001), "The image must be at most 4000 pixels wide and high."},
		{"huge.png", append(pngOf(t, 8, 8), make([]byte, media.DefaultMaxBytes)...), "The image must be at most 5 MB."},
		{"huger.png", append(pngOf(t, 8, 8), make([]byte, 8<<20)...), "The image must be at most 5 MB."},
		{"cut.png", img[:len(img)/2], "The image is damaged or incomplete."},
		{"empty.png", nil, "The file is empty."},
	} {
		a := s.owner.upload(token, false, tc.name, tc.data)
		want(t, tc.name, a, 422, `{"errors":{"file":["`+tc.msg+`"]}}`)
		if a.header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Fatalf("%s: %v", tc.name, a.header)
		}
	}
	want(t, "no token", s.owner.upload("", false, "a.png", pngOf(t, 3, 3)), 403, "The form has expired.")
	want(t, "wrong token", s.owner.upload(strings.Repeat("x", 43), false, "a.png", pngOf(t, 3, 3)), 403)
	want(t, "signed out", s.browser().upload(token, false, "a.png", pngOf(t, 3, 3)), 303)
	// Two stored: the first and the big one.
	n := 0
	for _, data := range [][]byte{img, big, pngOf(t, 3, 3), svg, over} {
		if i, err := media.Check(bytes.NewReader(data), media.Limits{}); err == nil {
			if o, err := s.store.Open(context.Background(), i.Key); err == nil {
				o.Close()
				n++
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d images stored, want 2", n)
	}
}

// A test mail: the posted design with the preview's contact's values, to
// each address, through the worker's task into a real SMTP server; no
// deliveries row or event, the send untouched. Too many addresses, a bad
// one and an unverified sender are refused with the API's messages.
func TestDesignTestSend(t *testing.T) {
	t.Parallel()
	s := newEditorSite(t)
	js := document(t, welcome, nil)
	utr := s.newSend(s.acct, s.sender, "Spring news", mail.SendDraft, &js, nil)
	base := "/design/editor/single-send/" + utr
	unsaved := document(t, welcome, func(d *design.Document) {
		insert(d, design.Block{Type: "text", Text: "Only in the test."})
	})
	a := s.owner.postForm(base+"/test", base, map[string]string{"mode": "design", "template_json": unsaved,
		"test_recipients": "me@editor.example,\nboss@editor.example"})
	want(t, "test", a, 200, "A test mail is on its way to me@editor.example, boss@editor.example.", `data-dirty="true"`, "Only in the test.")
	if !s.smtp.Wait(2, 5*time.Second) {
		t.Fatalf("%d mails", s.smtp.Count())
	}
	for _, m := range s.smtp.Messages() {
		decoded, _ := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(m.Data)))
		body := string(decoded)
		if !strings.Contains(body, "Subject: [Test] Hello Ada") || !strings.Contains(body, "Only in the test.") ||
			!strings.Contains(body, "Great to have you, Ada!") || strings.Contains(body, "List-Unsubscribe") {
			t.Fatalf("mail to %v:\n%.2000s", m.To, body)
		}
	}
	if n := scan[int64](s, `SELECT (SELECT count(*) FROM deliveries) + (SELECT count(*) FROM events WHERE user_id = $1) + (SELECT count(*) FROM design_tests)`, s.acct); n != 0 {
		t.Fatalf("%d rows counted", n)
	}
	if j, _, st, _ := s.sendDesign(utr); j != js || st != mail.SendDraft {
		t.Fatal("a test changed the send")
	}
	ev, _ := s.d.AuditEvents(context.Background(), s.acct, 0, 1)
	if len(ev) != 1 || ev[0].Action != "sent a test mail of" || ev[0].Target != "Spring news" {
		t.Fatalf("audit: %+v", ev)
	}

	// The account's global unsubscribes and bounces get no test mail; a
	// group's unsubscribe, another account's bounce do not stop it.
	for _, q := range []string{`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		VALUES ($1, gen_random_uuid()::text, 'Tests', 'Tests', 1)`,
		`INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address) VALUES ($1, NULL, 'gone@editor.example'),
		($1, (SELECT max(id) FROM unsubscribe_groups WHERE user_id = $1), 'news-only@editor.example')`,
		`INSERT INTO bounces (user_id, email_lc) VALUES ($1, 'hard@editor.example'), ($1 + 1000000, 'me@editor.example')`} {
		if _, err := s.d.Pool.Exec(context.Background(), q, s.acct); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ to, msg string }{
		{"a@x.example,b@x.example,c@x.example,d@x.example,e@x.example,f@x.example", "The test recipients may not have more than 5 addresses."},
		{"<script>@x", `The test recipients &#34;&lt;script&gt;@x&#34; is not a valid email address.`},
		{"", "The test recipients field is required."},
		{"me@editor.example, Gone@Editor.example, hard@editor.example, news-only@editor.example",
			"Suppressed (unsubscribed from all mail or bounced), so no test mail goes to: Gone@Editor.example, hard@editor.example."},
	} {
		want(t, tc.to, s.owner.postForm(base+"/test", base, map[string]string{"mode": "design", "template_json": js, "test_recipients": tc.to}), 422, tc.msg)
	}
	unverified := s.newSend(s.acct, s.newSender(s.acct, false), "Unverified", mail.SendDraft, &js, nil)
	ub := "/design/editor/single-send/" + unverified
	want(t, "unverified sender", s.owner.postForm(ub+"/test", ub, map[string]string{"mode": "design", "template_json": js, "test_recipients": "me@editor.example"}),
		422, "The selected sender is not verified.")
	want(t, "invalid design", s.owner.postForm(base+"/test", base, map[string]string{"mode": "design", "template_json": "{}", "test_recipients": "me@editor.example"}),
		422, "The template json is not a valid design: version 0, want 1.")
	if len(s.tests) != 1 || s.smtp.Count() != 2 {
		t.Fatalf("%d tests queued, %d mails", len(s.tests), s.smtp.Count())
	}
}

// Every text a user gives (a send's name and subject, block texts, an
// image's alt text from a file name, a colour, the document's name) comes
// back escaped on the editor page, in its fields, its <template>s and its
// messages.
func TestDesignEditorEscapes(t *testing.T) {
	t.Parallel()
	s := newEditorSite(t)
	evil := `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
	js := document(t, welcome, func(d *design.Document) {
		d.Name = evil
		d.Blocks[2].Text = evil
		insert(d, design.Block{Type: "image", Src: "https://acme.example/a.png", Alt: evil, URL: evil})
		insert(d, design.Block{Type: "totals", Rows: []design.Item{{Label: evil, Value: evil, Strong: true}}})
	})
	utr := s.newSend(s.acct, s.sender, evil, mail.SendDraft, &js, nil)
	s.exec(`UPDATE single_sends SET subject = $1, preheader = $1 WHERE utr = $2::uuid`, evil, utr)
	base := "/design/editor/single-send/" + utr
	pages := []answer{s.owner.get(base), s.owner.get(base + "?mode=code"),
		s.owner.postForm(base+"/save", base, map[string]string{"mode": "design", "template_json": strings.Replace(js, `"version":1`, `"version":1,"x":"`+strings.ReplaceAll(evil, `"`, `\"`)+`"`, 1)})}
	for i, a := range pages {
		if a.status != 200 && a.status != 422 {
			t.Fatalf("page %d: %d", i, a.status)
		}
		if strings.Contains(a.body, "<script>alert") || strings.Contains(a.body, "<img src=x") {
			t.Fatalf("page %d renders markup from stored text:\n%s", i, a.body)
		}
	}
	want(t, "escaped", pages[0], 200, "&lt;script&gt;alert(1)&lt;/script&gt;")
}

// Image checks decode whole images, so a process runs two at once: an
// upload waits while both slots are taken, then goes through.
func TestUploadsWaitForADecodeSlot(t *testing.T) {
	t.Parallel()
	s := newEditorSite(t)
	release := console.HoldDecodes(s.con)
	token := s.owner.csrf("/design/editor/single-send/" + s.newSend(s.acct, s.sender, "Slots", 0, nil, nil))
	done := make(chan answer, 1)
	go func() { done <- s.owner.upload(token, false, "a.png", pngOf(t, 4, 4)) }()
	select {
	case a := <-done:
		t.Fatalf("the upload answered %d while every decode slot was taken", a.status)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if a := <-done; a.status != 200 {
		t.Fatalf("after the slots freed: %d %s", a.status, a.body)
	}
}
