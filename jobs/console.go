package jobs

import (
	"context"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/mail"
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
		return d.mailLinks(ctx, linkMails{
			what:    "console link mail",
			pending: d.DB.PendingConsoleMails,
			mail: func(ctx context.Context, id int64) (bool, error) {
				return d.DB.MailConsoleLink(ctx, id, func(ctx context.Context, m mail.ConsoleMail, token string) error {
					path := "/invite/"
					if m.Purpose == mail.TokenReset {
						path = "/reset/"
					}
					subject, text := m.Text(d.PublicURL + path + token)
					return d.sendLinkMail(ctx, "console "+string(m.Purpose)+" mail", id, m.Email, subject, text)
				})
			},
			drop: d.DB.DropConsoleMail,
		})
	}
}
