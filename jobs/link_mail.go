package jobs

import (
	"context"
	"fmt"

	"github.com/mailroom/mailroom/internal/smtp"
)

// linkMails is what mailLinks needs of one kind of link mail (sender
// verifications, console invitations and resets).
type linkMails struct {
	what    string                                     // "verification mail", for errors and the log
	pending func(context.Context) ([]int64, error)     // the ids waiting for their mail
	mail    func(context.Context, int64) (bool, error) // mails one if it still waits and no other worker holds it
	drop    func(context.Context, int64) error         // stops wanting one whose address refused it for good
}

// mailLinks mails every waiting link of m's kind: until none waits, or
// every one left is another worker's right now. A mail refused for good
// is dropped (a new request asks again) rather than retried forever, and
// the others go on.
func (d Deps) mailLinks(ctx context.Context, m linkMails) error {
	for {
		ids, err := m.pending(ctx)
		if err != nil || len(ids) == 0 {
			return err
		}
		sentAny := false
		for _, id := range ids {
			sent, err := m.mail(ctx, id)
			if IsPermanent(err) {
				d.Log.WarnContext(ctx, m.what+" refused", "id", id, "err", err)
				if err := m.drop(ctx, id); err != nil {
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

// sendLinkMail mails text to addr: nil once accepted, a Permanent error
// for a refusal for good, another error to retry.
func (d Deps) sendLinkMail(ctx context.Context, what string, id int64, addr, subject, text string) error {
	res, err := d.mailText(ctx, addr, subject, text)
	if err != nil {
		return err
	}
	switch res.Class {
	case smtp.Accepted:
		return nil
	case smtp.Permanent:
		return Permanent(fmt.Errorf("jobs: %s %d refused: %w", what, id, res.Err))
	}
	return fmt.Errorf("jobs: %s %d: %v: %w", what, id, res.Class, res.Err)
}
