package httpapi

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// A streamed list's client must take each listWindow elements within
// listIdle (for contacts of a few fields, some 150 KB: about 5 KB/s at the
// least; more with many custom fields); a slower one is cut, so it holds
// no goroutine and buffer for ever.
const (
	listIdle   = 30 * time.Second
	listWindow = 250
)

// clientError is a failure to write to the client (gone, or too slow):
// the client's doing, not the server's.
type clientError struct{ err error }

func (e clientError) Error() string { return "writing to the client: " + e.err.Error() }

// listWriter streams {"status":"success","message":{"<key>":[…]}} one
// element at a time, so a list's memory does not grow with the account.
// Nothing is written before the first element: an error before it is still
// answered with the failure envelope.
type listWriter struct {
	c       *gin.Context
	rc      *http.ResponseController
	key     string
	w       *bufio.Writer
	buf     bytes.Buffer
	started bool
	n       int
}

func newListWriter(c *gin.Context, key string) *listWriter {
	return &listWriter{c: c, key: key}
}

func (l *listWriter) start() {
	l.started = true
	l.rc = http.NewResponseController(l.c.Writer)
	l.c.Header("Content-Type", "application/json; charset=utf-8")
	l.c.Status(http.StatusOK)
	l.w = bufio.NewWriterSize(l.c.Writer, 16<<10)
	l.w.WriteString(`{"status":"success","message":{`)
	l.buf.Reset()
	encode(&l.buf, l.key)
	l.w.Write(l.buf.Bytes())
	l.w.WriteString(":[")
}

// add writes one element.
func (l *listWriter) add(v any) error {
	if !l.started {
		l.start()
	}
	if l.n%listWindow == 0 {
		l.rc.SetWriteDeadline(time.Now().Add(listIdle))
	}
	if l.n > 0 {
		l.w.WriteByte(',')
	}
	l.n++
	l.buf.Reset()
	encode(&l.buf, v)
	if _, err := l.w.Write(l.buf.Bytes()); err != nil {
		return clientError{err}
	}
	return nil
}

// finish closes the list, with pagination when the list was paged; err is
// the listing's error.
func (s *Server) finishList(l *listWriter, pg *mail.Page, total int64, err error) {
	if err != nil {
		if !l.started {
			s.fail(l.c, err)
			return
		}
		// The status is sent; cut the response so the client sees a
		// broken body rather than a truncated list that parses.
		if errors.As(err, new(clientError)) {
			s.log.InfoContext(l.c.Request.Context(), "list client left or too slow", "path", l.c.FullPath(), "err", err)
		} else {
			s.log.ErrorContext(l.c.Request.Context(), "list failed mid-stream", "path", l.c.FullPath(), "err", err)
		}
		l.w.Flush()
		panic(http.ErrAbortHandler)
	}
	if !l.started {
		l.start()
	}
	l.w.WriteByte(']')
	if pg != nil {
		l.w.WriteString(`,"pagination":`)
		l.buf.Reset()
		encode(&l.buf, paged(pg, total))
		l.w.Write(l.buf.Bytes())
	}
	l.w.WriteString("}}")
	l.w.Flush()
	l.c.Abort()
}
