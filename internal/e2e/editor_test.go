package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"github.com/mailroom/mailroom/internal/console"
	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/media"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// editorSite is the real router with the console, its image store served
// at /media/, and test mails sent by the worker's handler into a real SMTP
// server, on a listener whose address is the site's PUBLIC_URL.
func editorSite(t *testing.T) (*postgres.DB, *httptest.Server, *smtptest.Server) {
	t.Helper()
	d := testdb.New(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + l.Addr().String()
	store, err := media.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mails := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: mails.Addr, Size: 1, Timeout: 5 * time.Second})
	t.Cleanup(func() { pool.Close() })
	send := jobs.DesignTestSend(jobs.Deps{DB: d, Log: quiet, Transport: pool, PublicURL: public})
	con, err := console.New(console.Config{PublicURL: public, BcryptCost: bcrypt.MinCost}, console.Deps{DB: d, Log: quiet, Media: store,
		DesignTest: func(ctx context.Context, id int64) error { return send(ctx, jobs.NewDesignTestSendTask(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20, PublicURL: public}, httpapi.Deps{DB: d, Geo: testdb.Geo(t), Log: quiet,
		Console: con, ConsolePaths: console.Prefixes, Media: media.NewHandler(store, quiet)})
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return d, srv, mails
}

// until evaluates expr (a boolean) in the tab until it is true, a minute
// at most: the page's work (a fetch, a frame loading) has no event of its
// own the test can wait on.
func until(t *testing.T, tab context.Context, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, time.Minute)
	defer cancel()
	// Chromium's own wait: a promise resolved on an animation frame once
	// expr holds, awaited in one call.
	js := `new Promise(resolve => { const check = () => { try { if (` + expr + `) { resolve(true); return; } } catch (e) {} requestAnimationFrame(check); }; check(); })`
	for {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js, chromedp.EvalAwaitPromise))
		switch {
		case err == nil:
			return
		case ctx.Err() != nil:
			t.Fatalf("waiting for %s: %v", expr, err)
		}
		// The page navigated while the promise waited: ask the new one.
	}
}

// blockTypes are the types of the editor's blocks, top to bottom.
// drag presses the mouse on the element from, moves it in steps to the
// upper part of the element to, and lets go there.
func drag(t *testing.T, tab context.Context, from, to string) {
	t.Helper()
	run(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector(`+strconv.Quote(from)+`).scrollIntoView({block: "center"})`))
	p := value(t, tab, chromedp.Evaluate[[]float64](`(() => { const a = document.querySelector(`+strconv.Quote(from)+`).getBoundingClientRect(),
		b = document.querySelector(`+strconv.Quote(to)+`).getBoundingClientRect();
		return [a.x + a.width / 2, a.y + a.height / 2, b.x + b.width / 2, b.y + Math.min(8, b.height / 4)] })()`))
	held := func(e *input.DispatchMouseEventParams) { e.Button, e.Buttons = input.MouseButtonLeft, 1 }
	steps := []chromedp.Action[chromedp.Void]{chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, p[0], p[1]),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, p[0], p[1], chromedp.ButtonLeft, chromedp.ClickCount(1))}
	for i := 1; i <= 10; i++ {
		f := float64(i) / 10
		steps = append(steps, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, p[0]+(p[2]-p[0])*f, p[1]+(p[3]-p[1])*f, held),
			chromedp.Sleep(30*time.Millisecond))
	}
	steps = append(steps, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, p[2], p[3], chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.Sleep(200*time.Millisecond)) // the drop's animation
	run(t, tab, steps...)
}

func blockTypes(t *testing.T, tab context.Context) string {
	t.Helper()
	return value(t, tab, chromedp.Evaluate[string](`[...document.querySelectorAll("#blocks > li")].map(li => li.dataset.type).join(",")`))
}

// The design editor in Chromium: sign in, open a draft send's editor, add
// an image (uploaded) and a button, move the button up by keyboard and the
// image by dragging it with the mouse, save,
// and find the document and its built HTML stored; the preview frame and
// the text part follow the unsaved document; a test mail reaches a real
// SMTP server with the image and the button; code mode opens the HTML in
// CodeMirror. Nothing is refused by the CSP on the way. With
// UPDATE_SCREENSHOTS=1 it writes docs/console/editor-*.png.
func TestDesignEditorInBrowser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tab := browser(t)
	problems := watchConsole(t, tab)
	d, srv, mails := editorSite(t)

	acct, _, err := d.CreateAccount(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte("correct horse battery"), bcrypt.MinCost)
	if _, _, err := d.CreateOwner(ctx, acct, "owner@e2e-editor.example", string(hash)); err != nil {
		t.Fatal(err)
	}
	var sender int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'Acme Shop', 'news@acme.example', 'help@acme.example', 276, 'Marienplatz 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, acct).Scan(&sender); err != nil {
		t.Fatal(err)
	}
	welcome := design.Templates()[3]
	var utr string
	if err := d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, template_json, sender_id, unsubscribe_group_id,
			single_send_name, subject, preheader, recipient_id, exclude_specific_recipient_id, status, due_at, unique_open_token)
		VALUES ($1, gen_random_uuid(), 4, $2, $3, 0, 'Spring welcome', 'Hello ((first_name))', 'Your first week', '[]', '[]', 0, now(), '{}')
		RETURNING utr::text`, acct, welcome.JSON, sender).Scan(&utr); err != nil {
		t.Fatal(err)
	}
	base := srv.URL + "/design/editor/single-send/" + utr

	// The editor asks for a sign-in first, and comes back.
	run(t, tab, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`input[name="email"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), "owner@e2e-editor.example"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "correct horse battery"),
		chromedp.Submit(chromedp.CSS(`input[name="password"]`)), chromedp.WaitVisible(chromedp.CSS("#blocks")))
	until(t, tab, `document.getElementById("text-part").textContent.includes("Great to have you, Ada!")`)
	if got := blockTypes(t, tab); got != "header,label,heading,text,heading,steps,button,divider,text,text,footer" {
		t.Fatalf("blocks %s", got)
	}
	// The page's script reads the document back as the server wrote it.
	var roundTrip design.Document
	if err := json.Unmarshal([]byte(value(t, tab, chromedp.Evaluate[string](`document.getElementById("template-json").value`))), &roundTrip); err != nil {
		t.Fatal(err)
	}
	if stored, _ := design.ParseDocument([]byte(welcome.JSON)); !reflect.DeepEqual(*stored, roundTrip) {
		t.Fatalf("the editor's document differs from the stored one:\n%+v\n%+v", roundTrip, *stored)
	}
	// The preview frame holds the server's render.
	previewShows(t, tab, base+"/preview", "Great to have you, Ada!")

	// An image block, its file uploaded.
	logo := filepath.Join(t.TempDir(), "spring logo.png")
	pic := image.NewNRGBA(image.Rect(0, 0, 240, 120))
	for x := range 240 {
		for y := range 120 {
			pic.Set(x, y, color.NRGBA{R: uint8(x), G: 118, B: uint8(y * 2), A: 255})
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, pic)
	if err := os.WriteFile(logo, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, tab, chromedp.SetValue(chromedp.CSS("#add-type"), "image"), chromedp.Click(chromedp.CSS("#add-block")),
		chromedp.SetUploadFiles(chromedp.CSS(`#blocks > li[data-type="image"] input[type="file"]`), []string{logo}))
	until(t, tab, `document.querySelector('#blocks > li[data-type="image"] [data-key="src"]').value.startsWith(location.origin + "/media/")`)
	if got := value(t, tab, chromedp.Evaluate[string](`(() => { const li = document.querySelector('#blocks > li[data-type="image"]');
		return ["alt", "width", "height"].map(k => li.querySelector('[data-key="' + k + '"]').value).join("|") + "|" + li.querySelector(".upload-status").textContent })()`)); got != "spring logo|240|120|Uploaded: 240 × 120 pixels." {
		t.Fatalf("image block after the upload: %q", got)
	}
	// A button, its text typed.
	run(t, tab, chromedp.SetValue(chromedp.CSS("#add-type"), "button"), chromedp.Click(chromedp.CSS("#add-block")),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#blocks > li[data-type="button"]:nth-last-child(2) [data-key="text"]').select()`),
		chromedp.SendKeys(chromedp.CSS(`#blocks > li[data-type="button"]:nth-last-child(2) [data-key="text"]`), "Shop the spring sale"))
	if got := blockTypes(t, tab); got != "header,label,heading,text,heading,steps,button,divider,text,text,image,button,footer" {
		t.Fatalf("after adding: %s", got)
	}
	// The new button moves up twice by keyboard: above the image, then
	// above the last text; focus stays on its button.
	up := chromedp.CSS(`#blocks > li:nth-child(12) [data-move="up"]`)
	run(t, tab, chromedp.Focus(up), chromedp.KeyEvent("\r"))
	run(t, tab, chromedp.KeyEvent("\r"))
	if got := blockTypes(t, tab); got != "header,label,heading,text,heading,steps,button,divider,text,button,text,image,footer" {
		t.Fatalf("after moving: %s", got)
	}
	if got := value(t, tab, chromedp.Evaluate[string](`document.activeElement.getAttribute("aria-label") + " / " + document.getElementById("announce").textContent`)); got != "Move block 10 (Button) up / Button moved to place 10 of 13." {
		until(t, tab, `document.getElementById("announce").textContent === "Button moved to place 10 of 13."`)
		if got := value(t, tab, chromedp.Evaluate[string](`document.activeElement.getAttribute("aria-label")`)); got != "Move block 10 (Button) up" {
			t.Fatalf("focus after moving: %q", got)
		}
	}
	// The image block is dragged by its handle above the text before it.
	drag(t, tab, `#blocks > li:nth-child(12) .drag`, `#blocks > li:nth-child(11)`)
	if got := blockTypes(t, tab); got != "header,label,heading,text,heading,steps,button,divider,text,button,image,text,footer" {
		t.Fatalf("after dragging: %s", got)
	}
	// The unsaved document is what the preview's text part shows.
	until(t, tab, `document.getElementById("text-part").textContent.includes("Shop the spring sale")`)
	previewShows(t, tab, base+"/preview", "Shop the spring sale")

	// Phone width for the frame.
	run(t, tab, chromedp.Click(chromedp.CSS(`[data-width="mobile"]`)))
	if w := value(t, tab, chromedp.Evaluate[float64](`document.getElementById("preview").getBoundingClientRect().width`)); w != 390 {
		t.Fatalf("phone preview %v px wide", w)
	}
	run(t, tab, chromedp.Click(chromedp.CSS(`[data-width="desktop"]`)))
	run(t, tab, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur(); window.scrollTo(0, 0)`))
	screenshots(t, tab, "editor-design")

	// Saved: the document as the page holds it, the HTML Build makes of it.
	// The notice is read in the page, in one step: the node a query finds
	// may be replaced before a second step reads it.
	run(t, tab, chromedp.Click(chromedp.CSS("#save")))
	until(t, tab, `document.querySelector(".notice") && document.querySelector(".notice").textContent.trim() === "The design is saved."`)
	var js, html string
	var status int16
	if err := d.Pool.QueryRow(ctx, "SELECT template_json, template_html, status FROM single_sends WHERE utr = $1::uuid", utr).Scan(&js, &html, &status); err != nil {
		t.Fatal(err)
	}
	doc, err := design.ParseDocument([]byte(js))
	if err != nil {
		t.Fatalf("stored document: %v", err)
	}
	built, _ := design.Build([]byte(js))
	img, btn := doc.Blocks[10], doc.Blocks[9]
	if html != built || status != mail.SendDraft || img.Type != "image" || !strings.HasPrefix(img.Src, srv.URL+"/media/") || img.Alt != "spring logo" ||
		img.Width != 240 || img.Height != 120 || btn.Type != "button" || btn.Text != "Shop the spring sale" || btn.URL != "https://example.com" {
		t.Fatalf("stored: status %d, image %+v, button %+v, html built: %v", status, img, btn, html == built)
	}
	// The saved page lists the document's blocks as its script renders
	// them: waited for, whole.
	until(t, tab, `document.querySelectorAll("#blocks > li").length === 13`)
	if got := blockTypes(t, tab); got != "header,label,heading,text,heading,steps,button,divider,text,button,image,text,footer" {
		t.Fatalf("reopened: %s", got)
	}
	// The stored image is served where the mail points.
	res, err := http.Get(img.Src)
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(served, buf.Bytes()) {
		t.Fatalf("image at %s: %d", img.Src, res.StatusCode)
	}

	// A test mail, read from the SMTP server.
	run(t, tab, chromedp.Click(chromedp.CSS("#test > summary")),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("test-recipients").select()`),
		chromedp.SendKeys(chromedp.CSS("#test-recipients"), "me@e2e-editor.example"),
		chromedp.Click(chromedp.CSS("#send-test")))
	until(t, tab, `(document.querySelector(".notice") || {}).textContent === "A test mail is on its way to me@e2e-editor.example."`)
	if !mails.Wait(1, 10*time.Second) {
		t.Fatal("no test mail")
	}
	m := mails.Messages()[0]
	mailHTML, header := htmlAndHeader(t, m.Data)
	if m.To[0] != "me@e2e-editor.example" || header.Get("Subject") != "[Test] Hello Ada" || !strings.Contains(mailHTML, `src="`+img.Src+`"`) ||
		!strings.Contains(mailHTML, "Shop the spring sale") || !strings.Contains(mailHTML, "Great to have you, Ada!") {
		t.Fatalf("test mail to %v, %q:\n%s", m.To, header.Get("Subject"), mailHTML)
	}
	var counted int64
	if err := d.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM deliveries WHERE user_id = s.user_id) + s.triggered + s.delivered
		FROM single_sends s WHERE s.utr = $1::uuid`, utr).Scan(&counted); err != nil || counted != 0 {
		t.Fatalf("the test counted: %d %v", counted, err)
	}

	// Code mode: the saved HTML in CodeMirror, styled under the page's nonce;
	// a placeholder goes in at the cursor.
	run(t, tab, chromedp.Navigate(base+"?mode=code"), chromedp.WaitVisible(chromedp.CSS(".cm-editor")))
	// CodeMirror draws the lines in view; the textarea it keeps holds all.
	until(t, tab, `document.querySelector(".cm-content").textContent.includes("<!DOCTYPE html>") &&
		document.getElementById("template-html").value.includes("Shop the spring sale")`)
	if got := value(t, tab, chromedp.Evaluate[string](`getComputedStyle(document.querySelector(".cm-editor")).display`)); got != "flex" {
		t.Fatalf("CodeMirror is not styled (display %q): its styles were refused", got)
	}
	run(t, tab, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur(); window.scrollTo(0, 0)`))
	screenshots(t, tab, "editor-code")
	run(t, tab, chromedp.Click(chromedp.CSS(".cm-content")), chromedp.KeyEvent("\ue011"), // Home: the line's start
		chromedp.SetValue(chromedp.CSS("#placeholder"), "first_name"), chromedp.Click(chromedp.CSS("#insert-placeholder")))
	until(t, tab, `document.getElementById("template-html").value.startsWith("((first_name))<!DOCTYPE html>")`)

	if p := problems(); len(p) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
	}
}

// previewShows waits until the page's preview frame shows a document
// from url whose text holds want. The frame is sandboxed (an opaque
// origin, a target of its own), so the page cannot read it: the test
// attaches to its target, polled for, as nothing announces it.
func previewShows(t *testing.T, tab context.Context, url, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last string
	for time.Now().Before(deadline) {
		targets, err := chromedp.Targets(tab)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range targets {
			if ti.Type != "iframe" || ti.URL != url {
				continue
			}
			frame, cancel := chromedp.NewContext(tab, chromedp.WithTargetID(ti.TargetID), chromedp.WithDetachOnCancel())
			ctx, stop := context.WithTimeout(frame, 5*time.Second)
			last, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			stop()
			cancel()
			if err == nil && strings.Contains(last, want) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the preview frame does not show %q; it shows:\n%s", want, last)
}

// htmlAndHeader is the decoded HTML part of a mail, and its header.
func htmlAndHeader(t *testing.T, data []byte) (string, netmail.Header) {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := r.NextRawPart()
		if err != nil {
			t.Fatalf("no html part: %v", err)
		}
		if strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			b, _ := io.ReadAll(quotedprintable.NewReader(p))
			return string(b), msg.Header
		}
	}
}

// Every catalogue template, opened in the editor, is read back by the
// page's script as the same document: what the fields show is all there
// is, so saving without a change changes nothing.
func TestDesignEditorKeepsEveryTemplate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tab := browser(t)
	problems := watchConsole(t, tab)
	d, srv, _ := editorSite(t)
	acct, _, err := d.CreateAccount(ctx, "Catalogue")
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte("correct horse battery"), bcrypt.MinCost)
	if _, _, err := d.CreateOwner(ctx, acct, "owner@e2e-catalogue.example", string(hash)); err != nil {
		t.Fatal(err)
	}
	run(t, tab, chromedp.Navigate(srv.URL+"/signin"), chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), "owner@e2e-catalogue.example"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "correct horse battery"), chromedp.Submit(chromedp.CSS(`input[name="password"]`)),
		chromedp.WaitVisible(chromedp.CSS(".who-name"))) // any signed-in page (a sign-in lands on /sends)
	for _, tpl := range design.Templates() {
		var utr string
		if err := d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, template_json, sender_id, unsubscribe_group_id,
				single_send_name, subject, preheader, recipient_id, exclude_specific_recipient_id, status, due_at, unique_open_token)
			VALUES ($1, gen_random_uuid(), $2, $3, 0, 0, $4, 'Hi', '', '[]', '[]', 0, now(), '{}') RETURNING utr::text`,
			acct, tpl.ID, tpl.JSON, tpl.Name).Scan(&utr); err != nil {
			t.Fatal(err)
		}
		run(t, tab, chromedp.Navigate(srv.URL+"/design/editor/single-send/"+utr), chromedp.WaitVisible(chromedp.CSS("#blocks")))
		// The script has read the fields once the text part is asked for.
		until(t, tab, `document.getElementById("text-part").textContent !== ""`)
		var got design.Document
		if err := json.Unmarshal([]byte(value(t, tab, chromedp.Evaluate[string](`document.getElementById("template-json").value`))), &got); err != nil {
			t.Fatal(err)
		}
		want, _ := design.ParseDocument([]byte(tpl.JSON))
		if !reflect.DeepEqual(*want, got) {
			t.Errorf("%s: the editor reads\n%+v\nwant\n%+v", tpl.Name, got, *want)
		}
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
	}
}
