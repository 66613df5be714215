package console

import (
	"errors"
	"html/template"
	"net/http"
	"strings"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/render"
)

// previewCSP is the policy of the preview, the one answer a page of the
// console may frame: the mail's images (from anywhere, as a mail reader
// shows them) and its inline styles, nothing else, no script, framed by
// this site only.
const previewCSP = "default-src 'none'; img-src https: http: data:; style-src 'unsafe-inline'; frame-ancestors 'self'; " +
	"base-uri 'none'; form-action 'none'; sandbox allow-popups allow-popups-to-escape-sandbox"

// framedHeaders puts the preview's headers in place of the pages' (which forbid
// framing).
func framedHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", previewCSP)
	hd.Set("X-Frame-Options", "SAMEORIGIN")
}

// previewProblems is what the frame shows of a design that does not
// check.
var previewProblems = template.Must(template.New("").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Not shown</title></head>
<body style="font:15px/1.5 system-ui,sans-serif;color:#b42318;margin:24px">
<p><strong>The preview is not shown:</strong></p>
<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>
</body></html>`))

// designPreview answers POST …/preview of the design editor, into the
// page's sandboxed frame: the mail's HTML as a send renders it from the
// design posted (unsaved), with the values of the contact named in
// preview_contact or of the sample contact.
func (h *Handler) designPreview(w http.ResponseWriter, r *http.Request) {
	b, err := h.preview(r)
	framedHeaders(w)
	if msgs := fieldMessages(err); msgs != nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnprocessableEntity)
		previewProblems.Execute(w, msgs)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.HTML)
}

// designText answers POST …/text of the design editor: the plain-text
// part of the same mail, which the page shows beside the frame.
func (h *Handler) designText(w http.ResponseWriter, r *http.Request) {
	b, err := h.preview(r)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if msgs := fieldMessages(err); msgs != nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write([]byte(strings.Join(msgs, "\n") + "\n"))
		return
	}
	if err != nil {
		w.Header().Del("Content-Type")
		h.fail(w, r, err)
		return
	}
	w.Write(b.Text)
}

// preview renders the posted design for the posted contact.
func (h *Handler) preview(r *http.Request) (*render.Buffer, error) {
	rec, err := h.designRecord(r)
	if err != nil {
		return nil, err
	}
	in, err := h.designInput(r, &rec)
	c, cerr := h.previewContact(r)
	if err = mail.JoinInvalid(err, cerr); err != nil {
		return nil, err
	}
	return h.renderDesign(&rec, in, c)
}

// fieldMessages are err's field messages in order, nil when it is none.
func fieldMessages(err error) []string {
	fe := fieldErrors(err)
	if fe == nil {
		return nil
	}
	var e *mail.Error
	errors.As(err, &e)
	var out []string
	for _, k := range e.FieldNames() {
		out = append(out, fe[k]...)
	}
	return out
}
