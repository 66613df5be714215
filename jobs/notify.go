package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/smtp"
)

// TypeNotifyEvents mails the events not notified yet to each account's
// notification recipients. It carries nothing: the events table is the
// queue. The worker's scheduler enqueues it every minute, so an event
// whose task was lost is mailed within a minute.
const TypeNotifyEvents = "events:notify"

// NewNotifyEventsTask is the task; Unique keeps one in the queue however
// many schedulers run.
func NewNotifyEventsTask() *asynq.Task {
	return asynq.NewTask(TypeNotifyEvents, nil, asynq.Queue(QueueCritical), asynq.Unique(50*time.Second),
		asynq.MaxRetry(3), asynq.Timeout(5*time.Minute))
}

// notifyBatch is how many events one transaction claims.
const notifyBatch = 100

// NotifyEvents handles TypeNotifyEvents: batches of events until none is
// left. Each event's mail goes to every notification recipient of its
// account; a transport failure ends the run with an error (asynq retries
// it) and leaves that event to the next run.
func NotifyEvents(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error {
		for {
			n, err := d.DB.NotifyEvents(ctx, notifyBatch, func(ctx context.Context, e mail.Event, to []string) error {
				subject, text := e.Notice()
				for _, addr := range to {
					res, err := d.mailText(ctx, addr, subject, text)
					if IsPermanent(err) {
						// No mail can be made for this address: it must
						// not hold the others' mail either.
						d.Log.WarnContext(ctx, "notification not composed", "event_id", e.ID, "err", err)
						continue
					}
					if err != nil {
						return err
					}
					if res.Class != smtp.Accepted {
						if res.Class == smtp.Permanent {
							// This address will never take it: not a reason to
							// hold the others' mail.
							d.Log.WarnContext(ctx, "notification refused", "event_id", e.ID, "code", res.Code, "err", res.Err)
							continue
						}
						return fmt.Errorf("jobs: notify event %d: %w", e.ID, res.Err)
					}
				}
				return nil
			})
			if err != nil || n < notifyBatch {
				return err
			}
		}
	}
}

// mailText composes a plain-text mail from NotifyFrom, DKIM-signs it when
// its domain has a key, and hands it to the transport; err is a mail that
// could not be composed or signed (Permanent).
func (d Deps) mailText(ctx context.Context, to, subject, text string) (smtp.Result, error) {
	m, err := smtp.Compose(d.NotifyFrom, to, subject, text)
	if err != nil {
		return smtp.Result{}, Permanent(err)
	}
	if k := d.DKIM.For(m.From); k != nil {
		if m.Data, err = k.Sign(nil, m.Data); err != nil {
			return smtp.Result{}, Permanent(err)
		}
	}
	return d.Transport.Send(ctx, m), nil
}
