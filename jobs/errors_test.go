package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/mail"
)

func TestIsPermanent(t *testing.T) {
	t.Parallel()
	var syntax error = json.Unmarshal([]byte("{"), &struct{}{})
	var typ error = json.Unmarshal([]byte(`{"id":"x"}`), &struct{ ID int64 }{})
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"marked", Permanent(errors.New("no")), true},
		{"marked, wrapped", fmt.Errorf("batch 3: %w", Permanent(errors.New("no"))), true},
		{"SkipRetry", fmt.Errorf("x: %w", asynq.SkipRetry), true},
		{"payload syntax", syntax, true},
		{"payload type", typ, true},
		{"invalid data", &mail.Error{Code: mail.EINVALID, Message: "bad"}, true},
		{"gone", mail.NotFound(), true},
		{"conflict", &mail.Error{Code: mail.ECONFLICT, Message: "changed"}, false},
		{"internal", &mail.Error{Code: mail.EINTERNAL}, false},
		{"network", errors.New("dial tcp: connection refused"), false},
		{"shutdown", fmt.Errorf("x: %w", context.Canceled), false},
		{"timeout", context.DeadlineExceeded, false},
		{"marked but cancelled", Permanent(context.Canceled), false},
	}
	for _, tt := range tests {
		if got := IsPermanent(tt.err); got != tt.want {
			t.Errorf("%s: IsPermanent(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// The boundary hands asynq SkipRetry for a permanent failure only, and
// keeps the error's text and chain.
func TestBoundary(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cause := errors.New("refused")
	for _, tt := range []struct {
		err      error
		skip     bool
		keepsErr bool
	}{
		{nil, false, false},
		{errors.New("redis away"), false, true},
		{Permanent(cause), true, true},
		{fmt.Errorf("already: %w", asynq.SkipRetry), true, false},
	} {
		h := boundary(log, func(context.Context, *asynq.Task) error { return tt.err })
		got := h(context.Background(), asynq.NewTask("t", nil))
		if (got == nil) != (tt.err == nil) || errors.Is(got, asynq.SkipRetry) != tt.skip {
			t.Errorf("boundary(%v) = %v", tt.err, got)
		}
		if tt.keepsErr && !errors.Is(got, tt.err) && !errors.Is(got, cause) {
			t.Errorf("boundary(%v) lost the error: %v", tt.err, got)
		}
	}
}
