// Package design is the built-in catalogue of design templates: a blank
// one (id 1) and ready-made mails. Each template is a json_code document
// (templates/NAME.json) describing its blocks for a design editor, the
// HTML made from it by Build (templates/NAME.html, written by go generate
// and held equal by a test) and a PNG preview (previews/NAME.png, made by
// scripts/design-previews.sh). Everything is embedded; see
// docs/templates.md.
package design

//go:generate go run ./gen

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"sync"
)

//go:embed templates/*.json templates/*.html previews/*.png
var files embed.FS

// entries are the catalogue in the API's order: the id and the file name
// (without extension) of each template's json, html and png. Ids never
// change meaning, since a send stores template_id: append new ones.
var entries = []struct {
	id   int64
	slug string
}{
	{1, "blank"},
	{2, "newsletter"},
	{3, "announcement"},
	{4, "welcome"},
	{5, "order-confirmation"},
}

// Template is a built-in design template.
type Template struct {
	ID      int64
	Name    string // the document's name
	Preview string // the preview's file name, served by the API
	JSON    string // the json_code document, compact
	HTML    string // the html_code, as Build writes it
	Blank   bool   // id 1: the empty canvas
}

// Templates is the catalogue, read from the embedded files once.
func Templates() []Template {
	return catalogue().templates
}

// Preview is the PNG named file (a Template's Preview), false for any
// other name.
func Preview(file string) ([]byte, bool) {
	b, ok := catalogue().previews[file]
	return b, ok
}

type loaded struct {
	templates []Template
	previews  map[string][]byte
}

var catalogue = sync.OnceValue(func() loaded {
	l, err := load()
	if err != nil {
		panic(err) // embedded files; the package's tests load them
	}
	return l
})

func load() (loaded, error) {
	l := loaded{previews: make(map[string][]byte, len(entries))}
	for _, e := range entries {
		src, err := files.ReadFile("templates/" + e.slug + ".json")
		if err != nil {
			return l, err
		}
		d, err := ParseDocument(src)
		if err != nil {
			return l, fmt.Errorf("%s: %w", e.slug, err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, src); err != nil {
			return l, err
		}
		html, err := files.ReadFile("templates/" + e.slug + ".html")
		if err != nil {
			return l, err
		}
		preview := e.slug + ".png"
		png, err := files.ReadFile("previews/" + preview)
		if err != nil {
			return l, err
		}
		l.previews[preview] = png
		l.templates = append(l.templates, Template{ID: e.id, Name: d.Name, Preview: preview,
			JSON: compact.String(), HTML: string(html), Blank: e.id == 1})
	}
	return l, nil
}
