package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Automations and their schedules as the API writes them; enrolling
// contacts and stepping them through the schedules is the engine's
// (enrollment.go). Every change of an automation's status or schedules
// locks its row, so set-live, pause, delete and a schedule added see one
// another whole (docs/automations.md).

// CreateAutomation stores a new draft automation and answers its utr.
func (d *DB) CreateAutomation(ctx context.Context, userID int64, in mail.AutomationInput) (string, error) {
	utr := mail.NewUTR()
	_, err := d.q.CreateAutomation(ctx, db.CreateAutomationParams{UserID: userID, Utr: utr, AutomationName: in.Name,
		AutomationType: in.Type, AutomationFor: in.Target.ID, AutomationForTable: in.Target.Table,
		ExitCriteria: in.ExitCriteria, UnsubscribeGroupID: in.GroupID})
	return utr, err
}

// DuplicateAutomation copies a live automation of the account and its
// schedules as a draft: new utrs, no live_at, every counter at zero. It
// answers the copy's utr.
func (d *DB) DuplicateAutomation(ctx context.Context, userID int64, utr string) (string, error) {
	copyUTR := mail.NewUTR()
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		src, err := q.LockAutomationForCopy(ctx, db.LockAutomationForCopyParams{Utr: utr, UserID: userID})
		if err != nil {
			return err
		}
		dst, err := q.DuplicateAutomation(ctx, db.DuplicateAutomationParams{Utr: copyUTR, ID: src})
		if err != nil {
			return err
		}
		return q.DuplicateAutomationSchedules(ctx, db.DuplicateAutomationSchedulesParams{DstID: dst, SrcID: src})
	})
	return copyUTR, err
}

// SetAutomationLive sets a draft or paused automation of the account live
// (live_at now) and records the automation.set_live event. ENOTFOUND when
// there is no such automation; ECONFLICT when it has no unsubscribe
// group, no schedule, or its contact type or segment is gone. A live
// automation is left as it is (Changed false).
func (d *DB) SetAutomationLive(ctx context.Context, userID int64, utr string) (mail.SetLive, error) {
	var out mail.SetLive
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		a, err := q.LockAutomation(ctx, db.LockAutomationParams{Utr: utr, UserID: userID})
		if err != nil {
			return err
		}
		out = mail.SetLive{ID: a.ID}
		if a.Status == mail.AutomationLive {
			return nil
		}
		check, err := q.AutomationLiveCheck(ctx, a.ID)
		switch {
		case err != nil:
			return err
		case !check.GroupOk:
			return mail.Errorf(mail.ECONFLICT, "An unsubscribe group is required to live the automation.")
		case !check.HasSchedule:
			return mail.Errorf(mail.ECONFLICT, "At least one schedule is required to live the automation.")
		case !check.TargetOk:
			return mail.Errorf(mail.ECONFLICT, "The contact type or segment of the automation no longer exists.")
		}
		out.Changed = true
		return q.SetAutomationLive(ctx, a.ID)
	})
	return out, err
}

// PauseAutomation sets a live automation of the account back to 0 and
// records the automation.paused event. ENOTFOUND when there is no such
// automation; ECONFLICT when it is not live.
func (d *DB) PauseAutomation(ctx context.Context, userID int64, utr string) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		a, err := q.LockAutomation(ctx, db.LockAutomationParams{Utr: utr, UserID: userID})
		if err != nil {
			return translate(err)
		}
		if a.Status != mail.AutomationLive {
			return mail.Errorf(mail.ECONFLICT, "Only live automations can be paused.")
		}
		return q.PauseAutomation(ctx, a.ID)
	})
}

// DeleteAutomation soft-deletes a live automation of the account, live or
// not; its active enrollments leave. ENOTFOUND when there is none.
func (d *DB) DeleteAutomation(ctx context.Context, userID int64, utr string) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		a, err := q.LockAutomation(ctx, db.LockAutomationParams{Utr: utr, UserID: userID})
		if err != nil {
			return translate(err)
		}
		return q.DeleteAutomations(ctx, []int64{a.ID})
	})
}

// DeleteAutomations soft-deletes automations of the account, all or
// none: ENOTFOUND when an id is not a live automation of the account.
func (d *DB) DeleteAutomations(ctx context.Context, userID int64, ids []int64) error {
	ids = sortedUnique(ids)
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		if err := probeByID(ctx, tx, len(ids)); err != nil {
			return err
		}
		rows, err := q.LockAutomationsByID(ctx, db.LockAutomationsByIDParams{Ids: ids, UserID: userID})
		if err != nil {
			return err
		}
		if len(rows) != len(ids) {
			return mail.NotFound()
		}
		return q.DeleteAutomations(ctx, ids)
	})
}

// automationColumns are an automation as the API shows it, with the number
// of its live schedules.
const automationColumns = `
SELECT a.id, a.user_id, a.utr::text, a.automation_name, a.automation_type, a.automation_for, a.automation_for_table,
    a.exit_criteria, a.unsubscribe_group_id, a.status, a.live_at, a.total_triggered, a.total_delivered,
    a.total_unique_opens, a.total_opens, a.total_bounces, a.total_unsubscribe, a.created_at, a.updated_at,
    (SELECT count(*) FROM automation_schedules s WHERE s.automation_id = a.id AND s.deleted_at IS NULL)`

// listAutomationsSQL reads the account's live automations: the page's
// ids from automations_user alone, then those rows.
var listAutomationsSQL = automationColumns + `
FROM (SELECT id FROM automations WHERE user_id = $1 AND deleted_at IS NULL AND ` + keyset("id", 1) + `) page
JOIN automations a ON a.id = page.id
ORDER BY a.id`

var automationByUTRSQL = automationColumns + `
FROM automations a
WHERE a.utr = $2::text::uuid AND a.user_id = $1 AND a.deleted_at IS NULL`

func scanAutomation(row pgx.Row, a *mail.Automation) error {
	return row.Scan(&a.ID, &a.UserID, &a.UTR, &a.Name, &a.Type, &a.Target.ID, &a.Target.Table, &a.ExitCriteria,
		&a.GroupID, &a.Status, &a.LiveAt, &a.Triggered, &a.Delivered, &a.UniqueOpens, &a.TotalOpens, &a.Bounces,
		&a.Unsubscribes, &a.CreatedAt, &a.UpdatedAt, &a.ScheduleCount)
}

// Automation returns a live automation of the account by utr, or
// ENOTFOUND.
func (d *DB) Automation(ctx context.Context, userID int64, utr string) (mail.Automation, error) {
	var a mail.Automation
	err := scanAutomation(d.conn.QueryRow(ctx, automationByUTRSQL, userID, utr), &a)
	return a, err
}

// ListAutomations calls fn with each live automation of the account, in
// id order, and returns how many there are when paged.
func (d *DB) ListAutomations(ctx context.Context, userID int64, page *mail.Page, fn func(*mail.Automation) error) (total int64, err error) {
	if page != nil {
		if total, err = d.q.CountAutomations(ctx, userID); err != nil {
			return 0, err
		}
	}
	err = streamList(ctx, d, listAutomationsSQL, []any{userID}, page,
		func(rows pgx.Rows, a *mail.Automation) error { return scanAutomation(rows, a) },
		func(a *mail.Automation) int64 { return a.ID }, fn)
	return total, err
}

// CreateAutomationSchedule adds a mail to a live automation of the
// account, after its others. ENOTFOUND when there is no such automation;
// ECONFLICT when it has MaxAutomationSchedules already.
func (d *DB) CreateAutomationSchedule(ctx context.Context, userID int64, utr string, in mail.ScheduleInput) error {
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		a, err := q.LockAutomation(ctx, db.LockAutomationParams{Utr: utr, UserID: userID})
		if err != nil {
			return translate(err)
		}
		n, err := q.CountAutomationSchedules(ctx, a.ID)
		if err != nil {
			return err
		}
		if n >= mail.MaxAutomationSchedules {
			return mail.Errorf(mail.ECONFLICT, "An automation may not have more than %d schedules.", mail.MaxAutomationSchedules)
		}
		return q.CreateAutomationSchedule(ctx, db.CreateAutomationScheduleParams{UserID: userID, AutomationID: a.ID,
			Utr: mail.NewUTR(), SenderID: in.SenderID, TemplateID: in.TemplateID, Subject: in.Subject,
			WaitingPeriod: in.WaitingPeriod, WaitingType: in.WaitingType, PreviewImg: in.PreviewImg,
			TemplateJson: &in.TemplateJSON, TemplateHtml: &in.TemplateHTML})
	})
}

// DeleteAutomationSchedule soft-deletes a live schedule (by its utr) of a
// live automation of the account, or answers ENOTFOUND.
func (d *DB) DeleteAutomationSchedule(ctx context.Context, userID int64, utr string) error {
	n, err := d.q.DeleteAutomationSchedule(ctx, db.DeleteAutomationScheduleParams{Utr: utr, UserID: userID})
	if err == nil && n == 0 {
		err = mail.NotFound()
	}
	return err
}

// scheduleListChunk is how many schedules a list reads per query: one, as
// each carries its templates (up to 1 MB each), so a list request holds
// one schedule's rows at a time, not 20 (some 40 MB: 20 concurrent lists
// of 100 such schedules took the API to 2 GB). An automation has at most
// 100 schedules, so a whole list is at most 101 small indexed queries.
const scheduleListChunk = 1

var listSchedulesSQL = `
SELECT s.id, s.user_id, s.automation_id, s.utr::text, s.sender_id, s.template_id, s.subject, s.waiting_period,
    s.waiting_type, s.preview_img, s.template_json, s.template_html, s.created_at, s.updated_at
FROM automation_schedules s
WHERE s.automation_id = $1 AND s.deleted_at IS NULL AND s.` + keyset("id", 1)

// ListAutomationSchedules calls fn with each live schedule of a live
// automation (by its utr) of the account, in creation order, and returns
// how many there are when paged. ENOTFOUND when there is no such
// automation.
func (d *DB) ListAutomationSchedules(ctx context.Context, userID int64, utr string, page *mail.Page,
	fn func(*mail.AutomationSchedule) error) (total int64, err error) {
	id, err := d.q.AutomationIDByUTR(ctx, db.AutomationIDByUTRParams{Utr: utr, UserID: userID})
	if err != nil {
		return 0, err
	}
	if page != nil {
		if total, err = d.q.CountAutomationSchedules(ctx, id); err != nil {
			return 0, err
		}
	}
	err = streamChunks(ctx, d, listSchedulesSQL, []any{id}, page, scheduleListChunk,
		func(rows pgx.Rows, s *mail.AutomationSchedule) error {
			return rows.Scan(&s.ID, &s.UserID, &s.AutomationID, &s.UTR, &s.SenderID, &s.TemplateID, &s.Subject,
				&s.WaitingPeriod, &s.WaitingType, &s.PreviewImg, &s.TemplateJSON, &s.TemplateHTML, &s.CreatedAt, &s.UpdatedAt)
		},
		func(s *mail.AutomationSchedule) int64 { return s.ID }, fn)
	return total, err
}
