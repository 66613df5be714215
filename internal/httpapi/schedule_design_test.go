package httpapi_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/media"
	"github.com/mailroom/mailroom/internal/testdb"
)

// scheduleUTR is the utr of the one schedule of automation id.
func scheduleUTR(t *testing.T, automation int64) string {
	t.Helper()
	var utr string
	if err := testdb.New(t).Pool.QueryRow(context.Background(),
		"SELECT utr::text FROM automation_schedules WHERE automation_id = $1 AND deleted_at IS NULL", automation).Scan(&utr); err != nil {
		t.Fatal(err)
	}
	return utr
}

// storedDesign is a schedule's template_json (or "<null>") and
// template_html.
func storedDesign(t *testing.T, utr string) (string, string) {
	t.Helper()
	var js, html *string
	if err := testdb.New(t).Pool.QueryRow(context.Background(),
		"SELECT template_json, template_html FROM automation_schedules WHERE utr = $1::uuid", utr).Scan(&js, &html); err != nil {
		t.Fatal(err)
	}
	if js == nil {
		js = new("<null>")
	}
	return *js, *html
}

// POST /api/automations/schedule/design: a schedule takes a design
// document (its html built from it), or html alone; the document is checked
// as the console's editor checks it; another account's utr is a 404.
func TestScheduleDesign(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	autoUTR, autoID := f.createAutomation(t, f.automationForm())
	f.addSchedule(t, f.scheduleForm(autoUTR))
	utr := scheduleUTR(t, autoID)
	const path = "/api/automations/schedule/design"

	welcome := design.Templates()[3]
	if welcome.Name != "Welcome" {
		t.Fatalf("catalogue order: %q", welcome.Name)
	}
	f.a.do(req{method: "POST", path: path, acct: &f.acct, body: url.Values{"utr": {utr}, "template_json": {welcome.JSON}}}).
		expect(t, 200, `{"status":"success","message":"Design Saved"}`)
	js, html := storedDesign(t, utr)
	if js != welcome.JSON || html != welcome.HTML {
		t.Fatalf("stored json %.80q html %.80q: want the document and Build's html", js, html)
	}
	// The schedule list shows the design as saved.
	r := f.a.do(req{method: "GET", path: "/api/automations/schedule?utr=" + autoUTR, acct: &f.acct})
	if r.code != 200 {
		t.Fatalf("list: %d %s", r.code, r.body)
	}
	body := strings.NewReplacer(utr, "<utr>", publicURL, "<public_url>").Replace(r.body)
	body = regexp.MustCompile(`"(id|user_id|automation_id|sender_id)":\d+`).ReplaceAllString(body, `"$1":0`)
	golden(t, "schedule_design", body)

	// HTML alone: the document goes (the block editor no longer opens it).
	f.a.do(req{method: "POST", path: path, acct: &f.acct, body: jsonBody(`{"utr":"` + utr + `","template_html":"<p>Hi ((first_name))</p>"}`)}).
		expect(t, 200, `{"status":"success","message":"Design Saved"}`)
	if js, html := storedDesign(t, utr); js != "<null>" || html != "<p>Hi ((first_name))</p>" {
		t.Fatalf("html alone: %q %q", js, html)
	}

	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"empty", jsonBody(`{}`), `{"status":"failed","errors":{"utr":["The utr field is required."],` +
			`"template_json":["The template json field is required when template html is not present."]}}`},
		{"not JSON", url.Values{"utr": {utr}, "template_json": {"{nope"}}, `{"status":"failed","errors":{"template_json":` +
			`["The template json is not a valid design: invalid character 'n' looking for beginning of object key string."]}}`},
		{"no footer", url.Values{"utr": {utr}, "template_json": {`{"version":1,"name":"X","settings":{"width":600,"background":"#fff",` +
			`"content_background":"#fff","font_family":"Arial","text_color":"#000","heading_color":"#000","accent_color":"#000",` +
			`"muted_color":"#000","border_color":"#000"},"blocks":[{"type":"image","src":"javascript:alert(1)","alt":"x"}]}`}},
			`{"status":"failed","errors":{"template_json":["The template json is not a valid design: block 1 (image): ` +
				`src \"javascript:alert(1)\": want an absolute http or https URL."]}}`},
		{"unknown field", url.Values{"utr": {utr}, "template_json": {strings.Replace(welcome.JSON, `"version":1`, `"version":1,"script":"x"`, 1)}},
			`{"status":"failed","errors":{"template_json":["The template json is not a valid design: json: unknown field \"script\"."]}}`},
		{"both", url.Values{"utr": {utr}, "template_json": {welcome.JSON}, "template_html": {"<p>x</p>"}},
			`{"status":"failed","errors":{"template_html":["The template html field is prohibited when template json is present: the html is built from the design."]}}`},
		{"too large", url.Values{"utr": {utr}, "template_html": {strings.Repeat("x", 1<<20+1)}},
			`{"status":"failed","errors":{"template_html":["The template html may not be larger than 1048576 bytes."]}}`},
		{"fields before the record", url.Values{"utr": {"6f1c1a7e-0000-4000-8000-000000000000"}},
			`{"status":"failed","errors":{"template_json":["The template json field is required when template html is not present."]}}`},
	} {
		f.a.do(req{method: "POST", path: path, acct: &f.acct, body: tc.body}).expect(t, 422, tc.want)
	}
	if js, html := storedDesign(t, utr); js != "<null>" || html != "<p>Hi ((first_name))</p>" {
		t.Fatalf("a refused save changed the design: %q %q", js, html)
	}

	nf := `{"status":"failed","errors":"Record Not Found"}`
	intruder := f.a.account()
	for _, u := range []string{utr, autoUTR, "6f1c1a7e-0000-4000-8000-000000000000", "not-a-uuid"} {
		f.a.do(req{method: "POST", path: path, acct: &intruder, body: url.Values{"utr": {u}, "template_html": {"<p>mine</p>"}}}).expect(t, 404, nf)
	}
	f.a.do(req{method: "POST", path: path, acct: &f.acct, body: url.Values{"utr": {autoUTR}, "template_html": {"<p>x</p>"}}}).expect(t, 404, nf)
	// A deleted automation's schedule takes no design.
	f.a.do(req{method: "DELETE", path: "/api/automations/delete?utr=" + autoUTR, acct: &f.acct}).expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	f.a.do(req{method: "POST", path: path, acct: &f.acct, body: url.Values{"utr": {utr}, "template_html": {"<p>x</p>"}}}).expect(t, 404, nf)
	if _, html := storedDesign(t, utr); html != "<p>Hi ((first_name))</p>" {
		t.Fatalf("after refusals: %q", html)
	}
}

// A design whose mails can pass MAX_MAIL_BYTES is refused, the built
// html's size answered under template_json.
func TestScheduleDesignMailSize(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{MaxMailBytes: 30000})
	autoUTR, autoID := f.createAutomation(t, f.automationForm())
	f.addSchedule(t, f.scheduleForm(autoUTR))
	utr := scheduleUTR(t, autoID)
	r := f.a.do(req{method: "POST", path: "/api/automations/schedule/design", acct: &f.acct,
		body: url.Values{"utr": {utr}, "template_json": {design.Templates()[1].JSON}}})
	if r.code != 422 || !strings.Contains(r.body, `{"template_json":["The design's html may not make mails larger than 30000 bytes; with every placeholder at its longest value its mails take up to `) {
		t.Fatalf("%d %s", r.code, r.body)
	}
}

// With Deps.Media, GET and HEAD /media/{key} serve the store's images
// with their type and a year's caching; a malformed or unknown key is a
// 404.
func TestMediaRoute(t *testing.T) {
	t.Parallel()
	store, err := media.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 3)))
	img, err := media.Check(&buf, media.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := media.Put(context.Background(), store, img); err != nil {
		t.Fatal(err)
	}
	a := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20}, func(d *httpapi.Deps) { d.Media = media.NewHandler(store, nil) })
	for _, m := range []string{"GET", "HEAD"} {
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, httptest.NewRequest(m, "/media/"+img.Key, nil))
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/png" || rec.Header().Get("Cache-Control") != media.CacheControl ||
			(m == "GET" && !bytes.Equal(rec.Body.Bytes(), img.Data)) {
			t.Fatalf("%s: %d %v", m, rec.Code, rec.Header())
		}
	}
	for _, p := range []string{"/media/" + strings.Repeat("0", 64) + ".png", "/media/../go.mod", "/media/%2e%2e%2fgo.mod", "/media/"} {
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != 404 {
			t.Fatalf("%s: %d", p, rec.Code)
		}
	}
}
