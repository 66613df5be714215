package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/singlesend"
)

func (s *Server) automationRoutes(api *gin.RouterGroup) {
	lower := notFoundText(recordNotFoundLower) // interface.md's wording for these five
	api.GET("/automations", s.listAutomations)
	api.POST("/automations/create", s.createAutomation)
	api.GET("/automations/duplicate", s.duplicateAutomation)
	api.GET("/automations/details", s.automationDetails)
	api.GET("/automations/set-live", s.setAutomationLive)
	api.GET("/automations/pause", lower, s.pauseAutomation)
	api.DELETE("/automations/delete", lower, s.deleteAutomation)
	api.POST("/automations/bulk-delete", lower, s.bulkDelete(s.db.DeleteAutomations))
	api.GET("/automations/schedule", lower, s.listAutomationSchedules)
	api.POST("/automations/schedule/create", s.createAutomationSchedule)
	api.POST("/automations/schedule/design", s.saveScheduleDesign)
	api.DELETE("/automations/schedule/delete", lower, s.deleteAutomationSchedule)
}

// automationJSON is an automation as interface.md shows it, fields in its
// order; ScheduleCount only in the list.
type automationJSON struct {
	ID                 int64   `json:"id"`
	UserID             int64   `json:"user_id"`
	AutomationFor      int64   `json:"automation_for"`
	AutomationForTable string  `json:"automation_for_table"`
	AutomationName     string  `json:"automation_name"`
	ExitCriteria       int16   `json:"exit_criteria"`
	UnsubscribeGroupID *string `json:"unsubscribe_group_id"`
	AutomationType     int16   `json:"automation_type"`
	UTR                string  `json:"utr"`
	Status             int16   `json:"status"`
	LiveAt             *string `json:"live_at"`
	TotalTriggered     int64   `json:"total_triggered"`
	TotalDelivered     int64   `json:"total_delivered"`
	TotalUniqueOpens   int64   `json:"total_unique_opens"`
	TotalOpens         int64   `json:"total_opens"`
	TotalBounces       int64   `json:"total_bounces"`
	TotalUnsubscribe   int64   `json:"total_unsubscribe"`
	DeletedAt          *string `json:"deleted_at"`
	CreatedAt          string  `json:"created_at"`
	UpdatedAt          string  `json:"updated_at"`
	ScheduleCount      *int64  `json:"automation_schedule_count,omitempty"`
}

func renderAutomation(a *mail.Automation, withCount bool) automationJSON {
	out := automationJSON{ID: a.ID, UserID: a.UserID, AutomationFor: a.Target.ID, AutomationForTable: a.Target.Table,
		AutomationName: a.Name, ExitCriteria: a.ExitCriteria, AutomationType: a.Type, UTR: a.UTR, Status: a.Status,
		TotalTriggered: a.Triggered, TotalDelivered: a.Delivered, TotalUniqueOpens: a.UniqueOpens,
		TotalOpens: a.TotalOpens, TotalBounces: a.Bounces, TotalUnsubscribe: a.Unsubscribes,
		CreatedAt: ts(a.CreatedAt), UpdatedAt: ts(a.UpdatedAt)}
	if a.GroupID != nil {
		g := strconv.FormatInt(*a.GroupID, 10)
		out.UnsubscribeGroupID = &g
	}
	if a.LiveAt != nil {
		v := a.LiveAt.UTC().Format("2006-01-02 15:04:05")
		out.LiveAt = &v
	}
	if withCount {
		out.ScheduleCount = &a.ScheduleCount
	}
	return out
}

// automationScheduleJSON is an automation schedule as interface.md shows
// it, fields in its order: head, template_json, template_html, tail. Its
// templates (up to 1 MB each) are streamed into a list (writeJSON), so a
// schedule is never held as JSON whole.
type automationScheduleJSON struct {
	head         scheduleHeadJSON
	templateJSON string
	templateHTML string
	tail         scheduleTailJSON
}

type scheduleHeadJSON struct {
	ID            int64  `json:"id"`
	UserID        int64  `json:"user_id"`
	AutomationID  int64  `json:"automation_id"`
	SenderID      int64  `json:"sender_id"`
	TemplateID    int64  `json:"template_id"`
	Subject       string `json:"subject"`
	WaitingPeriod int32  `json:"waiting_period"`
	WaitingType   string `json:"waiting_type"`
	UTR           string `json:"utr"`
	PreviewImg    string `json:"preview_img"`
}

type scheduleTailJSON struct {
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	DesignURL string `json:"design_url"`
	Image     string `json:"image"`
}

// writeJSON writes the schedule as encode would write it, the templates a
// piece at a time; buf is scratch. w's errors must stick (a bufio.Writer,
// a bytes.Buffer): the last write's error is answered.
func (s automationScheduleJSON) writeJSON(w io.Writer, buf *bytes.Buffer) error {
	buf.Reset()
	encode(buf, s.head)
	w.Write(buf.Bytes()[:buf.Len()-1]) // without its '}'
	io.WriteString(w, `,"template_json":`)
	writeJSONString(w, buf, s.templateJSON)
	io.WriteString(w, `,"template_html":`)
	writeJSONString(w, buf, s.templateHTML)
	buf.Reset()
	encode(buf, s.tail)
	buf.Bytes()[0] = ',' // its '{'
	_, err := w.Write(buf.Bytes())
	return err
}

// MarshalJSON is writeJSON into memory, for any use outside a list.
func (s automationScheduleJSON) MarshalJSON() ([]byte, error) {
	var out, buf bytes.Buffer
	err := s.writeJSON(&out, &buf)
	return out.Bytes(), err
}

func (s *Server) renderSchedule(sc *mail.AutomationSchedule) automationScheduleJSON {
	out := automationScheduleJSON{head: scheduleHeadJSON{ID: sc.ID, UserID: sc.UserID, AutomationID: sc.AutomationID,
		SenderID: sc.SenderID, TemplateID: sc.TemplateID, Subject: sc.Subject, WaitingPeriod: sc.WaitingPeriod,
		WaitingType: sc.WaitingType, UTR: sc.UTR, PreviewImg: sc.PreviewImg},
		tail: scheduleTailJSON{CreatedAt: ts(sc.CreatedAt), UpdatedAt: ts(sc.UpdatedAt),
			DesignURL: s.cfg.PublicURL + "/design/editor/" + sc.UTR}}
	if sc.TemplateJSON != nil {
		out.templateJSON = *sc.TemplateJSON
	}
	if sc.TemplateHTML != nil {
		out.templateHTML = *sc.TemplateHTML
	}
	preview := sc.PreviewImg
	if d, found := designRef(sc.TemplateID); found {
		preview = d.Preview
	}
	out.tail.Image = s.cfg.PublicURL + "/design/previews/" + url.PathEscape(preview)
	return out
}

// designRef is the catalogue's template id as a schedule takes it.
func designRef(id int64) (mail.DesignRef, bool) {
	t, found := singlesend.Design(id)
	if !found {
		return mail.DesignRef{}, false
	}
	return mail.DesignRef{HTML: t.HTML, JSON: t.JSON, Preview: t.Preview}, true
}

// listAutomations answers GET /automations: the account's automations,
// streamed (page, per_page and after_id as for the long lists).
func (s *Server) listAutomations(c *gin.Context) {
	page, err := readCursorPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	l := newListWriter(c, "automations")
	total, err := s.db.ListAutomations(c.Request.Context(), userID(c), page, func(a *mail.Automation) error {
		return l.add(renderAutomation(a, true))
	})
	s.finishList(l, page, total, err)
}

// createAutomation answers POST /automations/create: a draft.
func (s *Server) createAutomation(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, user := c.Request.Context(), userID(c)
	in, err := mail.ParseAutomation(mail.AutomationForm{
		Type:         f.str("type"),
		GroupID:      f.str("unsubscribe_group_id"),
		For:          f.str("automation_for"),
		Name:         f.str("automation_name"),
		ExitCriteria: f.str("exit_criteria"),
	}, mail.AutomationRules{Lookup: func(refs mail.SendRefs) (mail.SendRefsFound, error) {
		return s.db.SendReferences(ctx, user, refs)
	}})
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	utr, err := s.db.CreateAutomation(ctx, user, in)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"utr": utr})
}

// duplicateAutomation answers GET /automations/duplicate?utr=: the copy's
// utr.
func (s *Server) duplicateAutomation(c *gin.Context) {
	utr, err := readUTR(c.Query("utr"))
	var copyUTR string
	if err == nil {
		copyUTR, err = s.db.DuplicateAutomation(c.Request.Context(), userID(c), utr)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"utr": copyUTR})
}

// automationDetails answers GET /automations/details?utr=.
func (s *Server) automationDetails(c *gin.Context) {
	utr, err := readUTR(c.Query("utr"))
	var a mail.Automation
	if err == nil {
		a, err = s.db.Automation(c.Request.Context(), userID(c), utr)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"automation": renderAutomation(&a, false)})
}

// setAutomationLive answers GET /automations/set-live?utr=. Once a draft
// or paused automation went live, the engine is told (Deps.AutomationLive);
// its failure is logged, not answered: the automation is live.
func (s *Server) setAutomationLive(c *gin.Context) {
	utr, err := readUTR(c.Query("utr"))
	// A client that hangs up does not stop the change half way: the
	// commit and the engine's hook run to their end (the sweeper also
	// finds a custom automation whose members were never enrolled).
	ctx := context.WithoutCancel(c.Request.Context())
	var r mail.SetLive
	if err == nil {
		r, err = s.db.SetAutomationLive(ctx, userID(c), utr)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	if r.Changed && s.automationLive != nil {
		if err := s.automationLive(ctx, r.ID); err != nil {
			s.log.ErrorContext(ctx, "telling the engine an automation went live",
				"automation_id", r.ID, "err", err)
		}
	}
	ok(c, "Automation has been set live")
}

// pauseAutomation answers GET /automations/pause?utr=.
func (s *Server) pauseAutomation(c *gin.Context) {
	utr, err := readUTR(c.Query("utr"))
	if err == nil {
		err = s.db.PauseAutomation(c.Request.Context(), userID(c), utr)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Automation Paused Successfully")
}

// deleteAutomation answers DELETE /automations/delete?utr=.
func (s *Server) deleteAutomation(c *gin.Context) {
	utr, err := readUTR(c.Query("utr"))
	if err == nil {
		err = s.db.DeleteAutomation(c.Request.Context(), userID(c), utr)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	deleted(c)
}

// listAutomationSchedules answers GET /automations/schedule?utr= (the
// automation's): its schedules in creation order, streamed.
func (s *Server) listAutomationSchedules(c *gin.Context) {
	utr, err := readUTR(c.Query("utr"))
	var page *mail.Page
	if err == nil {
		page, err = readCursorPage(c)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	l := newListWriter(c, "automation_schedules")
	total, err := s.db.ListAutomationSchedules(c.Request.Context(), userID(c), utr, page, func(sc *mail.AutomationSchedule) error {
		return l.add(s.renderSchedule(sc))
	})
	s.finishList(l, page, total, err)
}

// createAutomationSchedule answers POST /automations/schedule/create: a
// mail added after the automation's others.
func (s *Server) createAutomationSchedule(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, user := c.Request.Context(), userID(c)
	var utrErr error
	if f.str("utr") == "" {
		utrErr = mail.Invalid("utr", mail.RequiredMessage("utr"))
	}
	in, err := mail.ParseSchedule(mail.ScheduleForm{
		SenderID:      f.str("sender_id"),
		Subject:       f.str("subject"),
		WaitingPeriod: f.str("waiting_period"),
		WaitingType:   f.str("waiting_type"),
		TemplateID:    f.str("template_id"),
		PreviewImg:    f.str("preview_img"),
		TemplateJSON:  f.raw("template_json"),
		TemplateHTML:  f.raw("template_html"),
	}, mail.ScheduleRules{
		Design: designRef,
		Lookup: func(refs mail.SendRefs) (mail.SendRefsFound, error) {
			return s.db.SendReferences(ctx, user, refs)
		},
		AllowUnverified: s.cfg.AllowUnverifiedSenders,
		MailSize:        s.sends.MailSize(),
	})
	if err := f.checked(mail.JoinInvalid(utrErr, err)); err != nil {
		s.fail(c, err)
		return
	}
	utr, err := readUTR(f.str("utr")) // after the fields: an unknown utr is a 404 either way
	if err == nil {
		err = s.db.CreateAutomationSchedule(ctx, user, utr, in)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Schedule Added")
}

// deleteAutomationSchedule answers DELETE /automations/schedule/delete?utr=
// (the schedule's).
func (s *Server) deleteAutomationSchedule(c *gin.Context) {
	utr, err := readUTR(c.Query("utr"))
	if err == nil {
		err = s.db.DeleteAutomationSchedule(c.Request.Context(), userID(c), utr)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	deleted(c)
}

// saveScheduleDesign answers POST /automations/schedule/design: a schedule
// (by its utr) takes a design, template_json (a design document whose
// html is built from it) or template_html, checked by mail.ParseDesign
// as the console's editor saves it. The fields are answered before the
// schedule: an unknown utr is a 404 once they pass.
func (s *Server) saveScheduleDesign(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, user := c.Request.Context(), userID(c)
	var utrErr, lookErr error
	var rec mail.DesignRecord
	utr, valid := mail.ParseUTR(f.str("utr"))
	switch {
	case f.str("utr") == "":
		utrErr = mail.Invalid("utr", mail.RequiredMessage("utr"))
	case !valid:
		lookErr = mail.NotFound()
	default:
		rec, lookErr = s.db.ScheduleDesign(ctx, user, utr) // its subject counts in the mail's size
	}
	if lookErr != nil && mail.ErrorCode(lookErr) != mail.ENOTFOUND {
		s.fail(c, lookErr)
		return
	}
	in, err := mail.ParseDesign(mail.DesignForm{TemplateJSON: f.raw("template_json"), TemplateHTML: f.raw("template_html")},
		s.designRules(rec.Subject, ""))
	if err := f.checked(mail.JoinInvalid(utrErr, err)); err != nil {
		s.fail(c, err)
		return
	}
	if lookErr == nil {
		lookErr = s.db.SaveScheduleDesign(ctx, user, utr, in)
	}
	if lookErr != nil {
		s.fail(c, lookErr)
		return
	}
	ok(c, "Design Saved")
}

// designRules are the rules of a design save of a mail with subject and
// preheader: the document built by design.Build, the worst-case mail
// bounded as for the sends' templates.
func (s *Server) designRules(subject, preheader string) mail.DesignRules {
	return mail.DesignRules{Build: design.Build, Subject: subject, Preheader: preheader, MailSize: s.sends.MailSize()}
}
