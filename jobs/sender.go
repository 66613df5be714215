package jobs

import (
	"context"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

// TypeVerifySenders mails a verification link to every sender whose mail
// is wanted and not sent since (a new sender, a changed from_email,
// resend-mail). It carries nothing: the senders table says who waits. The
// API enqueues it after such a change and the scheduler every minute, so
// a lost task, or Redis down when the API answered, delays a mail by a
// minute at most.
const TypeVerifySenders = "senders:verify"

// VerificationTTL is how long a verification link works.
const VerificationTTL = 48 * time.Hour

// NewVerifySendersTask is the task; Unique keeps one in the queue.
func NewVerifySendersTask() *asynq.Task {
	return asynq.NewTask(TypeVerifySenders, nil, asynq.Queue(QueueCritical), asynq.Unique(10*time.Second),
		asynq.MaxRetry(5), asynq.Timeout(5*time.Minute))
}

// VerifySenders handles TypeVerifySenders.
func VerifySenders(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error {
		return d.mailLinks(ctx, linkMails{
			what:    "verification mail to sender",
			pending: d.DB.PendingSenderVerifications,
			mail: func(ctx context.Context, id int64) (bool, error) {
				return d.DB.MailSenderVerification(ctx, id, VerificationTTL, func(ctx context.Context, s postgres.SenderToVerify, token string) error {
					subject, text := mail.VerificationMail(s.FromName, s.FromEmail, d.PublicURL+"/senders/verify/"+token)
					return d.sendLinkMail(ctx, "verification mail to sender", id, s.FromEmail, subject, text)
				})
			},
			drop: d.DB.DropSenderVerification,
		})
	}
}
