package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/logging"
	"github.com/mailroom/mailroom/internal/mail"
)

// Permanent marks err as one that running the task again cannot fix
// (delivery.Permanent).
func Permanent(err error) error { return delivery.Permanent(err) }

// IsPermanent reports whether err cannot be fixed by a retry: marked
// Permanent, asynq.SkipRetry already, a payload that does not decode, or
// stored data the domain refuses (invalid, not found). Everything else
// (the database or Redis away, a timeout, a shutdown's cancellation, a
// 4xx from SMTP, a conflict) may succeed later.
func IsPermanent(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var me *mail.Error
	switch {
	case err == nil:
		return false
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case delivery.IsMarkedPermanent(err), errors.Is(err, asynq.SkipRetry), errors.As(err, &syntax), errors.As(err, &typ):
		return true
	case errors.As(err, &me):
		return me.Code == mail.EINVALID || me.Code == mail.ENOTFOUND
	}
	return false
}

// boundary is where every task's error is classified, once: a permanent
// one goes to asynq wrapped in SkipRetry (archived, not retried), logged
// with the task; any other is returned as is and retried with backoff.
func boundary(log *slog.Logger, h asynq.HandlerFunc) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		// The task's asynq id is the request id of its log lines.
		if id, ok := asynq.GetTaskID(ctx); ok {
			ctx = logging.WithRequestID(ctx, "task:"+id)
		}
		err := h(ctx, t)
		if err == nil || !IsPermanent(err) || errors.Is(err, asynq.SkipRetry) {
			return err
		}
		if log != nil {
			log.WarnContext(ctx, "task failed for good; not retried", "type", t.Type(), "err", err)
		}
		return fmt.Errorf("%w (%w)", err, asynq.SkipRetry)
	}
}
