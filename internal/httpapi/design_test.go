package httpapi_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/design"
)

// jsonString is s as a JSON string, HTML unescaped like the API writes it.
func jsonString(t *testing.T, s string) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// The catalogue: ids 1..5 in order, the blank one first, the codes as
// the design package holds them, null timestamps; the same for any
// account; keys required.
func TestDesignTemplates(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	ts := design.Templates()
	names := []string{"Blank", "Newsletter", "Announcement", "Welcome", "Order confirmation"}
	previews := []string{"blank.png", "newsletter.png", "announcement.png", "welcome.png", "order-confirmation.png"}
	if len(ts) != len(names) {
		t.Fatalf("%d templates, want %d", len(ts), len(names))
	}
	var entries []string
	for i, tp := range ts {
		blank := "0"
		if i == 0 {
			blank = "1"
		}
		entries = append(entries, `{"id":`+strconv.Itoa(i+1)+`,"template_name":"`+names[i]+`","preview_image":"`+previews[i]+
			`","json_code":`+jsonString(t, tp.JSON)+`,"html_code":`+jsonString(t, tp.HTML)+
			`,"is_blank":`+blank+`,"created_at":null,"updated_at":null}`)
	}
	want := `{"status":"success","message":{"templates":[` + strings.Join(entries, ",") + `]}}`
	a.do(req{method: "GET", path: "/api/get-design/template", acct: &acct}).expect(t, 200, want)
	other := a.account()
	a.do(req{method: "GET", path: "/api/get-design/template", acct: &other}).expect(t, 200, want)

	// The blank entry field by field, as a client decodes it.
	r := a.do(req{method: "GET", path: "/api/get-design/template", acct: &acct})
	var body struct {
		Message struct {
			Templates []map[string]any `json:"templates"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatal(err)
	}
	b := body.Message.Templates[0]
	if len(b) != 8 || b["id"] != 1.0 || b["template_name"] != "Blank" || b["preview_image"] != "blank.png" ||
		b["is_blank"] != 1.0 || b["created_at"] != nil || b["updated_at"] != nil {
		t.Fatalf("blank entry %v", b)
	}
	html, _ := b["html_code"].(string)
	for _, s := range []string{"<!DOCTYPE html>", `href="((unsubscribe_preferences))"`, "((sender_name))", "((sender_address))"} {
		if !strings.Contains(html, s) {
			t.Errorf("blank html_code lacks %s", s)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(b["json_code"].(string)), &doc); err != nil || doc["name"] != "Blank" || doc["version"] != 1.0 {
		t.Errorf("blank json_code %v (%v)", doc, err)
	}

	a.do(req{method: "GET", path: "/api/get-design/template"}).expect(t, 401,
		`{"status":"failed","errors":{"PublicKey":["The public key field is required."],"SecretKey":["The secret key field is required."]}}`)
}

// Each preview_image is served without keys at /design/previews/{file}:
// the embedded PNG, cached a week, revalidated by ETag; any other name
// is the router's 404.
func TestDesignPreviews(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	for _, tp := range design.Templates() {
		want, _ := design.Preview(tp.Preview)
		r := a.do(req{method: "GET", path: "/design/previews/" + tp.Preview})
		if r.code != 200 || r.header.Get("Content-Type") != "image/png" || r.body != string(want) ||
			!strings.HasPrefix(r.body, "\x89PNG\r\n\x1a\n") {
			t.Fatalf("%s: %d %s, %d bytes", tp.Preview, r.code, r.header.Get("Content-Type"), len(r.body))
		}
		if cc := r.header.Get("Cache-Control"); cc != "public, max-age=604800" {
			t.Errorf("%s: Cache-Control %q", tp.Preview, cc)
		}
		if n := r.header.Get("Content-Length"); n != strconv.Itoa(len(want)) {
			t.Errorf("%s: Content-Length %s", tp.Preview, n)
		}
		etag := r.header.Get("ETag")
		if len(etag) < 10 {
			t.Fatalf("%s: ETag %q", tp.Preview, etag)
		}
		if r := a.do(req{method: "GET", path: "/design/previews/" + tp.Preview, header: map[string]string{"If-None-Match": etag}}); r.code != 304 || r.body != "" {
			t.Errorf("%s: If-None-Match answered %d", tp.Preview, r.code)
		}
	}
	for _, p := range []string{"/design/previews/nope.png", "/design/previews/blank.json", "/design/previews/blank.html",
		"/design/previews/blank", "/design/previews/BLANK.PNG", "/design/previews/../../go.mod",
		"/design/previews/..%2F..%2Fgo.mod", "/design/previews/..%2Fpreviews%2Fblank.png", "/design/previews/%2e%2e",
		"/design/previews/blank.png/x", "/design/previews/", "/design/previews", "/design/templates/blank.html"} {
		a.do(req{method: "GET", path: p}).expect(t, 404, `{"status":"failed","errors":"Not Found"}`)
	}
}
