package httpapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// A streamed list's client must take each listWindow elements, or each
// listWindowBytes bytes, whichever comes first, within listIdle: the write
// deadline is renewed at whichever it reaches. For contacts of a few
// fields 250 rows are some 150 KB (about 5 KB/s at the least); for rows
// that carry templates (schedules, up to 2 MB each) it is 1 MB per 30 s,
// about 35 KB/s, however long the list. A slower client is cut, so it
// holds no goroutine and buffer for ever (docs/limits.md).
const (
	listIdle        = 30 * time.Second
	listWindow      = 250
	listWindowBytes = 1 << 20
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
	w       *bufio.Writer // onto a listMeter
	buf     bytes.Buffer
	started bool
	n       int
	// Since the write deadline was last renewed: elements begun, and
	// bytes handed to the connection.
	rows, sent int
}

func newListWriter(c *gin.Context, key string) *listWriter {
	return &listWriter{c: c, key: key}
}

func (l *listWriter) start() {
	l.started = true
	l.rc = http.NewResponseController(l.c.Writer)
	l.c.Header("Content-Type", "application/json; charset=utf-8")
	l.c.Status(http.StatusOK)
	l.renew()
	l.w = bufio.NewWriterSize(listMeter{l}, 16<<10)
	l.w.WriteString(`{"status":"success","message":{`)
	l.buf.Reset()
	encode(&l.buf, l.key)
	l.w.Write(l.buf.Bytes())
	l.w.WriteString(":[")
}

// renew gives the client listIdle more for the next window.
func (l *listWriter) renew() {
	l.rc.SetWriteDeadline(time.Now().Add(listIdle)) // not supported by test recorders: no deadline there
	l.rows, l.sent = 0, 0
}

// listMeter passes a list's bytes to the connection at most
// listWindowBytes at a time, renewing the write deadline before each
// window, so an element of several MB is one window per MB, not one in
// all.
type listMeter struct{ l *listWriter }

func (m listMeter) Write(p []byte) (int, error) {
	l, written := m.l, 0
	for len(p) > 0 {
		if l.sent >= listWindowBytes {
			l.renew()
		}
		n, err := l.c.Writer.Write(p[:min(len(p), listWindowBytes-l.sent)])
		written, l.sent, p = written+n, l.sent+n, p[n:]
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// add writes one element.
func (l *listWriter) add(v any) error {
	if !l.started {
		l.start()
	}
	if l.rows >= listWindow {
		l.renew()
	}
	l.rows++
	if l.n > 0 {
		l.w.WriteByte(',')
	}
	l.n++
	if e, ok := v.(streamedElement); ok {
		if err := e.writeJSON(l.w, &l.buf); err != nil {
			return clientError{err}
		}
		return nil
	}
	l.buf.Reset()
	encode(&l.buf, v)
	if _, err := l.w.Write(l.buf.Bytes()); err != nil {
		return clientError{err}
	}
	return nil
}

// A streamedElement writes its own JSON into a list (buf is scratch), so
// that a large element is never held as JSON whole: an automation
// schedule's templates.
type streamedElement interface {
	writeJSON(w io.Writer, buf *bytes.Buffer) error
}

// jsonPiece is how much of a long string writeJSONString escapes at a
// time.
const jsonPiece = 32 << 10

// writeJSONString writes s as a JSON string exactly as encode would (no
// HTML escaping), escaping jsonPiece bytes at a time, cut between runes,
// so that a long s never exists escaped whole; buf is scratch. w's
// errors must stick (a bufio.Writer, a bytes.Buffer): the last write's
// error is answered.
func writeJSONString(w io.Writer, buf *bytes.Buffer, s string) error {
	io.WriteString(w, `"`)
	for len(s) > 0 {
		n := min(len(s), jsonPiece)
		for n < len(s) && n > jsonPiece-utf8.UTFMax && !utf8.RuneStart(s[n]) {
			n--
		}
		buf.Reset()
		encode(buf, s[:n])
		w.Write(buf.Bytes()[1 : buf.Len()-1]) // without its quotes
		s = s[n:]
	}
	_, err := io.WriteString(w, `"`)
	return err
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
