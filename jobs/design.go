package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/render"
	"github.com/mailroom/mailroom/internal/smtp"
)

// TypeDesignTestSend sends a test mail of the design editor: the mail as
// the editor had it (a design_tests row), to up to five addresses, made
// and sent as a send's mails are (render, DKIM, the transport) but
// counted nowhere: it has no deliveries row, no event, no tracked link or
// open pixel, a random Message-ID, and its subject starts with [Test].
const TypeDesignTestSend = "design:test-send"

// DesignTestPayload names the test mail.
type DesignTestPayload struct {
	ID int64 `json:"id"`
}

// NewDesignTestSendTask is the sending of test mail id; its TaskID makes
// enqueueing it twice one task.
func NewDesignTestSendTask(id int64) *asynq.Task {
	b, _ := json.Marshal(DesignTestPayload{ID: id})
	return asynq.NewTask(TypeDesignTestSend, b, asynq.Queue(QueueCritical), asynq.TaskID(fmt.Sprintf("design-test:%d", id)),
		asynq.MaxRetry(5), asynq.Timeout(2*time.Minute))
}

// DesignTestSend handles TypeDesignTestSend. Each address the transport
// takes (or refuses for good) is recorded, so a retry after a temporary
// failure sends only the others; once all are done the row goes, and with
// it any test mail older than a day. A row that is gone is a test mail
// sent already: nothing to do.
func DesignTestSend(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		var p DesignTestPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return Permanent(err)
		}
		dt, err := d.DB.DesignTest(ctx, p.ID)
		if mail.ErrorCode(err) == mail.ENOTFOUND {
			return nil
		}
		if err != nil {
			return err
		}
		if dt.Sender == nil || dt.Sender.FromEmail == "" {
			d.Log.WarnContext(ctx, "test mail dropped: its sender is gone", "design_test", dt.ID)
			return d.DB.DeleteDesignTest(ctx, dt.ID)
		}
		r := mail.SampleRecipient()
		if dt.ContactID != 0 {
			switch c, err := d.DB.ContactRecipientByID(ctx, dt.UserID, dt.ContactID); {
			case err == nil:
				r = c
			case mail.ErrorCode(err) != mail.ENOTFOUND:
				return err
			} // a contact deleted since: the sample
		}
		tmpl, err := render.Compile(mail.TestSubjectPrefix+dt.Subject, dt.Preheader, dt.HTML)
		if err != nil {
			return Permanent(fmt.Errorf("jobs: test mail %d: %w", dt.ID, err))
		}
		form := render.NewForm(tmpl, dt.Sender, render.FormOptions{MaxBytes: d.Engine.MaxMailBytes})
		from := dt.Sender.FromEmail.Wire()
		key := d.DKIM.ForAccount(dt.UserID, from)
		var b render.Buffer
		again := 0
		for _, to := range dt.Recipients {
			if slices.Contains(dt.Done, string(to)) {
				continue
			}
			// The mail is the contact's, to the test address: ((email))
			// shows it. The preferences link of a test mail leads to a page
			// that says the link is not valid: a test unsubscribes nobody.
			rr := r
			rr.Email = to
			rr.Tokens = mail.Tokens{PreferencesURL: d.PublicURL + mail.UnsubscribePath + "test"}
			data, err := form.BuildChecked(nil, &b, &rr, 0)
			if err != nil {
				d.Log.WarnContext(ctx, "test mail not sent", "design_test", dt.ID, "err", err)
				if err := d.DB.DesignTestSent(ctx, dt.ID, string(to)); err != nil {
					return err
				}
				continue
			}
			if key != nil {
				if data, err = key.Sign(nil, data); err != nil {
					return Permanent(err)
				}
			}
			res := d.Transport.Send(ctx, &smtp.Message{From: from, To: to.Wire(), Data: data})
			switch res.Class {
			case smtp.Accepted:
			case smtp.Permanent:
				d.Log.WarnContext(ctx, "test mail refused", "design_test", dt.ID, "err", res.Err)
			default:
				d.Log.WarnContext(ctx, "test mail put off", "design_test", dt.ID, "class", res.Class.String(), "err", res.Err)
				again++
				continue
			}
			if err := d.DB.DesignTestSent(ctx, dt.ID, string(to)); err != nil {
				return err
			}
		}
		if again > 0 {
			return fmt.Errorf("jobs: test mail %d: %d addresses to try again", dt.ID, again)
		}
		return d.DB.DeleteDesignTest(ctx, dt.ID)
	}
}
