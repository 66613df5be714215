package httpapi

import (
	"context"
	"errors"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// The unsubscribe link of a mail, {PUBLIC_URL}/unsubscribe/{token}: a GET
// (a person's click, or a link scanner) shows the preferences page and
// changes nothing; a POST of List-Unsubscribe=One-Click (RFC 8058)
// unsubscribes at once; the page's own buttons POST action=leave (with
// group) or action=all. docs/unsubscribe.md.
func (s *Server) preferenceRoutes(r *gin.Engine) {
	r.GET(mail.UnsubscribePath+":token", s.preferencesPage)
	r.POST(mail.UnsubscribePath+":token", s.preferencesPost)
}

// maxPreferenceBody caps a POST to the unsubscribe link: its forms hold
// two short fields.
const maxPreferenceBody = 16 << 10

var preferencesPage = template.Must(template.Must(pages.Clone()).Parse(`{{define "body"}}
<p>Mail to <strong>{{.Email}}</strong>.</p>
{{with .Done}}<p class="status" role="status">{{.}}</p>{{end}}
{{if .Global}}
<p>You are unsubscribed from all mail of this sender: you will get nothing more from it.</p>
{{else}}
{{if .Groups}}<h2>Your lists</h2>
<ul>{{range .Groups}}
<li><h3>{{.Name}}</h3>{{with .Description}}<p>{{.}}</p>{{end}}
{{if .Left}}<p class="muted">You left this list.</p>{{else}}<form method="post"><input type="hidden" name="action" value="leave"><input type="hidden" name="group" value="{{.ID}}"><button type="submit" class="quiet" aria-label="Leave {{.Name}}">Leave this list</button></form>{{end}}
</li>{{end}}
</ul>{{end}}
<h2>All mail</h2>
<form method="post"><input type="hidden" name="action" value="all"><button type="submit">Unsubscribe from everything</button></form>
{{end}}
{{end}}`))

type preferencesData struct {
	Title  string
	Email  mail.Email
	Done   string
	Global bool
	Groups []mail.PreferenceGroup
}

// done texts, chosen by the ?done= code the page redirects to after a
// change (a fixed code: nothing of the URL is shown).
var doneTexts = map[string]string{
	"all":   "Done: you are unsubscribed from everything.",
	"group": "Done: you left the list.",
}

const invalidUnsubscribeLink = "This unsubscribe link is not valid. Use the link of a recent mail, or reply to it asking to be removed."

// token opens the link's token; on failure it answers the not-valid page.
func (s *Server) token(c *gin.Context) (mail.UnsubscribeToken, bool) {
	signer, err := s.signer(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return mail.UnsubscribeToken{}, false
	}
	t, ok := signer.Open(c.Param("token"))
	if !ok {
		pageNotFound(c, invalidUnsubscribeLink)
	}
	return t, ok
}

// preferencesPage answers GET of the unsubscribe link: the page, no change.
func (s *Server) preferencesPage(c *gin.Context) {
	t, ok := s.token(c)
	if !ok {
		return
	}
	p, err := s.db.Preferences(c.Request.Context(), t)
	if err != nil {
		s.fail(c, err)
		return
	}
	writePage(c, http.StatusOK, preferencesPage, preferencesData{Title: "Email preferences", Email: p.Email,
		Done: doneTexts[c.Query("done")], Global: p.Global, Groups: p.Groups})
}

// preferencesPost answers POST of the unsubscribe link: one-click, or a
// button of the page.
func (s *Server) preferencesPost(c *gin.Context) {
	t, ok := s.token(c)
	if !ok {
		return
	}
	form, err := preferenceForm(c)
	if err != nil {
		writeMessage(c, http.StatusBadRequest, "Request not understood", "This request is not one the page sends. Open the link again and use its buttons.")
		return
	}
	ctx := c.Request.Context()
	if form.Get("List-Unsubscribe") == "One-Click" {
		// RFC 8058: the mail's own group when it has one, else everything.
		if _, err := s.db.UnsubscribeOneClick(ctx, t, mail.ViaOneClick); err != nil {
			s.fail(c, err)
			return
		}
		writeMessage(c, http.StatusOK, "Unsubscribed", "You are unsubscribed.")
		return
	}

	var group *int64
	switch form.Get("action") {
	case "all":
	case "leave":
		id, err := strconv.ParseInt(form.Get("group"), 10, 64)
		if err != nil {
			pageNotFound(c, "This list is not one you can leave here.")
			return
		}
		p, err := s.db.Preferences(ctx, t)
		if err != nil {
			s.fail(c, err)
			return
		}
		if p.Group(id) == nil {
			pageNotFound(c, "This list is not one you can leave here.")
			return
		}
		group = &id
	default:
		writeMessage(c, http.StatusBadRequest, "Request not understood", "This request is not one the page sends. Open the link again and use its buttons.")
		return
	}
	if _, err := s.db.UnsubscribeRecipient(ctx, t, group, mail.ViaPreferencesPage); err != nil {
		if mail.ErrorCode(err) == mail.ENOTFOUND {
			pageNotFound(c, "This list is not one you can leave here.")
			return
		}
		s.fail(c, err)
		return
	}
	done := "all"
	if group != nil {
		done = "group"
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusSeeOther, c.Request.URL.Path+"?done="+done)
}

// preferenceForm reads a small url-encoded or multipart body (RFC 8058
// allows both).
func preferenceForm(c *gin.Context) (url.Values, error) {
	r := c.Request
	r.Body = http.MaxBytesReader(c.Writer, r.Body, maxPreferenceBody)
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch strings.ToLower(mt) {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(maxPreferenceBody); err != nil {
			return nil, err
		}
		return url.Values(r.MultipartForm.Value), nil
	case "application/x-www-form-urlencoded", "":
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		return r.PostForm, nil
	}
	return nil, errors.New("unsupported content type")
}

// signer is the token signer, made from the database's secret on first
// use (kept once read).
func (s *Server) signer(ctx context.Context) (*mail.TokenSigner, error) {
	s.signerMu.Lock()
	defer s.signerMu.Unlock()
	if s.tokens == nil {
		key, err := s.db.Secret(ctx, "unsubscribe_token")
		if err != nil {
			return nil, err
		}
		s.tokens = mail.NewTokenSigner(key)
	}
	return s.tokens, nil
}
