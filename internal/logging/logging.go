// Package logging builds the process's one slog logger, which writes the
// request id carried by a context (WithRequestID) into every line logged
// with that context.
package logging

import (
	"context"
	"io"
	"log/slog"
	"os"
)

// New returns a logger at level ("debug", "info", "warn", "error") writing
// JSON, or text when w is a terminal.
func New(w io.Writer, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lv}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return slog.New(requestIDs{slog.NewTextHandler(w, opts)})
		}
	}
	return slog.New(requestIDs{slog.NewJSONHandler(w, opts)})
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying request id id: lines logged with it
// (or a context made from it) hold "request_id".
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request id ctx carries, "" when none.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// requestIDs adds the context's request id to each record.
type requestIDs struct{ slog.Handler }

func (h requestIDs) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDs) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDs{h.Handler.WithAttrs(as)}
}

func (h requestIDs) WithGroup(name string) slog.Handler {
	return requestIDs{h.Handler.WithGroup(name)}
}
