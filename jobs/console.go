package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/smtp"
)

// TypeConsoleMails mails the console's links that wait for their mail
// (team invitations and password resets) and forgets expired sessions. It
// carries nothing: console_tokens says what waits. The API enqueues it
// after an invitation or a reset request and the scheduler every minute,
// as for sender verification.
const TypeConsoleMails = "console:mails"

// NewConsoleMailsTask is the task; Unique keeps one in the queue.
func NewConsoleMailsTask() *asynq.Task {
	return asynq.NewTask(TypeConsoleMails, nil, asynq.Queue(QueueCritical), asynq.Unique(10*time.Second),
		asynq.MaxRetry(5), asynq.Timeout(5*time.Minute))
}

// ConsoleMails handles TypeConsoleMails.
func ConsoleMails(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error {
		if _, err := d.DB.DeleteExpiredSessions(ctx); err != nil {
			return err
		}
		for {
			ids, err := d.DB.PendingConsoleMails(ctx)
			if err != nil || len(ids) == 0 {
				return err
			}
			sentAny := false
			for _, id := range ids {
				sent, err := d.DB.MailConsoleLink(ctx, id, func(ctx context.Context, m mail.ConsoleMail, token string) error {
					path := "/invite/"
					if m.Purpose == mail.TokenReset {
						path = "/reset/"
					}
					subject, text := m.Text(d.PublicURL + path + token)
					res, err := d.mailText(ctx, m.Email, subject, text)
					if err != nil {
						return err
					}
					switch res.Class {
					case smtp.Accepted:
						return nil
					case smtp.Permanent:
						return Permanent(fmt.Errorf("jobs: console %s mail %d refused: %w", m.Purpose, id, res.Err))
					}
					return fmt.Errorf("jobs: console %s mail %d: %v: %w", m.Purpose, id, res.Class, res.Err)
				})
				if IsPermanent(err) {
					// The address will not take it: a new invitation or reset
					// asks again.
					d.Log.WarnContext(ctx, "console mail refused", "token_id", id, "err", err)
					if err := d.DB.DropConsoleMail(ctx, id); err != nil {
						return err
					}
					continue
				}
				if err != nil {
					return err
				}
				sentAny = sentAny || sent
			}
			if !sentAny {
				return nil // the rest are another worker's right now
			}
		}
	}
}
