package httpapi

import (
	"context"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// Event webhooks (docs/webhooks.md): an account's endpoints that receive
// its mails' events, signed with a secret shown once, in the save's
// answer.
func (s *Server) webhookRoutes(api *gin.RouterGroup) {
	api.GET("/webhooks", s.listWebhooks)
	api.POST("/webhooks/save", s.saveWebhook)
	api.POST("/webhooks/update", s.updateWebhook)
	api.DELETE("/webhooks/delete", s.deleteByID("id", s.db.DeleteWebhook, deleted))
	api.GET("/webhooks/deliveries", s.webhookDeliveries)
}

// webhookJSON is a webhook as the API shows it: never its secret.
type webhookJSON struct {
	ID        int64    `json:"id"`
	UserID    int64    `json:"user_id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	CreatedAt string   `json:"created_at"`
	UpdatedAt string   `json:"updated_at"`
	DeletedAt *string  `json:"deleted_at"` // null: deleted webhooks are never listed
}

// listWebhooks answers GET /webhooks.
func (s *Server) listWebhooks(c *gin.Context) {
	page, err := readPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	rows, err := s.db.Webhooks(c.Request.Context(), userID(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	total := int64(len(rows))
	if page != nil { // an account has a few: paged here
		from := min(page.Offset(), total)
		rows = rows[from:min(from+page.Size, total)]
	}
	out := make([]webhookJSON, len(rows))
	for i, w := range rows {
		out[i] = webhookJSON{ID: w.ID, UserID: w.UserID, URL: w.URL, Events: w.Events.Names(),
			CreatedAt: ts(w.CreatedAt), UpdatedAt: ts(w.UpdatedAt)}
	}
	ok(c, struct {
		Webhooks   []webhookJSON `json:"webhooks"`
		Pagination *pagination   `json:"pagination,omitempty"`
	}{out, paged(page, total)})
}

// parseWebhook reads a webhook save or update: url, events[]. Unless
// private targets are allowed, a URL whose host name resolves to any
// address the worker's dialer would refuse is refused too.
func (s *Server) parseWebhook(ctx context.Context, f form) (mail.WebhookInput, error) {
	in, err := mail.ParseWebhook(f.str("url"), f.list("events"), s.cfg.AllowPrivateWebhooks)
	if in.URL == "" || s.cfg.AllowPrivateWebhooks {
		return in, err
	}
	if name := mail.WebhookURLName(in.URL); name != "" && s.resolvesInside(ctx, name) {
		in.URL = ""
		return in, mail.JoinInvalid(mail.Invalid("url", mail.PrivateWebhookMessage), err)
	}
	return in, err
}

// webhookLookupTimeout bounds the resolving of a webhook's host at save.
const webhookLookupTimeout = 2 * time.Second

// resolvesInside reports whether name resolves to any address
// mail.PrivateAddr refuses. A name that does not resolve (no such host,
// no answer within webhookLookupTimeout) does not: DNS may answer
// otherwise by the time the worker posts, and its dialer judges the
// addresses it connects to.
func (s *Server) resolvesInside(ctx context.Context, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, webhookLookupTimeout)
	defer cancel()
	addrs, err := s.lookupHost(ctx, name)
	if err != nil {
		s.log.DebugContext(ctx, "webhook host not resolved at save", "host", name, "err", err)
	}
	return slices.ContainsFunc(addrs, mail.PrivateAddr)
}

// saveWebhook answers POST /webhooks/save with the new webhook's id and
// its secret: the only time the secret is shown.
func (s *Server) saveWebhook(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	in, err := s.parseWebhook(c.Request.Context(), f)
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	id, secret, err := s.db.CreateWebhook(c.Request.Context(), userID(c), in)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, struct {
		ID     int64  `json:"id"`
		Secret string `json:"secret"`
	}{id, secret})
}

// updateWebhook answers POST /webhooks/update: id, and the fields of a
// save (events absent: every kind), the secret kept.
func (s *Server) updateWebhook(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, idErr := parseID("id", f.str("id"))
	in, err := s.parseWebhook(c.Request.Context(), f)
	if err := f.checked(mail.JoinInvalid(idErr, err)); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.UpdateWebhook(c.Request.Context(), userID(c), id, in); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Updated Successfully")
}

// webhookAttemptJSON is one POST to a webhook.
type webhookAttemptJSON struct {
	ID          int64  `json:"id"`
	AttemptedAt string `json:"attempted_at"`
	StatusCode  *int   `json:"status_code"`
	LatencyMS   int    `json:"latency_ms"`
	Error       string `json:"error"`
	Events      int    `json:"events"`
	Result      string `json:"result"`
}

// webhookDeliveries answers GET /webhooks/deliveries?id=: the webhook's
// last attempts (up to 100), newest first.
func (s *Server) webhookDeliveries(c *gin.Context) {
	id, err := queryID(c, "id")
	if err != nil {
		s.fail(c, err)
		return
	}
	rows, err := s.db.WebhookAttempts(c.Request.Context(), userID(c), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]webhookAttemptJSON, len(rows))
	for i, a := range rows {
		out[i] = webhookAttemptJSON{ID: a.ID, AttemptedAt: ts(a.At), StatusCode: a.StatusCode, LatencyMS: a.LatencyMS,
			Error: a.Error, Events: a.Events, Result: a.Result.String()}
	}
	ok(c, gin.H{"deliveries": out})
}
