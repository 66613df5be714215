package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// The design editor's storage: a schedule's or a single send's design
// read and saved, the contact a preview shows, and the test mails waiting
// for the worker (docs/console.md).

// ScheduleDesign returns the design of a live schedule (by its utr) of a
// live automation of the account, or ENOTFOUND.
func (d *DB) ScheduleDesign(ctx context.Context, userID int64, utr string) (mail.DesignRecord, error) {
	r, err := d.q.ScheduleDesign(ctx, db.ScheduleDesignParams{Utr: utr, UserID: userID})
	if err != nil {
		return mail.DesignRecord{}, err
	}
	out := mail.DesignRecord{Kind: mail.DesignSchedule, UTR: r.Utr, Name: r.AutomationName, AutomationUTR: r.AutomationUtr,
		Subject: r.Subject, SenderID: r.SenderID, TemplateID: r.TemplateID, TemplateJSON: r.TemplateJson, TemplateHTML: r.TemplateHtml}
	if r.HasSender {
		out.Sender = &mail.Sender{FromName: r.FromName, FromEmail: mail.Email(r.FromEmail), ReplyTo: mail.Email(r.ReplyToEmail),
			Address: r.CompanyAddress, City: r.City, State: r.State, Country: r.Country}
	}
	return out, nil
}

// SendDesign returns the design of a live single send of the account, or
// ENOTFOUND.
func (d *DB) SendDesign(ctx context.Context, userID int64, utr string) (mail.DesignRecord, error) {
	s, err := d.SingleSend(ctx, userID, utr)
	if err != nil {
		return mail.DesignRecord{}, err
	}
	return mail.DesignRecord{Kind: mail.DesignSingleSend, UTR: s.UTR, Name: s.Name, Subject: s.Subject, Preheader: s.Preheader,
		SenderID: s.SenderID, Sender: s.Sender, TemplateID: s.TemplateID, TemplateJSON: s.TemplateJSON,
		TemplateHTML: s.TemplateHTML, Status: s.Status}, nil
}

// SaveScheduleDesign writes a design to a live schedule (by its utr) of a
// live automation of the account: ENOTFOUND when there is none. The
// automation's later mails are made from it.
func (d *DB) SaveScheduleDesign(ctx context.Context, userID int64, utr string, in mail.DesignInput) error {
	n, err := d.q.SaveScheduleDesign(ctx, db.SaveScheduleDesignParams{TemplateJson: in.TemplateJSON,
		TemplateHtml: in.TemplateHTML, Utr: utr, UserID: userID})
	if err == nil && n == 0 {
		err = mail.NotFound()
	}
	return err
}

// SaveSendDesign writes a design to a live draft or ready single send of
// the account, which keeps its status and version: ENOTFOUND when there is
// no such send, ECONFLICT (as the API's update) when it is running or
// completed.
func (d *DB) SaveSendDesign(ctx context.Context, userID int64, utr string, in mail.DesignInput) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		s, err := q.LockSingleSend(ctx, db.LockSingleSendParams{Utr: utr, UserID: userID})
		if err != nil {
			return translate(err)
		}
		if err := changeable(s.Status, "updated"); err != nil {
			return err
		}
		return q.SaveSendDesign(ctx, db.SaveSendDesignParams{TemplateJson: in.TemplateJSON, TemplateHtml: in.TemplateHTML, ID: s.ID})
	})
}

// ContactRecipient returns a live contact of the account by address as a
// mail's recipient (its fields and custom values), or ENOTFOUND.
func (d *DB) ContactRecipient(ctx context.Context, userID int64, email mail.Email) (mail.Recipient, error) {
	r, err := d.q.ContactRecipient(ctx, db.ContactRecipientParams{UserID: userID, Email: string(email)})
	if err != nil {
		return mail.Recipient{}, err
	}
	return d.recipient(db.ContactRecipientByIDRow(r)), nil
}

// ContactRecipientByID is ContactRecipient by the contact's id.
func (d *DB) ContactRecipientByID(ctx context.Context, userID, id int64) (mail.Recipient, error) {
	r, err := d.q.ContactRecipientByID(ctx, db.ContactRecipientByIDParams{ID: id, UserID: userID})
	if err != nil {
		return mail.Recipient{}, err
	}
	return d.recipient(r), nil
}

func (d *DB) recipient(r db.ContactRecipientByIDRow) mail.Recipient {
	custom, err := customValues(r.Custom)
	if err != nil {
		d.log.Warn("contact custom values do not read", "contact_id", r.ID, "err", err)
	}
	return mail.Recipient{ContactID: r.ID, Email: mail.Email(r.Email), FirstName: r.FirstName, LastName: r.LastName,
		AltEmail: r.AltEmail, Country: r.Country, State: r.State, City: r.City, AddressLine1: r.AddressLine1,
		AddressLine2: r.AddressLine2, StateProvinceRegion: r.StateProvinceRegion, PostalCode: r.PostalCode, Custom: custom}
}

// CreateDesignTest stores a test mail for the worker and returns its id.
func (d *DB) CreateDesignTest(ctx context.Context, t mail.DesignTest) (int64, error) {
	var contact *int64
	if t.ContactID != 0 {
		contact = &t.ContactID
	}
	return d.q.CreateDesignTest(ctx, db.CreateDesignTestParams{UserID: t.UserID, SenderID: t.SenderID, ContactID: contact,
		Subject: t.Subject, Preheader: t.Preheader, Html: t.HTML, Recipients: mail.EmailStrings(t.Recipients)})
}

// DesignTest returns a waiting test mail with its sender, or ENOTFOUND
// (sent, or older than a day).
func (d *DB) DesignTest(ctx context.Context, id int64) (mail.DesignTest, error) {
	r, err := d.q.DesignTest(ctx, id)
	if err != nil {
		return mail.DesignTest{}, err
	}
	t := mail.DesignTest{ID: r.ID, UserID: r.UserID, Subject: r.Subject, Preheader: r.Preheader, HTML: r.Html, Done: r.Done}
	if r.ContactID != nil {
		t.ContactID = *r.ContactID
	}
	for _, e := range r.Recipients {
		t.Recipients = append(t.Recipients, mail.Email(e))
	}
	if r.HasSender {
		t.Sender = &mail.Sender{FromName: r.FromName, FromEmail: mail.Email(r.FromEmail), ReplyTo: mail.Email(r.ReplyToEmail),
			Address: r.CompanyAddress, City: r.City, State: r.State, Country: r.Country}
	}
	return t, nil
}

// DesignTestSent records that the test mail went to (or was refused for
// good by) email, so a retry does not send it again.
func (d *DB) DesignTestSent(ctx context.Context, id int64, email string) error {
	return d.q.DesignTestSent(ctx, db.DesignTestSentParams{ID: id, Email: email})
}

// DeleteDesignTest forgets a test mail whose addresses are all done, and
// any test mail older than a day.
func (d *DB) DeleteDesignTest(ctx context.Context, id int64) error {
	return d.q.DeleteDesignTests(ctx, id)
}

// AddMediaUpload records that account userID uploaded the image key of
// size bytes, unless its images would then take more than quota bytes
// (quota 0: no limit). An image it uploaded before is not counted again.
// It returns the bytes the account's images take, with this one when it
// went in, and whether it did.
func (d *DB) AddMediaUpload(ctx context.Context, userID int64, key string, size, quota int64) (used int64, ok bool, err error) {
	err = d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		if err := q.LockMediaUploads(ctx, userID); err != nil {
			return err
		}
		got, err := q.MediaUploaded(ctx, db.MediaUploadedParams{UserID: userID, Key: key})
		switch {
		case err != nil:
			return err
		case got.Has:
			used, ok = got.Used, true
			return nil
		case quota > 0 && got.Used+size > quota:
			used = got.Used
			return nil
		}
		used, ok = got.Used+size, true
		return q.AddMediaUpload(ctx, db.AddMediaUploadParams{UserID: userID, Key: key, Bytes: size})
	})
	return used, ok, err
}
