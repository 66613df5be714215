package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/render"
)

// The design editor: a schedule's or a single send's design, edited as
// the blocks of its design document (design mode) or as HTML (code mode).
// The server is the source of truth: the page posts the document, which
// is checked by mail.ParseDesign (the API's design route's check) and
// built by design.Build for the preview, the test mail and the save.
// This file shows the page; design_save.go, design_preview.go,
// design_test_send.go and media_upload.go take its posts.

// designBodyLimit caps the editor's posts: a template of up to
// mail.MaxTemplateBytes (the editor posts multipart, so it is not
// inflated) and the form around it; a larger template is refused with the
// API's size message, not cut.
const designBodyLimit = 3 << 20

// Editor modes.
const (
	modeDesign = "design"
	modeCode   = "code"
)

// editorFieldDef is a field of the editor's forms: the key it has in the
// design document, its label and how it is edited.
type editorFieldDef struct {
	Key   string
	Label string
	// Kind: text, textarea, int, color, select (Options; an int when
	// Int), bool, image (an address with an upload beside it).
	Kind    string
	Int     bool
	Options []editorOption
	Help    string
}

type editorOption struct{ Value, Label string }

// editorFieldView is a field with its value.
type editorFieldView struct {
	editorFieldDef
	Value   string
	Checked bool
}

var editorAligns = []editorOption{{"", "Default"}, {"left", "Left"}, {"center", "Centre"}, {"right", "Right"}}

// editorFields are the design document's fields by key (design.Block, Item,
// Settings).
var editorFields = func() map[string]editorFieldDef {
	m := map[string]editorFieldDef{}
	for _, f := range []editorFieldDef{
		{Key: "text", Label: "Text", Kind: "textarea"},
		{Key: "note", Label: "Note, on the right", Kind: "text"},
		{Key: "title", Label: "Title", Kind: "text"},
		{Key: "level", Label: "Level", Kind: "select", Int: true, Options: []editorOption{{"1", "1: title"}, {"2", "2: section"}, {"3", "3: small"}}},
		{Key: "size", Label: "Font size (px, 12–24; 16 when empty)", Kind: "int"},
		{Key: "height", Label: "Height (px)", Kind: "int"},
		{Key: "width", Label: "Width (px; the column's when empty)", Kind: "int"},
		{Key: "url", Label: "Link", Kind: "text", Help: "An https:// address or a placeholder."},
		{Key: "src", Label: "Image address", Kind: "image", Help: "Upload a PNG, JPEG, GIF or WebP image, or give an https:// address."},
		{Key: "alt", Label: "Alternative text", Kind: "text", Help: "Shown where images are blocked, and read aloud."},
		{Key: "sender", Label: "Sender", Kind: "text"},
		{Key: "address", Label: "Postal address", Kind: "text"},
		{Key: "link_text", Label: "Link text", Kind: "text"},
		{Key: "link_url", Label: "Link address", Kind: "text"},
		{Key: "align", Label: "Alignment", Kind: "select", Options: editorAligns},
		{Key: "padding", Label: "Padding", Kind: "text", Help: "One to four px lengths, as in CSS: 16px 40px."},
		{Key: "color", Label: "Text colour", Kind: "color"},
		{Key: "note_color", Label: "Note colour", Kind: "color"},
		{Key: "background", Label: "Background", Kind: "color"},
		{Key: "button_color", Label: "Button colour", Kind: "color"},
		{Key: "text_color", Label: "Button text colour", Kind: "color"},
		{Key: "border_color", Label: "Border colour", Kind: "color"},
		{Key: "card_background", Label: "Card background", Kind: "color"},
		// An item's.
		{Key: "heading", Label: "Heading", Kind: "text"},
		{Key: "name", Label: "Name", Kind: "text"},
		{Key: "detail", Label: "Detail", Kind: "text"},
		{Key: "quantity", Label: "Quantity", Kind: "text"},
		{Key: "price", Label: "Price", Kind: "text"},
		{Key: "label", Label: "Label", Kind: "text"},
		{Key: "value", Label: "Value", Kind: "text"},
		{Key: "strong", Label: "Bold (the total)", Kind: "bool"},
	} {
		m[f.Key] = f
	}
	return m
}()

// editorSettings are the document's settings, in the form's order.
var editorSettings = []editorFieldDef{
	{Key: "width", Label: "Content width (px, 320–600)", Kind: "int"},
	{Key: "font_family", Label: "Font family", Kind: "text", Help: "Installed fonts only: Helvetica, Arial, sans-serif."},
	{Key: "background", Label: "Page background", Kind: "color"},
	{Key: "content_background", Label: "Content background", Kind: "color"},
	{Key: "text_color", Label: "Text colour", Kind: "color"},
	{Key: "heading_color", Label: "Heading colour", Kind: "color"},
	{Key: "accent_color", Label: "Accent colour", Kind: "color"},
	{Key: "muted_color", Label: "Muted colour", Kind: "color"},
	{Key: "border_color", Label: "Border colour", Kind: "color"},
}

// blockListDef is a block's list: its columns, items or rows.
type blockListDef struct {
	Key, Label, ItemLabel string
	Keys                  []string
}

// blockType is a block type as the editor shows it: the fields it takes
// (design.Block's comment) and the block an Add starts with.
type blockType struct {
	Type, Label string
	Keys        []string
	List        *blockListDef
	New         design.Block
}

const blockStyle = "color background align padding"

var blockTypes = []blockType{
	{Type: "header", Label: "Header", Keys: fieldKeys("text note note_color color background padding"),
		New: design.Block{Text: "((sender_name))"}},
	{Type: "label", Label: "Label", Keys: fieldKeys("text " + blockStyle), New: design.Block{Text: "NEWS"}},
	{Type: "heading", Label: "Heading", Keys: fieldKeys("text level " + blockStyle), New: design.Block{Text: "A heading", Level: 2}},
	{Type: "text", Label: "Text", Keys: fieldKeys("text size " + blockStyle), New: design.Block{Text: "Write something for ((first_name))."}},
	{Type: "button", Label: "Button", Keys: fieldKeys("text url button_color text_color background align padding"),
		New: design.Block{Text: "Read more", URL: "https://example.com"}},
	{Type: "image", Label: "Image", Keys: fieldKeys("src alt width height url " + blockStyle)},
	{Type: "divider", Label: "Divider", Keys: fieldKeys("color background padding")},
	{Type: "spacer", Label: "Spacer", Keys: fieldKeys("height background"), New: design.Block{Height: 24}},
	{Type: "columns", Label: "Columns", Keys: fieldKeys("card_background " + blockStyle),
		List: &blockListDef{"columns", "Columns (two or three)", "column", fieldKeys("heading text link_text link_url")},
		New:  design.Block{Columns: []design.Item{{Heading: "First", Text: "Some words."}, {Heading: "Second", Text: "Some more."}}}},
	{Type: "steps", Label: "Steps", Keys: fieldKeys(blockStyle), List: &blockListDef{"items", "Steps", "step", fieldKeys("title text")},
		New: design.Block{Items: []design.Item{{Title: "First step", Text: "What to do."}}}},
	{Type: "callout", Label: "Callout", Keys: fieldKeys("title text border_color card_background " + blockStyle),
		New: design.Block{Title: "Good to know", Text: "Something worth a box."}},
	{Type: "details", Label: "Details", Keys: fieldKeys("card_background " + blockStyle), List: &blockListDef{"rows", "Rows", "row", fieldKeys("label value")},
		New: design.Block{Rows: []design.Item{{Label: "Order", Value: "#1001"}}}},
	{Type: "items", Label: "Items", Keys: fieldKeys(blockStyle), List: &blockListDef{"items", "Items", "item", fieldKeys("name detail quantity price")},
		New: design.Block{Items: []design.Item{{Name: "Product", Quantity: "1", Price: "$10.00"}}}},
	{Type: "totals", Label: "Totals", Keys: fieldKeys(blockStyle), List: &blockListDef{"rows", "Rows", "row", fieldKeys("label value strong")},
		New: design.Block{Rows: []design.Item{{Label: "Total", Value: "$10.00", Strong: true}}}},
	{Type: "footer", Label: "Footer", Keys: fieldKeys("text sender address link_text link_url color background padding"),
		New: design.Block{Sender: "((sender_name))", Address: "((sender_address))", LinkText: "Unsubscribe",
			LinkURL: "((unsubscribe_preferences))"}},
}

func fieldKeys(s string) []string { return strings.Fields(s) }

func blockTypeOf(t string) *blockType {
	for i := range blockTypes {
		if blockTypes[i].Type == t {
			return &blockTypes[i]
		}
	}
	return nil
}

// blockView is a block as the editor's form shows it.
type blockView struct {
	N       int // its place, from 1
	Type    string
	Label   string
	Summary string
	Fields  []editorFieldView
	List    *blockListView
	Extras  []editorFieldView // values of fields its type does not show, kept
	Fixed   bool              // the footer: last, not moved or removed
	Error   string            // the document's error in this block
}

// blockListView is a block's list with its items.
type blockListView struct {
	blockListDef
	Items [][]editorFieldView
	Blank []editorFieldView // a new item's fields
}

// editorState is what the editor shows: the stored design, or what a
// refused or tested form held.
type editorState struct {
	mode           string
	json, html     string
	dirty          bool // not the stored design
	previewContact string
	testTo         string
}

// editorData is the editor page's model.
type editorData struct {
	Rec            mail.DesignRecord
	Base           string // the page's address; its posts are Base/save …
	Mode           string
	Writable       bool   // a writer, and the design may change
	Locked         bool   // a running or completed send
	Dirty          bool   // the page shows what was posted, not what is stored
	JSON           string // design mode's document
	Document       *design.Document
	DocumentError  string // design mode: the stored document does not read
	Blocks         []blockView
	Settings       []editorFieldView
	Types          []blockType // the add menu
	New            []blockView // each type's new block (templates)
	HTML           string      // code mode's HTML
	Placeholders   []string
	Catalogue      []design.Template
	PreviewContact string
	TestTo         string
	StatusWord     string // a send's status
}

// designBase is the editor's address for rec.
func designBase(rec *mail.DesignRecord) string {
	if rec.Kind == mail.DesignSingleSend {
		return "/design/editor/single-send/" + rec.UTR
	}
	return "/design/editor/" + rec.UTR
}

// designRecord is the design the request's address names in the signed-in
// account: ENOTFOUND for a malformed utr or another account's.
func (h *Handler) designRecord(r *http.Request) (mail.DesignRecord, error) {
	utr, ok := mail.ParseUTR(r.PathValue("utr"))
	if !ok {
		return mail.DesignRecord{}, mail.NotFound()
	}
	if strings.HasPrefix(r.URL.Path, "/design/editor/single-send/") {
		return h.db.SendDesign(r.Context(), session(r).AccountID, utr)
	}
	return h.db.ScheduleDesign(r.Context(), session(r).AccountID, utr)
}

// designNotFound answers any other address under /design/editor.
func (h *Handler) designNotFound(w http.ResponseWriter, r *http.Request) {
	h.fail(w, r, mail.NotFound())
}

// storedState is the editor's state for rec as stored. A design with neither
// JSON nor HTML is its catalogue template's, as the engine sends it.
func storedState(rec *mail.DesignRecord) editorState {
	var es editorState
	if rec.TemplateJSON != nil {
		es.json = *rec.TemplateJSON
	}
	if rec.TemplateHTML != nil {
		es.html = *rec.TemplateHTML
	}
	if strings.TrimSpace(es.json) == "" && strings.TrimSpace(es.html) == "" {
		for _, t := range design.Templates() {
			if t.ID == rec.TemplateID {
				es.json, es.html = t.JSON, t.HTML
			}
		}
	}
	if _, err := design.ParseDocument([]byte(es.json)); err == nil {
		es.mode = modeDesign
	} else {
		es.mode = modeCode
	}
	return es
}

// designEditor answers GET /design/editor/{utr} and
// /design/editor/single-send/{utr}: mode=design or code; start={id}
// begins the design from a catalogue template (unsaved).
func (h *Handler) designEditor(w http.ResponseWriter, r *http.Request) {
	rec, err := h.designRecord(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	es := storedState(&rec)
	q := r.URL.Query()
	switch q.Get("mode") {
	case modeDesign, modeCode:
		es.mode = q.Get("mode")
	}
	if id, err := strconv.ParseInt(q.Get("start"), 10, 64); err == nil {
		for _, t := range design.Templates() {
			if t.ID == id {
				es.mode, es.json, es.dirty = modeDesign, t.JSON, true
			}
		}
	}
	es.testTo = session(r).Email
	p := page{}
	if q.Get("saved") == "1" {
		p.Notice = "The design is saved."
	}
	h.editor(w, r, http.StatusOK, &rec, es, p)
}

// postedState is the editor's state as a post of its form left it: not
// saved unless it is rec's stored design.
func postedState(r *http.Request, rec *mail.DesignRecord) editorState {
	es := editorState{mode: modeCode, html: r.PostFormValue("template_html"),
		previewContact: r.PostFormValue("preview_contact"), testTo: r.PostFormValue("test_recipients")}
	if r.PostFormValue("mode") == modeDesign {
		es.mode, es.json = modeDesign, r.PostFormValue("template_json")
	}
	switch s := storedState(rec); {
	case es.mode == modeDesign:
		es.dirty = rec.TemplateJSON == nil || es.json != *rec.TemplateJSON
	default:
		es.dirty = rec.TemplateJSON != nil || es.html != s.html
	}
	return es
}

var blockErrorRE = regexp.MustCompile(`^The template json is not a valid design: block (\d+) \(`)

// editor renders the editor page for rec in state es, p carrying the
// notice or the errors of a post.
func (h *Handler) editor(w http.ResponseWriter, r *http.Request, status int, rec *mail.DesignRecord, es editorState, p page) {
	d := editorData{Rec: *rec, Base: designBase(rec), Mode: es.mode, Locked: rec.ReadOnly(), Dirty: es.dirty,
		Placeholders: mail.DynamicContent, Catalogue: design.Templates(), PreviewContact: es.previewContact, TestTo: es.testTo,
		Types: addableTypes}
	d.Writable = !d.Locked && session(r).Role.CanWrite()
	if rec.Kind == mail.DesignSingleSend {
		d.StatusWord = map[int16]string{mail.SendDraft: "draft", mail.SendReady: "scheduled", mail.SendRunning: "sending",
			mail.SendCompleted: "sent"}[rec.Status]
	}
	switch es.mode {
	case modeDesign:
		d.JSON = es.json
		doc, err := design.ParseDocument([]byte(es.json))
		if err != nil {
			// A refused document is shown as it came, so it can be mended.
			var loose design.Document
			if json.Unmarshal([]byte(es.json), &loose) == nil && loose.Version == 1 {
				doc = &loose
			} else if strings.TrimSpace(es.json) != "" || !es.dirty {
				d.DocumentError = mail.DesignProblem(err)
			}
		}
		if doc != nil {
			d.Document = doc
			d.Settings = editorSettingsView(doc.Settings)
			blockErr, at := "", 0
			if msgs := p.Errors["template_json"]; len(msgs) > 0 {
				if m := blockErrorRE.FindStringSubmatch(msgs[0]); m != nil {
					at, _ = strconv.Atoi(m[1])
					blockErr = msgs[0]
				}
			}
			for i := range doc.Blocks {
				v := newBlockView(&doc.Blocks[i], i+1)
				if i+1 == at {
					v.Error = blockErr
				}
				d.Blocks = append(d.Blocks, v)
			}
		}
		for _, t := range addableTypes {
			b := t.New
			b.Type = t.Type
			d.New = append(d.New, newBlockView(&b, 0))
		}
	default:
		d.HTML = es.html
		if strings.TrimSpace(d.HTML) == "" {
			if html, err := design.Build([]byte(es.json)); err == nil {
				d.HTML = html
			}
		}
	}
	p.Title, p.Data = "Design: "+rec.Name, d
	h.render(w, r, status, "design_editor", p)
}

// addableTypes are the block types the add menu offers: all but the footer,
// which every document has once, last.
var addableTypes = func() []blockType {
	var out []blockType
	for _, t := range blockTypes {
		if t.Type != "footer" {
			out = append(out, t)
		}
	}
	return out
}()

// docValues is a document object's fields by key, as the form writes them.
func docValues(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func editorFieldOf(f editorFieldDef, v any) editorFieldView {
	fv := editorFieldView{editorFieldDef: f}
	switch x := v.(type) {
	case string:
		fv.Value = x
	case float64:
		fv.Value = strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		fv.Checked = x
		if x {
			fv.Value = "true"
		}
	}
	return fv
}

func editorSettingsView(s design.Settings) []editorFieldView {
	m := docValues(s)
	out := make([]editorFieldView, len(editorSettings))
	for i, f := range editorSettings {
		out[i] = editorFieldOf(f, m[f.Key])
	}
	return out
}

// newBlockView is block b at place n (0: a new block's template).
func newBlockView(b *design.Block, n int) blockView {
	m := docValues(b)
	v := blockView{N: n, Type: b.Type, Label: b.Type, Fixed: b.Type == "footer"}
	shown := map[string]bool{"type": true}
	t := blockTypeOf(b.Type)
	if t != nil {
		v.Label = t.Label
		for _, k := range t.Keys {
			shown[k] = true
			v.Fields = append(v.Fields, editorFieldOf(editorFields[k], m[k]))
		}
		if l := t.List; l != nil {
			shown[l.Key] = true
			lv := &blockListView{blockListDef: *l}
			items, _ := m[l.Key].([]any)
			for _, it := range items {
				im, _ := it.(map[string]any)
				var row []editorFieldView
				for _, k := range l.Keys {
					row = append(row, editorFieldOf(editorFields[k], im[k]))
				}
				lv.Items = append(lv.Items, row)
			}
			for _, k := range l.Keys {
				lv.Blank = append(lv.Blank, editorFieldOf(editorFields[k], nil))
			}
			v.List = lv
		}
	}
	// Fields the type does not show are kept as they are.
	extra := make([]string, 0, len(m))
	for k := range m {
		if !shown[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		val := m[k]
		f, ok := editorFields[k]
		if !ok {
			f = editorFieldDef{Key: k, Kind: "text"}
		}
		if _, isList := val.([]any); isList {
			continue // a list the type does not take: dropped, as Build ignores it
		}
		fv := editorFieldOf(f, val)
		if _, num := val.(float64); num {
			fv.Kind = "int"
		}
		v.Extras = append(v.Extras, fv)
	}
	for _, k := range []string{"text", "title", "alt", "sender", "src"} {
		if s, _ := m[k].(string); strings.TrimSpace(s) != "" {
			v.Summary = blockSummary(s)
			break
		}
	}
	return v
}

// blockSummary is s cut to a line of some 60 characters.
func blockSummary(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= 60 {
		return s
	}
	r := []rune(s)
	return string(r[:59]) + "…"
}

// designInput checks the design a form posts, as the API's design route
// checks it (mail.ParseDesign), for rec's subject and preheader.
func (h *Handler) designInput(r *http.Request, rec *mail.DesignRecord) (mail.DesignInput, error) {
	f := mail.DesignForm{TemplateHTML: r.PostFormValue("template_html")}
	if r.PostFormValue("mode") == modeDesign {
		f = mail.DesignForm{TemplateJSON: r.PostFormValue("template_json")}
	}
	return mail.ParseDesign(f, mail.DesignRules{Build: design.Build, Subject: rec.Subject, Preheader: rec.Preheader,
		MailSize: render.CheckSize(h.cfg.MaxMailBytes, len(h.cfg.PublicURL))})
}

// previewContact is the contact a form names in preview_contact (its
// address) with its values, or the sample contact (0) when it names none.
func (h *Handler) previewContact(r *http.Request) (mail.Recipient, error) {
	v := strings.TrimSpace(r.PostFormValue("preview_contact"))
	if v == "" {
		return mail.SampleRecipient(), nil
	}
	e, ok := mail.ParseEmail(v)
	if !ok {
		return mail.Recipient{}, mail.Invalid("preview_contact", "The preview contact must be a valid email address.")
	}
	c, err := h.db.ContactRecipient(r.Context(), session(r).AccountID, e)
	if mail.ErrorCode(err) == mail.ENOTFOUND {
		return c, mail.Invalid("preview_contact", "The account has no contact with this address.")
	}
	return c, err
}

// renderDesign makes in's mail for recipient c from rec's sender as a
// send renders it: subject, preheader, the HTML (with the hidden
// preheader) and the plain-text part derived from it. The preferences
// link leads to a page that says the link is not valid.
func (h *Handler) renderDesign(rec *mail.DesignRecord, in mail.DesignInput, c mail.Recipient) (*render.Buffer, error) {
	t, err := render.Compile(rec.Subject, rec.Preheader, in.TemplateHTML)
	if err != nil {
		return nil, mail.Invalid("template_html", fmt.Sprintf("The template html does not render: %s.", strings.TrimPrefix(err.Error(), "render: ")))
	}
	c.Tokens = mail.Tokens{PreferencesURL: h.cfg.PublicURL + mail.UnsubscribePath + "test"}
	var b render.Buffer
	t.Render(&b, &c, rec.Sender)
	return &b, nil
}
