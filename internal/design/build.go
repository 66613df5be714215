package design

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Document is a template's json_code: its settings and its blocks, top to
// bottom. Build makes the template's HTML from it, so the two never
// disagree. Every text is the author's plain text (placeholders included);
// Build escapes it.
type Document struct {
	Version  int      `json:"version"`
	Name     string   `json:"name"`
	Settings Settings `json:"settings"`
	Blocks   []Block  `json:"blocks"`
}

// Settings hold the colours and sizes every block starts from.
type Settings struct {
	Width             int    `json:"width"`              // content width in px, at most 600
	Background        string `json:"background"`         // the page around the content
	ContentBackground string `json:"content_background"` // behind blocks without their own
	FontFamily        string `json:"font_family"`        // installed fonts only
	TextColor         string `json:"text_color"`
	HeadingColor      string `json:"heading_color"`
	AccentColor       string `json:"accent_color"` // labels, buttons, step numbers
	MutedColor        string `json:"muted_color"`  // secondary text, the footer
	BorderColor       string `json:"border_color"` // dividers and table rules
}

// Block is one row of the template. Type says which fields apply:
//
//	header    text (brand), note (right-hand), note_color
//	label     text: a small upper-case line above a heading
//	heading   text, level 1-3
//	text      text, size (px, default 16)
//	button    text, url, button_color, text_color
//	divider   -
//	spacer    height (px)
//	columns   columns[] {heading, text, link_text, link_url}, card_background
//	steps     items[] {title, text}: numbered
//	callout   title, text, border_color
//	details   rows[] {label, value}
//	items     items[] {name, detail, quantity, price}
//	totals    rows[] {label, value, strong}
//	image     src, alt, width (px), height (px), url
//	footer    text, sender, address, link_text, link_url
//
// An image's src is an absolute http or https URL (the console serves
// uploads at {PUBLIC_URL}/media/...) and alt its text for readers and
// for clients that block images; width defaults to, and may not exceed,
// the content width less the block's padding; height, the image's height
// at that width, lets Outlook and clients that block images keep its
// place; url makes it a link; it is centred unless align says otherwise.
//
// background, color, align and padding (CSS shorthand in px) override the
// settings and the type's defaults for any block.
type Block struct {
	Type string `json:"type"`

	Text      string `json:"text,omitempty"`
	Title     string `json:"title,omitempty"`
	Note      string `json:"note,omitempty"`
	Level     int    `json:"level,omitempty"`
	Size      int    `json:"size,omitempty"`
	Height    int    `json:"height,omitempty"`
	Width     int    `json:"width,omitempty"`
	URL       string `json:"url,omitempty"`
	Src       string `json:"src,omitempty"`
	Alt       string `json:"alt,omitempty"`
	Sender    string `json:"sender,omitempty"`
	Address   string `json:"address,omitempty"`
	LinkText  string `json:"link_text,omitempty"`
	LinkURL   string `json:"link_url,omitempty"`
	Columns   []Item `json:"columns,omitempty"`
	Items     []Item `json:"items,omitempty"`
	Rows      []Item `json:"rows,omitempty"`
	Align     string `json:"align,omitempty"`
	Padding   string `json:"padding,omitempty"`
	Color     string `json:"color,omitempty"`
	NoteColor string `json:"note_color,omitempty"`

	Background     string `json:"background,omitempty"`
	ButtonColor    string `json:"button_color,omitempty"`
	TextColor      string `json:"text_color,omitempty"`
	BorderColor    string `json:"border_color,omitempty"`
	CardBackground string `json:"card_background,omitempty"`
}

// Item is an element of a block's columns, items or rows.
type Item struct {
	Heading  string `json:"heading,omitempty"`
	Title    string `json:"title,omitempty"`
	Text     string `json:"text,omitempty"`
	LinkText string `json:"link_text,omitempty"`
	LinkURL  string `json:"link_url,omitempty"`
	Name     string `json:"name,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Quantity string `json:"quantity,omitempty"`
	Price    string `json:"price,omitempty"`
	Label    string `json:"label,omitempty"`
	Value    string `json:"value,omitempty"`
	Strong   bool   `json:"strong,omitempty"`
}

// ParseDocument decodes and checks a json_code document: version 1,
// known block types and fields, colours, sizes and alignments of the forms
// Build writes into style attributes.
func ParseDocument(src []byte) (*Document, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	var d Document
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("design: %w", err)
	}
	if dec.More() {
		return nil, errors.New("design: data after the document")
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	return &d, nil
}

var (
	colorRE   = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)
	paddingRE = regexp.MustCompile(`^(?:0|\d{1,3}px)(?: (?:0|\d{1,3}px)){0,3}$`)
	fontRE    = regexp.MustCompile(`^[A-Za-z0-9 ,'-]+$`)
)

func (d *Document) check() error {
	if d.Version != 1 {
		return fmt.Errorf("design: version %d, want 1", d.Version)
	}
	if strings.TrimSpace(d.Name) == "" {
		return errors.New("design: no name")
	}
	s := d.Settings
	if s.Width < 320 || s.Width > 600 {
		return fmt.Errorf("design: width %d, want 320 to 600", s.Width)
	}
	if !fontRE.MatchString(s.FontFamily) {
		return fmt.Errorf("design: font_family %q", s.FontFamily)
	}
	for name, c := range map[string]string{"background": s.Background, "content_background": s.ContentBackground,
		"text_color": s.TextColor, "heading_color": s.HeadingColor, "accent_color": s.AccentColor,
		"muted_color": s.MutedColor, "border_color": s.BorderColor} {
		if !colorRE.MatchString(c) {
			return fmt.Errorf("design: settings.%s %q is not a #rgb or #rrggbb colour", name, c)
		}
	}
	footers := 0
	for i, b := range d.Blocks {
		if err := b.check(s); err != nil {
			return fmt.Errorf("design: block %d (%s): %w", i, b.Type, err)
		}
		if b.Type == "footer" {
			footers++
		}
	}
	if footers != 1 || d.Blocks[len(d.Blocks)-1].Type != "footer" {
		return errors.New("design: the last block, and only it, must be the footer")
	}
	return nil
}

func (b *Block) check(s Settings) error {
	for name, c := range map[string]string{"background": b.Background, "color": b.Color, "note_color": b.NoteColor,
		"button_color": b.ButtonColor, "text_color": b.TextColor, "border_color": b.BorderColor,
		"card_background": b.CardBackground} {
		if c != "" && !colorRE.MatchString(c) {
			return fmt.Errorf("%s %q is not a #rgb or #rrggbb colour", name, c)
		}
	}
	if b.Padding != "" && !paddingRE.MatchString(b.Padding) {
		return fmt.Errorf("padding %q: want one to four px lengths", b.Padding)
	}
	switch b.Align {
	case "", "left", "center", "right":
	default:
		return fmt.Errorf("align %q", b.Align)
	}
	need := func(what string, ok bool) error {
		if !ok {
			return fmt.Errorf("needs %s", what)
		}
		return nil
	}
	links := map[string]string{"url": b.URL, "link_url": b.LinkURL}
	for i, c := range b.Columns {
		links["columns["+strconv.Itoa(i)+"].link_url"] = c.LinkURL
	}
	for name, u := range links {
		if u != "" {
			if err := linkURL(u); err != nil {
				return fmt.Errorf("%s %q: %w", name, u, err)
			}
		}
	}
	switch b.Type {
	case "header", "label":
		return need("text", b.Text != "")
	case "heading":
		return need("text and level 1-3", b.Text != "" && b.Level >= 1 && b.Level <= 3)
	case "text":
		return need("text and size 0 or 12-24", b.Text != "" && (b.Size == 0 || b.Size >= 12 && b.Size <= 24))
	case "button":
		return need("text and url", b.Text != "" && b.URL != "")
	case "divider":
		return nil
	case "spacer":
		return need("height 1-400", b.Height >= 1 && b.Height <= 400)
	case "columns":
		return need("two or three columns", len(b.Columns) == 2 || len(b.Columns) == 3)
	case "steps", "items":
		return need("items", len(b.Items) > 0)
	case "callout":
		return need("text", b.Text != "")
	case "details", "totals":
		return need("rows", len(b.Rows) > 0)
	case "image":
		return b.checkImage(s)
	case "footer":
		return need("sender, address, link_text and link_url", b.Sender != "" && b.Address != "" &&
			b.LinkText != "" && b.LinkURL != "")
	}
	return fmt.Errorf("unknown block type %q", b.Type)
}

// maxImageURL bounds an image's src, in bytes.
const maxImageURL = 2048

// checkImage checks an image block: its src, alt text and size.
func (b *Block) checkImage(s Settings) error {
	if b.Src == "" {
		return errors.New("needs src, the image's address")
	}
	if err := imageURL(b.Src); err != nil {
		return fmt.Errorf("src %q: %w", b.Src, err)
	}
	if strings.TrimSpace(b.Alt) == "" {
		return errors.New("needs alt, the text shown in place of the image")
	}
	room := s.Width - sidePadding(or(b.Padding, imagePadding))
	if room < 1 {
		return fmt.Errorf("padding %q leaves no room for the image in the %d px width", or(b.Padding, imagePadding), s.Width)
	}
	if b.Width < 0 || b.Width > room {
		return fmt.Errorf("width %d: want 1 to %d px (the %d px content width less the padding)", b.Width, room, s.Width)
	}
	if b.Height < 0 || b.Height > maxImageHeight {
		return fmt.Errorf("height %d: want 1 to %d px", b.Height, maxImageHeight)
	}
	return nil
}

// maxImageHeight bounds an image block's height, in px.
const maxImageHeight = 3000

// imageURL says what is wrong with an image's src: it must be an absolute
// http or https URL with a host, at most maxImageURL bytes, and hold no
// white space, control characters, quotes, angle brackets, backslash or
// backtick (what a URL percent-encodes, and what could leave the
// attribute).
func imageURL(src string) error {
	if len(src) > maxImageURL {
		return fmt.Errorf("longer than %d bytes", maxImageURL)
	}
	for _, r := range src {
		if r <= ' ' || r == 0x7f || r >= 0x80 && r <= 0x9f || strings.ContainsRune("\"'<>\\`", r) || r == '\u2028' || r == '\u2029' {
			return fmt.Errorf("holds %q: percent-encode it", r)
		}
	}
	u, err := url.Parse(src)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil {
		return errors.New("want an absolute http or https URL")
	}
	return nil
}

// linkURL says what is wrong with a link's address (a button's, an
// image's, a column's or the footer's): it must be an absolute http or
// https URL with a host, or a mailto: address (either may hold
// placeholders in its path or query), or the preferences link alone,
// ((unsubscribe_preferences)). Anything else, javascript: above all, is
// refused: a mail reader may follow it.
func linkURL(s string) error {
	t := strings.TrimSpace(s)
	if m := placeholderRE.FindStringSubmatch(t); m != nil {
		if strings.EqualFold(strings.TrimSpace(m[1]), "unsubscribe_preferences") {
			return nil
		}
		return errors.New("a placeholder alone may only be ((unsubscribe_preferences))")
	}
	u, err := url.Parse(t)
	switch {
	case err != nil:
		return errors.New("want an http, https or mailto address")
	case u.Scheme == "mailto" && u.Opaque != "":
		return nil
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil:
		return nil
	}
	return errors.New("want an http, https or mailto address, or ((unsubscribe_preferences))")
}

// placeholderRE is a value that is one placeholder and nothing else.
var placeholderRE = regexp.MustCompile(`^\(\(([^()]*)\)\)$`)

// sidePadding is the left plus right padding of a CSS padding shorthand
// of px lengths (paddingRE), in px.
func sidePadding(padding string) int {
	var v []int
	for _, f := range strings.Fields(padding) {
		n, _ := strconv.Atoi(strings.TrimSuffix(f, "px"))
		v = append(v, n)
	}
	switch len(v) {
	case 1:
		return 2 * v[0]
	case 2, 3:
		return 2 * v[1]
	case 4:
		return v[1] + v[3]
	}
	return 0
}

// imagePadding is an image block's padding unless it sets its own.
const imagePadding = "16px 40px"

// Build parses a json_code document and writes its HTML: a table-based,
// inline-styled mail, Settings.Width wide and stacking to the screen's
// width on phones, with no script or web fonts and no image but those of
// image blocks. The CSS in <head> is client resets and the phone media
// query.
func Build(src []byte) (string, error) {
	d, err := ParseDocument(src)
	if err != nil {
		return "", err
	}
	w := &writer{s: d.Settings}
	w.document(d)
	return w.b.String(), nil
}

type writer struct {
	b strings.Builder
	s Settings
}

func (w *writer) p(parts ...string) {
	for _, s := range parts {
		w.b.WriteString(s)
	}
}

var (
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
)

// txt escapes s for element content, attr for a double-quoted attribute.
func txt(s string) string  { return textEscaper.Replace(s) }
func attr(s string) string { return attrEscaper.Replace(s) }

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

func px(n int) string { return strconv.Itoa(n) + "px" }

// font is the start of every text style: the family and a size/line-height.
func (w *writer) font(size, line int) string {
	return "font-family:" + w.s.FontFamily + ";font-size:" + px(size) + ";line-height:" + px(line) + ";"
}

func (w *writer) document(d *Document) {
	s := d.Settings
	width := strconv.Itoa(s.Width)
	// The <style> holds the usual client resets (no text inflation on
	// phones, no spacing Outlook adds around tables, smooth scaling of
	// resized images, addresses and dates that iOS makes links keep the
	// text's look), then the phone media query.
	w.p(`<!DOCTYPE html>
<html lang="en" xmlns="http://www.w3.org/1999/xhtml">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="X-UA-Compatible" content="IE=edge">
<meta name="x-apple-disable-message-reformatting">
<meta name="format-detection" content="telephone=no, date=no, address=no, email=no">
<meta name="color-scheme" content="light">
<meta name="supported-color-schemes" content="light">
<title>`, txt(d.Name), `</title>
<style>
body, table, td, a { -webkit-text-size-adjust: 100%; -ms-text-size-adjust: 100%; }
table, td { mso-table-lspace: 0pt; mso-table-rspace: 0pt; }
img { -ms-interpolation-mode: bicubic; border: 0; outline: none; text-decoration: none; }
a[x-apple-data-detectors] { color: inherit !important; text-decoration: none !important; font-size: inherit !important; font-family: inherit !important; font-weight: inherit !important; line-height: inherit !important; }
@media only screen and (max-width: `, strconv.Itoa(s.Width+20), `px) {
  .outer { padding: 0 !important; }
  .container { width: 100% !important; max-width: 100% !important; }
  .px { padding-left: 24px !important; padding-right: 24px !important; }
  .col { display: block !important; width: auto !important; }
  .gutter { display: block !important; width: auto !important; height: 16px !important; }
  .h1 { font-size: 26px !important; line-height: 34px !important; }
}
</style>
</head>
<body style="margin:0;padding:0;width:100%;background-color:`, s.Background, `;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background-color:`, s.Background, `;">
<tr>
<td class="outer" align="center" style="padding:24px 12px;">
<!--[if mso]><table role="presentation" width="`, width, `" cellpadding="0" cellspacing="0" border="0"><tr><td><![endif]-->
<table role="presentation" class="container" width="`, width, `" cellpadding="0" cellspacing="0" border="0" style="width:100%;max-width:`, width, `px;">
`)
	for i := range d.Blocks {
		w.block(&d.Blocks[i])
	}
	w.p(`</table>
<!--[if mso]></td></tr></table><![endif]-->
</td>
</tr>
</table>
</body>
</html>
`)
}

// row opens a block's row: its cell with padding, background and
// alignment. The caller writes the content and calls endRow.
func (w *writer) row(b *Block, padding, background, align string) {
	padding = or(b.Padding, padding)
	background = or(b.Background, background)
	align = or(b.Align, align)
	w.p(`<tr>
<td class="px" align="`, align, `" style="padding:`, padding, `;background-color:`, background, `;text-align:`, align, `;">
`)
}

func (w *writer) endRow() { w.p("</td>\n</tr>\n") }

// table opens a full-width layout table.
const table = `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0">`

func (w *writer) block(b *Block) {
	s := w.s
	bg := s.ContentBackground
	switch b.Type {
	case "header":
		w.row(b, "20px 40px", bg, "left")
		// The brand and the note are paragraphs, so the text part puts
		// them on lines of their own rather than running them together.
		w.p(table, `<tr>
<td align="left"><p style="margin:0;`, w.font(20, 26), `font-weight:bold;letter-spacing:-0.2px;color:`, or(b.Color, s.HeadingColor), `;">`, txt(b.Text), `</p></td>
`)
		if b.Note != "" {
			w.p(`<td align="right"><p style="margin:0;`, w.font(13, 18), `color:`, or(b.NoteColor, s.MutedColor), `;text-align:right;">`, txt(b.Note), `</p></td>
`)
		}
		w.p("</tr></table>\n")
	case "label":
		w.row(b, "32px 40px 8px", bg, "left")
		w.p(`<p style="margin:0;`, w.font(12, 16), `font-weight:bold;letter-spacing:1.6px;color:`, or(b.Color, s.AccentColor), `;">`, txt(b.Text), "</p>\n")
	case "heading":
		size, line, pad, class := 30, 38, "8px 40px 12px", ` class="h1"`
		if b.Level == 2 {
			size, line, pad, class = 22, 30, "24px 40px 8px", ""
		} else if b.Level == 3 {
			size, line, pad, class = 18, 26, "16px 40px 4px", ""
		}
		tag := "h" + strconv.Itoa(b.Level)
		w.row(b, pad, bg, "left")
		w.p(`<`, tag, class, ` style="margin:0;`, w.font(size, line), `font-weight:bold;color:`, or(b.Color, s.HeadingColor), `;">`, txt(b.Text), `</`, tag, ">\n")
	case "text":
		size := b.Size
		if size == 0 {
			size = 16
		}
		w.row(b, "8px 40px", bg, "left")
		w.p(`<p style="margin:0;`, w.font(size, size*13/8), `color:`, or(b.Color, s.TextColor), `;">`, txt(b.Text), "</p>\n")
	case "button":
		w.row(b, "16px 40px 24px", bg, "left")
		btn := or(b.ButtonColor, s.AccentColor)
		w.p(`<table role="presentation" cellpadding="0" cellspacing="0" border="0" align="`, or(b.Align, "left"), `">
<tr>
<td align="center" bgcolor="`, btn, `" style="border-radius:6px;background-color:`, btn, `;">
<a href="`, attr(b.URL), `" target="_blank" style="display:inline-block;padding:14px 28px;`, w.font(16, 20), `font-weight:bold;color:`, or(b.TextColor, "#ffffff"), `;text-decoration:none;border-radius:6px;">`, txt(b.Text), `</a>
</td>
</tr>
</table>
`)
	case "divider":
		w.row(b, "16px 40px", bg, "left")
		w.p(table, `<tr><td style="border-top:1px solid `, or(b.Color, s.BorderColor), `;font-size:1px;line-height:1px;height:1px;">&nbsp;</td></tr></table>
`)
	case "spacer":
		w.row(b, "0", bg, "left")
		w.p(table, `<tr><td style="height:`, px(b.Height), `;font-size:1px;line-height:1px;">&nbsp;</td></tr></table>
`)
	case "columns":
		w.columns(b, bg)
	case "steps":
		w.steps(b, bg)
	case "callout":
		w.row(b, "16px 40px", bg, "left")
		w.p(table, `<tr>
<td style="padding:18px 20px;background-color:`, or(b.CardBackground, s.Background), `;border-left:4px solid `, or(b.BorderColor, s.AccentColor), `;border-radius:4px;">
`)
		if b.Title != "" {
			w.p(`<p style="margin:0 0 4px 0;`, w.font(16, 24), `font-weight:bold;color:`, s.HeadingColor, `;">`, txt(b.Title), "</p>\n")
		}
		w.p(`<p style="margin:0;`, w.font(15, 24), `color:`, or(b.Color, s.TextColor), `;">`, txt(b.Text), `</p>
</td>
</tr></table>
`)
	case "details":
		w.row(b, "16px 40px", bg, "left")
		w.p(table, `<tr>
<td style="padding:8px 20px;background-color:`, or(b.CardBackground, s.Background), `;border-radius:6px;">
`, table, "\n")
		for i, r := range b.Rows {
			rule := ""
			if i > 0 {
				rule = "border-top:1px solid " + s.BorderColor + ";"
			}
			w.p(`<tr>
<td valign="top" style="padding:10px 0;`, rule, w.font(14, 20), `color:`, s.MutedColor, `;white-space:nowrap;">`, txt(r.Label), `</td>
<td align="right" valign="top" style="padding:10px 0 10px 16px;`, rule, w.font(14, 20), `font-weight:bold;color:`, s.HeadingColor, `;text-align:right;">`, txt(r.Value), `</td>
</tr>
`)
		}
		w.p("</table>\n</td>\n</tr></table>\n")
	case "items":
		w.row(b, "16px 40px 0", bg, "left")
		w.p(table, "\n")
		for _, it := range b.Items {
			w.p(`<tr>
<td valign="top" style="padding:14px 0;border-bottom:1px solid `, s.BorderColor, `;">
<p style="margin:0;`, w.font(15, 22), `font-weight:bold;color:`, s.HeadingColor, `;">`, txt(it.Name), "</p>\n")
			if it.Detail != "" {
				w.p(`<p style="margin:2px 0 0 0;`, w.font(13, 20), `color:`, s.MutedColor, `;">`, txt(it.Detail), "</p>\n")
			}
			w.p(`</td>
<td align="center" valign="top" width="56" style="width:56px;padding:14px 8px;border-bottom:1px solid `, s.BorderColor, `;`, w.font(14, 22), `color:`, s.MutedColor, `;">`, txt(it.Quantity), `</td>
<td align="right" valign="top" width="96" style="width:96px;padding:14px 0;border-bottom:1px solid `, s.BorderColor, `;`, w.font(15, 22), `font-weight:bold;color:`, s.HeadingColor, `;text-align:right;">`, txt(it.Price), `</td>
</tr>
`)
		}
		w.p("</table>\n")
	case "totals":
		w.row(b, "8px 40px 16px", bg, "left")
		w.p(table, "\n")
		for _, r := range b.Rows {
			size, line, weight, color, rule, pad := 14, 20, "normal", s.TextColor, "", "6px 0"
			if r.Strong {
				size, line, weight, color = 18, 26, "bold", s.HeadingColor
				rule, pad = "border-top:2px solid "+s.HeadingColor+";", "12px 0 6px 0"
			}
			w.p(`<tr>
<td style="padding:`, pad, `;`, rule, w.font(size, line), `font-weight:`, weight, `;color:`, color, `;">`, txt(r.Label), `</td>
<td align="right" style="padding:`, pad, `;`, rule, w.font(size, line), `font-weight:`, weight, `;color:`, color, `;text-align:right;">`, txt(r.Value), `</td>
</tr>
`)
		}
		w.p("</table>\n")
	case "image":
		w.image(b, bg)
	case "footer":
		muted := or(b.Color, s.MutedColor)
		w.row(b, "24px 40px 32px", s.Background, "center")
		if b.Text != "" {
			w.p(`<p style="margin:0 0 12px 0;`, w.font(13, 20), `color:`, muted, `;">`, txt(b.Text), "</p>\n")
		}
		w.p(`<p style="margin:0 0 12px 0;`, w.font(13, 20), `color:`, muted, `;"><strong>`, txt(b.Sender), `</strong><br>`, txt(b.Address), `</p>
<p style="margin:0;`, w.font(13, 20), `color:`, muted, `;"><a href="`, attr(b.LinkURL), `" target="_blank" style="color:`, muted, `;text-decoration:underline;">`, txt(b.LinkText), `</a></p>
`)
	}
	w.endRow()
}

// image is an image block: the img's width and height attributes are
// what Outlook sizes it by; in CSS it is as wide, shrinks with the
// column on phones (max-width, height:auto), and is display:block with
// border 0 so no gap or link border shows. The alt text is styled like the
// block's text for clients that block images, and a link wraps the img.
func (w *writer) image(b *Block, bg string) {
	s := w.s
	w.row(b, imagePadding, bg, "center")
	width := b.Width
	if width == 0 {
		width = s.Width - sidePadding(or(b.Padding, imagePadding))
	}
	margin := "0 auto"
	switch or(b.Align, "center") {
	case "left":
		margin = "0"
	case "right":
		margin = "0 0 0 auto"
	}
	if b.URL != "" {
		w.p(`<a href="`, attr(b.URL), `" target="_blank" style="text-decoration:none;">`)
	}
	w.p(`<img src="`, attr(b.Src), `" width="`, strconv.Itoa(width), `"`)
	if b.Height > 0 {
		w.p(` height="`, strconv.Itoa(b.Height), `"`)
	}
	w.p(` alt="`, attr(b.Alt), `" border="0" style="display:block;width:`, px(width), `;max-width:100%;height:auto;margin:`, margin,
		`;border:0;outline:none;text-decoration:none;`, w.font(14, 20), `color:`, or(b.Color, s.MutedColor), `;">`)
	if b.URL != "" {
		w.p(`</a>`)
	}
	w.p("\n")
}

// columns are two or three cells side by side, stacked on phones; with a
// card_background each is a tinted card. The background is the cell's and
// the gutters are cells of their own, so cards in a row share its height;
// the card's padding is an inner table's, so the widths add up.
func (w *writer) columns(b *Block, bg string) {
	s := w.s
	w.row(b, "16px 40px", bg, "left")
	n := len(b.Columns)
	col, gutter := "48%", "4%"
	if n == 3 {
		col, gutter = "31%", "3.5%"
	}
	cell, pad := "", "0"
	if b.CardBackground != "" {
		cell, pad = "background-color:"+b.CardBackground+";border-radius:8px;", "20px"
	}
	w.p(table, "\n<tr>\n")
	for i, c := range b.Columns {
		if i > 0 {
			w.p(`<td class="gutter" width="`, gutter, `" style="width:`, gutter, `;font-size:1px;line-height:1px;">&nbsp;</td>
`)
		}
		w.p(`<td class="col" width="`, col, `" valign="top" style="width:`, col, `;`, cell, `">
`, table, `<tr><td style="padding:`, pad, `;">
`)
		if c.Heading != "" {
			w.p(`<h3 style="margin:0 0 6px 0;`, w.font(17, 24), `font-weight:bold;color:`, s.HeadingColor, `;">`, txt(c.Heading), "</h3>\n")
		}
		if c.Text != "" {
			w.p(`<p style="margin:0;`, w.font(14, 22), `color:`, or(b.Color, s.TextColor), `;">`, txt(c.Text), "</p>\n")
		}
		if c.LinkText != "" {
			w.p(`<p style="margin:10px 0 0 0;`, w.font(14, 22), `font-weight:bold;"><a href="`, attr(c.LinkURL), `" target="_blank" style="color:`, s.AccentColor, `;text-decoration:none;">`, txt(c.LinkText), "</a></p>\n")
		}
		w.p("</td></tr></table>\n</td>\n")
	}
	w.p("</tr>\n</table>\n")
}

// steps are numbered items: a round badge, a title and a line of text.
func (w *writer) steps(b *Block, bg string) {
	s := w.s
	w.row(b, "16px 40px 8px", bg, "left")
	w.p(table, "\n")
	for i, it := range b.Items {
		w.p(`<tr>
<td width="36" valign="top" style="width:36px;padding:0 0 20px 0;">
<table role="presentation" cellpadding="0" cellspacing="0" border="0"><tr><td align="center" width="32" height="32" style="width:32px;height:32px;border-radius:16px;background-color:`, s.AccentColor, `;`, w.font(14, 32), `font-weight:bold;color:#ffffff;text-align:center;">`, strconv.Itoa(i+1), `</td></tr></table>
</td>
<td valign="top" style="padding:4px 0 20px 14px;">
<p style="margin:0;`, w.font(16, 24), `font-weight:bold;color:`, s.HeadingColor, `;">`, txt(it.Title), "</p>\n")
		if it.Text != "" {
			w.p(`<p style="margin:2px 0 0 0;`, w.font(15, 23), `color:`, or(b.Color, s.TextColor), `;">`, txt(it.Text), "</p>\n")
		}
		w.p("</td>\n</tr>\n")
	}
	w.p("</table>\n")
}
