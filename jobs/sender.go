package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp"
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
		for {
			ids, err := d.DB.PendingSenderVerifications(ctx)
			if err != nil || len(ids) == 0 {
				return err
			}
			sentAny := false
			for _, id := range ids {
				sent, err := d.DB.MailSenderVerification(ctx, id, VerificationTTL, func(ctx context.Context, s postgres.SenderToVerify, token string) error {
					subject, text := mail.VerificationMail(s.FromName, s.FromEmail, d.PublicURL+"/senders/verify/"+token)
					res, err := d.mailText(ctx, s.FromEmail, subject, text)
					if err != nil {
						return err
					}
					switch res.Class {
					case smtp.Accepted:
						return nil
					case smtp.Permanent:
						return Permanent(fmt.Errorf("jobs: verification mail to sender %d refused: %w", id, res.Err))
					}
					return fmt.Errorf("jobs: verification mail to sender %d: %v: %w", id, res.Class, res.Err)
				})
				if IsPermanent(err) {
					// This address will not take it: stop wanting the mail
					// (resend-mail asks again) rather than retry it forever,
					// and go on with the other senders.
					d.Log.WarnContext(ctx, "verification mail refused", "sender_id", id, "err", err)
					if err := d.DB.DropSenderVerification(ctx, id); err != nil {
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
