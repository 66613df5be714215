package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

//go:embed templates static
var files embed.FS

// assets are the embedded static files, each served under a hash of its
// content, so a page names the exact bytes it was made with and the
// browser may keep them a year.
type assets struct {
	byName map[string]asset // "app.css", "vendor/htmx.min.js"
}

type asset struct {
	hash string
	data []byte
	etag string
}

func loadAssets() (*assets, error) {
	a := &assets{byName: map[string]asset{}}
	err := fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".txt") {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:5])
		a.byName[strings.TrimPrefix(p, "static/")] = asset{hash: h, data: b, etag: `"` + h + `"`}
		return nil
	})
	return a, err
}

// url is the address of static file name; it panics for a name that is
// not embedded, so a typo fails every page's test.
func (a *assets) url(name string) string {
	f, ok := a.byName[name]
	if !ok {
		panic("console: no static file " + name)
	}
	return "/static/" + f.hash + "/" + name
}

// serve answers GET /static/{hash}/{file...}: a year's cache when the hash
// is the file's, a short one for an older page's hash.
func (a *assets) serve(w http.ResponseWriter, r *http.Request) {
	f, ok := a.byName[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	if r.PathValue("hash") == f.hash {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	ct := mime.TypeByExtension(path.Ext(r.PathValue("file")))
	if ct == "" {
		ct = "application/octet-stream"
	}
	hd.Set("Content-Type", ct)
	hd.Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.data))
}

// views are the pages' templates, parsed once: each view with the common
// layout and partials.
type views struct {
	set map[string]*template.Template
}

func parseViews(a *assets) (*views, error) {
	funcs := template.FuncMap{
		"asset": a.url,
		"time":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"first": func(ms []string) string {
			if len(ms) == 0 {
				return ""
			}
			return ms[0]
		},
	}
	common, err := template.New("").Funcs(funcs).ParseFS(files, "templates/common/*.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(files, "templates/views/*.html")
	if err != nil {
		return nil, err
	}
	v := &views{set: map[string]*template.Template{}}
	for _, n := range names {
		t, err := template.Must(common.Clone()).ParseFS(files, n)
		if err != nil {
			return nil, err
		}
		v.set[strings.TrimSuffix(path.Base(n), ".html")] = t
	}
	return v, nil
}

// page is every view's model: the layout's fields and the view's Data.
type page struct {
	Title   string
	Nav     string // the navigation entry to mark
	Session *mail.Session
	CSRF    string
	Nonce   string
	Notice  string              // a line shown above the content
	Errors  map[string][]string // field messages, as the API words them
	Message string              // a form-wide error
	Form    map[string]string   // the values to show again
	Data    any
}

// render writes view with p at status.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, view string, p page) {
	t, ok := h.views.set[view]
	if !ok {
		panic("console: no view " + view)
	}
	st := stateOf(r)
	p.Session, p.CSRF, p.Nonce = st.session, st.csrf, st.nonce
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		h.log.ErrorContext(r.Context(), "page not rendered", "view", view, "err", err)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// problem is a page that only says what went wrong.
func (h *Handler) problem(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	h.render(w, r, status, "problem", page{Title: title, Message: msg})
}

func (h *Handler) forbidden(w http.ResponseWriter, r *http.Request, msg string) {
	h.problem(w, r, http.StatusForbidden, "Forbidden", msg)
}

// fail answers err: a mail error as the API would word it, anything else
// logged and a bare 500.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *mail.Error
	if !errors.As(err, &e) || e.Code == mail.EINTERNAL {
		if r.Context().Err() != nil {
			return // the browser went away
		}
		p := r.URL.Path
		if r.PathValue("token") != "" {
			p = r.Pattern // a link's token stays out of the log
		}
		h.log.ErrorContext(r.Context(), "console request failed", "method", r.Method, "path", p, "err", err)
		h.problem(w, r, http.StatusInternalServerError, "Something went wrong", "The server could not do this. Try again later.")
		return
	}
	switch e.Code {
	case mail.ENOTFOUND:
		h.problem(w, r, http.StatusNotFound, "Not found", "There is no such record in this account.")
	case mail.ECONFLICT:
		h.problem(w, r, http.StatusConflict, "Conflict", e.Message)
	case mail.EFORBIDDEN:
		h.forbidden(w, r, e.Message)
	case mail.ETOOMANY:
		h.problem(w, r, http.StatusTooManyRequests, "Too many requests", e.Message)
	default:
		msg := e.Message
		if msg == "" {
			msg = fmt.Sprint(e.Fields)
		}
		h.problem(w, r, http.StatusUnprocessableEntity, "Invalid", msg)
	}
}

// fieldErrors are err's field messages, or nil when it is no field error.
func fieldErrors(err error) map[string][]string {
	var e *mail.Error
	if errors.As(err, &e) && e.Code == mail.EINVALID && len(e.Fields) > 0 {
		return e.Fields
	}
	return nil
}
