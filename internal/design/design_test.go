package design_test

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/render"
)

// The catalogue: ids 1..N in order, id 1 (and only it) blank, every
// document in templates/ listed, names and previews unique.
func TestDesignCatalogue(t *testing.T) {
	ts := design.Templates()
	want := []string{"Blank", "Newsletter", "Announcement", "Welcome", "Order confirmation"}
	var names []string
	for i, tp := range ts {
		if tp.ID != int64(i+1) {
			t.Errorf("template %d has id %d", i, tp.ID)
		}
		if tp.Blank != (tp.ID == 1) {
			t.Errorf("%s: blank %v", tp.Name, tp.Blank)
		}
		names = append(names, tp.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	docs, _ := filepath.Glob("templates/*.json")
	pages, _ := filepath.Glob("templates/*.html")
	pngs, _ := filepath.Glob("previews/*.png")
	if len(docs) != len(ts) || len(pages) != len(ts) || len(pngs) != len(ts) {
		t.Fatalf("%d documents, %d pages, %d previews for %d templates", len(docs), len(pages), len(pngs), len(ts))
	}
	seen := map[string]bool{}
	for _, tp := range ts {
		if seen[tp.Preview] || !strings.HasSuffix(tp.Preview, ".png") || strings.ContainsAny(tp.Preview, `/\`) {
			t.Errorf("%s: preview %q", tp.Name, tp.Preview)
		}
		seen[tp.Preview] = true
	}
}

// slug is the file name a template's json, html and png share.
func slug(tp design.Template) string { return strings.TrimSuffix(tp.Preview, ".png") }

// The checked-in HTML is what Build makes of the document (go generate
// ./internal/design rewrites it), and the embedded files are the
// checked-in ones.
func TestDesignHTMLIsGenerated(t *testing.T) {
	for _, tp := range design.Templates() {
		src, err := os.ReadFile("templates/" + slug(tp) + ".json")
		if err != nil {
			t.Fatal(err)
		}
		html, err := design.Build(src)
		if err != nil {
			t.Fatalf("%s: %v", tp.Name, err)
		}
		disk, err := os.ReadFile("templates/" + slug(tp) + ".html")
		if err != nil {
			t.Fatal(err)
		}
		if html != string(disk) {
			t.Errorf("%s: templates/%s.html is not what Build makes: run go generate ./internal/design", tp.Name, slug(tp))
		}
		if tp.HTML != string(disk) {
			t.Errorf("%s: embedded HTML differs from the file", tp.Name)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, src); err != nil {
			t.Fatal(err)
		}
		if tp.JSON != compact.String() {
			t.Errorf("%s: json_code is not the compacted document", tp.Name)
		}
	}
}

// json_code is valid JSON, a version 1 document, and its name and every
// string of its blocks (texts, addresses, colours, paddings; not the
// block types) appear in html_code as Build escapes them. Settings a
// template never uses (the blank one's accent colour) are the editor's
// starting values, so they are not looked for.
func TestDesignJSONDescribesHTML(t *testing.T) {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	for _, tp := range design.Templates() {
		if !json.Valid([]byte(tp.JSON)) {
			t.Fatalf("%s: json_code is not valid JSON", tp.Name)
		}
		d, err := design.ParseDocument([]byte(tp.JSON))
		if err != nil {
			t.Fatalf("%s: %v", tp.Name, err)
		}
		if d.Name != tp.Name || d.Version != 1 {
			t.Errorf("%s: document name %q, version %d", tp.Name, d.Name, d.Version)
		}
		var v struct {
			Name   string
			Blocks any
		}
		json.Unmarshal([]byte(tp.JSON), &v)
		n := 0
		walkStrings([]any{v.Name, v.Blocks}, "name", func(key, s string) {
			if key == "type" {
				return
			}
			n++
			if !strings.Contains(tp.HTML, esc.Replace(s)) {
				t.Errorf("%s: %s %q is not in html_code", tp.Name, key, s)
			}
		})
		if n < 5 {
			t.Errorf("%s: only %d strings checked", tp.Name, n)
		}
	}
}

func walkStrings(v any, key string, f func(key, s string)) {
	switch v := v.(type) {
	case string:
		f(key, v)
	case []any:
		for _, e := range v {
			walkStrings(e, key, f)
		}
	case map[string]any:
		for k, e := range v {
			walkStrings(e, k, f)
		}
	}
}

var markupRE = regexp.MustCompile(`(?i)</?(?:html|head|body|table|tr|td|p|a|h[1-6]|strong|br|style|meta)\b`)

var placeholderRE = regexp.MustCompile(`\(\(\s*([A-Za-z0-9_]+)\s*\)\)`)

// Every placeholder is one of mail.DynamicContent, written as the API
// lists it; every footer links the preferences page and names the sender
// and its address.
func TestDesignPlaceholders(t *testing.T) {
	for _, tp := range design.Templates() {
		for _, src := range []string{tp.HTML, tp.JSON} {
			for _, m := range placeholderRE.FindAllStringSubmatch(src, -1) {
				if m[0] != "(("+m[1]+"))" || !slices.Contains(mail.DynamicContent, m[1]) {
					t.Errorf("%s: placeholder %s is not one of mail.DynamicContent", tp.Name, m[0])
				}
			}
		}
		for _, want := range []string{`href="((unsubscribe_preferences))"`, "((sender_name))", "((sender_address))"} {
			if !strings.Contains(tp.HTML, want) {
				t.Errorf("%s: no %s", tp.Name, want)
			}
		}
	}
}

// Every template compiles and renders through internal/render: no
// placeholder is left, values are filled and escaped, the preheader goes
// in after <body>, and the text part starts with the brand on a line of
// its own and keeps the footer. No text repeats a word of the sender's
// name ("the Acme Team team").
func TestDesignRender(t *testing.T) {
	r := &mail.Recipient{Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace <AL>",
		Custom: map[string]string{"company_name": "Engines & Co"},
		Tokens: mail.Tokens{PreferencesURL: "https://mail.example.com/p/tok123"}}
	s := &mail.Sender{FromName: "Northwind Team", Address: "12 Harbour Street", City: "Bristol"}
	for _, tp := range design.Templates() {
		tpl, err := render.Compile("Hello ((first_name))", "Preview text", tp.HTML)
		if err != nil {
			t.Fatalf("%s: %v", tp.Name, err)
		}
		var b render.Buffer
		tpl.Render(&b, r, s)
		html, text := string(b.HTML), string(b.Text)
		if m := placeholderRE.FindString(html); m != "" {
			t.Errorf("%s: %s left in the HTML", tp.Name, m)
		}
		for _, want := range []string{`href="https://mail.example.com/p/tok123"`, "Northwind Team", "12 Harbour Street, Bristol"} {
			if !strings.Contains(html, want) {
				t.Errorf("%s: rendered HTML lacks %s", tp.Name, want)
			}
		}
		if strings.Contains(tp.HTML, "((first_name))") && !strings.Contains(html, "Ada") {
			t.Errorf("%s: first name not filled", tp.Name)
		}
		if strings.Contains(tp.HTML, "((full_name))") && !strings.Contains(html, "Ada Lovelace &lt;AL&gt;") {
			t.Errorf("%s: full name not filled and escaped", tp.Name)
		}
		if strings.Contains(tp.HTML, "((company_name))") && !strings.Contains(html, "Engines &amp; Co") {
			t.Errorf("%s: company name not filled and escaped", tp.Name)
		}
		body := strings.Index(html, "<body")
		if pre := strings.Index(html, "Preview text"); body < 0 || pre < body {
			t.Errorf("%s: preheader not in the body", tp.Name)
		}
		if string(b.Subject) != "Hello Ada" {
			t.Errorf("%s: subject %q", tp.Name, b.Subject)
		}
		for _, want := range []string{"Unsubscribe or manage your preferences (https://mail.example.com/p/tok123)", "12 Harbour Street, Bristol"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: text part lacks %q:\n%s", tp.Name, want, text)
			}
		}
		if first, _, _ := strings.Cut(text, "\n"); first != "Northwind Team" {
			t.Errorf("%s: text part starts with %q, want the brand alone", tp.Name, first)
		}
		if strings.Contains(strings.ToLower(text), "team team") {
			t.Errorf("%s: the sender's name runs into the text:\n%s", tp.Name, text)
		}
		if strings.Contains(text, "@media") || markupRE.MatchString(text) {
			t.Errorf("%s: text part holds markup or CSS:\n%s", tp.Name, text)
		}
	}
}

// What mail clients need: tables and inline styles, one <style> with
// client resets and the phone media query, nothing fetched, no script,
// 600 px at most.
func TestDesignEmailSafe(t *testing.T) {
	styleRE := regexp.MustCompile(`(?s)<style>(.*?)</style>`)
	urlRE := regexp.MustCompile(`(?i)(?:https?:)?//[^\s"')<]+`)
	for _, tp := range design.Templates() {
		h := tp.HTML
		lower := strings.ToLower(h)
		for _, bad := range []string{"<script", "javascript:", "<img", "<link", "@import", "url(", "src=", "<iframe",
			"<form", "<video", "<div", "@font-face", "position:", "display:flex", "display:grid"} {
			if strings.Contains(lower, bad) {
				t.Errorf("%s: has %s", tp.Name, bad)
			}
		}
		if !strings.HasPrefix(h, "<!DOCTYPE html>") || !strings.Contains(h, `<meta charset="utf-8">`) ||
			!strings.Contains(h, `name="viewport"`) || !strings.Contains(h, `max-width:600px`) {
			t.Errorf("%s: not the skeleton", tp.Name)
		}
		styles := styleRE.FindAllStringSubmatch(h, -1)
		if len(styles) != 1 || !strings.Contains(styles[0][1], "\n@media only screen and (max-width:") ||
			!strings.HasPrefix(styles[0][1], "\nbody, table, td, a {") {
			t.Errorf("%s: want one <style> holding the resets and the media query", tp.Name)
		}
		for _, u := range urlRE.FindAllString(h, -1) {
			if u != "http://www.w3.org/1999/xhtml" && !strings.HasPrefix(u, "https://example.com/") {
				t.Errorf("%s: remote address %s", tp.Name, u)
			}
		}
		if strings.Count(lower, "<table") != strings.Count(lower, "</table>") ||
			strings.Count(lower, "<td") != strings.Count(lower, "</td>") {
			t.Errorf("%s: tables or cells not closed", tp.Name)
		}
	}
}

// Each preview is a PNG of the content column, 600 px wide, under
// 150 KB, served by name and by no other name.
func TestDesignPreviews(t *testing.T) {
	for _, tp := range design.Templates() {
		b, ok := design.Preview(tp.Preview)
		if !ok {
			t.Fatalf("%s: no preview %s", tp.Name, tp.Preview)
		}
		disk, err := os.ReadFile("previews/" + tp.Preview)
		if err != nil || !bytes.Equal(b, disk) {
			t.Fatalf("%s: embedded preview differs from the file (%v)", tp.Name, err)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", tp.Name, err)
		}
		if cfg.Width != 600 || cfg.Height < 300 || len(b) > 150<<10 {
			t.Errorf("%s: %dx%d, %d bytes", tp.Name, cfg.Width, cfg.Height, len(b))
		}
	}
	for _, name := range []string{"", "blank", "blank.json", "blank.html", "../blank.png", "previews/blank.png",
		"BLANK.PNG", "templates/blank.html", "../../go.mod"} {
		if _, ok := design.Preview(name); ok {
			t.Errorf("Preview(%q) found", name)
		}
	}
}

// ParseDocument refuses what Build could not write safely or faithfully.
func TestDesignParseDocumentRefuses(t *testing.T) {
	const head = `{"version":1,"name":"T","settings":{"width":600,"background":"#fff","content_background":"#fff",` +
		`"font_family":"Arial, sans-serif","text_color":"#000","heading_color":"#000","accent_color":"#00f",` +
		`"muted_color":"#666","border_color":"#eee"},"blocks":[`
	const footer = `{"type":"footer","sender":"((sender_name))","address":"((sender_address))",` +
		`"link_text":"Unsubscribe","link_url":"((unsubscribe_preferences))"}`
	doc := func(blocks string) string { return head + blocks + `]}` }
	with := func(block string) string { return doc(block + "," + footer) }
	if _, err := design.ParseDocument([]byte(with(`{"type":"text","text":"hi"}`))); err != nil {
		t.Fatalf("valid document: %v", err)
	}
	for name, src := range map[string]string{
		"style injection":  with(`{"type":"text","text":"hi","color":"red;background:url(https://x)"}`),
		"padding":          with(`{"type":"text","text":"hi","padding":"1em"}`),
		"align":            with(`{"type":"text","text":"hi","align":"justify\" onclick=\"x"}`),
		"unknown field":    with(`{"type":"text","text":"hi","html":"<b>x</b>"}`),
		"unknown type":     with(`{"type":"video","url":"https://x"}`),
		"empty text":       with(`{"type":"text"}`),
		"heading level":    with(`{"type":"heading","text":"x","level":4}`),
		"one column":       with(`{"type":"columns","columns":[{"heading":"x"}]}`),
		"two footers":      doc(footer + "," + footer),
		"footer not last":  doc(footer + `,{"type":"text","text":"after"}`),
		"no footer":        doc(`{"type":"text","text":"hi"}`),
		"no blocks":        doc(""),
		"font":             strings.Replace(doc(footer), "Arial, sans-serif", "Arial;color:red", 1),
		"wide":             strings.Replace(doc(footer), `"width":600`, `"width":900`, 1),
		"version":          strings.Replace(doc(footer), `"version":1`, `"version":2`, 1),
		"trailing data":    doc(footer) + "{}",
		"missing settings": `{"version":1,"name":"T","blocks":[]}`,
	} {
		if _, err := design.ParseDocument([]byte(src)); err == nil {
			t.Errorf("%s: accepted %s", name, src)
		}
	}
}
