package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// Wordings of an absent record; each route says which it uses.
const (
	recordNotFound      = "Record Not Found"
	recordNotFoundLower = "Record not found"
)

const notFoundKey = "httpapi.notFound"

// notFoundText makes the routes it guards answer an absent record with text.
// longWrite lifts the server's write timeout (HTTP_WRITE_TIMEOUT) for a
// route whose work can outlast it: a segment save waits for its rebuild,
// which waits for an import into the type; a contact type or custom field
// delete takes every membership of its segments with it. Cut off, the
// client got no answer for a change that was committed (a segment saved
// during a 200,000-row import answered after 58-181 s; a type of 829,000
// contacts and 15.7 million memberships was deleted in 147 s). The
// answers are small, so a slow reader holds little.
func longWrite(c *gin.Context) {
	http.NewResponseController(c.Writer).SetWriteDeadline(time.Time{}) // not supported by test recorders
	c.Next()
}

func notFoundText(text string) gin.HandlerFunc {
	return func(c *gin.Context) { c.Set(notFoundKey, text) }
}

// statusOf is the only map from error codes to HTTP statuses.
var statusOf = map[string]int{
	mail.EINVALID:      http.StatusUnprocessableEntity,
	mail.ENOTFOUND:     http.StatusNotFound,
	mail.ECONFLICT:     http.StatusConflict,
	mail.EUNAUTHORIZED: http.StatusUnauthorized,
	mail.ETOOMANY:      http.StatusTooManyRequests,
	mail.EINTERNAL:     http.StatusInternalServerError,
}

// statusClientClosed is what the access log records for a request whose
// client went away before its answer (nginx's 499).
const statusClientClosed = 499

// fail answers err in the failure envelope. A *mail.Error is shown to the
// user; anything else is logged and answered as a bare 500, unless the
// client has gone (499, nothing written).
func (s *Server) fail(c *gin.Context, err error) {
	var e *mail.Error
	if (!errors.As(err, &e) || e.Code == mail.EINTERNAL) && c.Request.Context().Err() != nil {
		// The client hung up (or the server is stopping) and the work was cut
		// short by it: nobody reads an answer, and it is no server fault.
		s.log.InfoContext(c.Request.Context(), "request abandoned by its client",
			slog.String("method", c.Request.Method), slog.String("path", c.FullPath()), slog.Any("err", err))
		c.AbortWithStatus(statusClientClosed)
		return
	}
	if !errors.As(err, &e) || e.Code == mail.EINTERNAL {
		s.log.ErrorContext(c.Request.Context(), "request failed",
			slog.String("method", c.Request.Method), slog.String("path", c.FullPath()), slog.Any("err", err))
		failed(c, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	status := statusOf[e.Code]
	switch {
	case len(e.Fields) > 0:
		failed(c, status, fields{names: e.FieldNames(), m: e.Fields})
	case e.Code == mail.ENOTFOUND && e.Message == "":
		failed(c, status, c.GetString(notFoundKey))
	case e.Code == mail.ETOOMANY && e.Message == "":
		failed(c, status, "Too Many Requests.")
	default:
		failed(c, status, e.Message)
	}
}
