package httpapi

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

func (s *Server) singleSendRoutes(api *gin.RouterGroup) {
	lower := notFoundText(recordNotFoundLower) // interface.md's wording for these four
	api.GET("/single-send/list", s.listSingleSends)
	api.POST("/single/send/create", s.createSingleSend)
	api.GET("/single/send/duplicate", lower, s.duplicateSingleSend)
	api.POST("/single/send/duplicate", lower, s.duplicateSingleSend) // labelled GET, issued as POST: both
	api.GET("/single-send/details", lower, s.singleSendDetails)
	api.POST("/single/send/update", s.updateSingleSend)
	api.DELETE("/single/send/delete", lower, s.deleteSingleSend)
	api.POST("/single/send/bulk-delete", lower, s.bulkDelete(s.db.DeleteSingleSends))
	// A send a reputation guard paused goes on, or gives up the mails it
	// has not sent and completes (docs/deliverability.md).
	api.GET("/single/send/resume", lower, s.pausedSendAction(s.db.ResumeSingleSend, "Single Send Resumed Successfully"))
	api.GET("/single/send/cancel", lower, s.pausedSendAction(s.db.CancelSingleSend, "Single Send Cancelled Successfully"))
}

// listRefJSON is a recipient list of a send: {"id":"3","table":"contacts_"}.
type listRefJSON struct {
	ID    string `json:"id"`
	Table string `json:"table"`
}

// singleSendJSON is a single send as interface.md shows it, fields in its
// order.
type singleSendJSON struct {
	ID                         int64             `json:"id"`
	UserID                     int64             `json:"user_id"`
	TemplateID                 int64             `json:"template_id"`
	RecipientID                []listRefJSON     `json:"recipient_id"`
	ExcludeSpecificRecipientID []listRefJSON     `json:"exclude_specific_recipient_id"`
	SenderID                   int64             `json:"sender_id"`
	UnsubscribeGroupID         int64             `json:"unsubscribe_group_id"`
	SingleSendName             string            `json:"single_send_name"`
	Subject                    string            `json:"subject"`
	Preheader                  string            `json:"preheader"`
	FromSender                 string            `json:"from_sender"`
	ReplyTo                    string            `json:"reply_to"`
	SenderName                 *string           `json:"sender_name"`
	SenderAddress              *string           `json:"sender_address"`
	ScheduleType               int16             `json:"schedule_type"`
	ScheduleDate               string            `json:"schedule_date"`
	ScheduleTime               string            `json:"schedule_time"`
	Status                     int16             `json:"status"`
	UTR                        string            `json:"utr"`
	TemplateJSON               *string           `json:"template_json"`
	TemplateHTML               *string           `json:"template_html"`
	Triggered                  int64             `json:"triggered"`
	Delivered                  int64             `json:"delivered"`
	UniqueOpens                int64             `json:"unique_opens"`
	TotalOpens                 int64             `json:"total_opens"`
	Bounces                    int64             `json:"bounces"`
	Unsubscribes               int64             `json:"unsubscribes"`
	UniqueOpenToken            map[string]string `json:"unique_open_token"`
	SentAt                     *string           `json:"sent_at"`
	CreatedAt                  string            `json:"created_at"`
	UpdatedAt                  string            `json:"updated_at"`
	// Only for a send a reputation guard paused (docs/deliverability.md):
	// when and why.
	PausedAt     *string `json:"paused_at,omitempty"`
	PausedReason *string `json:"paused_reason,omitempty"`
	// Only for a send that names the relay its mails go to first.
	Relay string `json:"relay,omitempty"`
	// Only for a paused send that was cancelled: when.
	CancelledAt *string `json:"cancelled_at,omitempty"`
	// Only in the details, only when there is any: what receivers will
	// hold against its mails (an unauthenticated From domain).
	Warnings []string `json:"warnings,omitempty"`
}

func renderLists(lists []mail.ListRef) []listRefJSON {
	out := make([]listRefJSON, len(lists))
	for i, l := range lists {
		out[i] = listRefJSON{ID: strconv.FormatInt(l.ID, 10), Table: l.Table}
	}
	return out
}

func renderSingleSend(ss *mail.SingleSend) singleSendJSON {
	out := singleSendJSON{ID: ss.ID, UserID: ss.UserID, TemplateID: ss.TemplateID, RecipientID: renderLists(ss.Recipients),
		ExcludeSpecificRecipientID: renderLists(ss.Excluded), SenderID: ss.SenderID, UnsubscribeGroupID: ss.GroupID,
		SingleSendName: ss.Name, Subject: ss.Subject, Preheader: ss.Preheader, ScheduleType: ss.ScheduleType,
		ScheduleDate: ss.ScheduleDate, ScheduleTime: ss.ScheduleTime, Status: ss.Status, UTR: ss.UTR,
		TemplateJSON: ss.TemplateJSON, TemplateHTML: ss.TemplateHTML, Triggered: ss.Triggered, Delivered: ss.Delivered,
		UniqueOpens: ss.UniqueOpens, TotalOpens: ss.TotalOpens, Bounces: ss.Bounces, Unsubscribes: ss.Unsubscribes,
		UniqueOpenToken: ss.OpenTokens, CreatedAt: ts(ss.CreatedAt), UpdatedAt: ts(ss.UpdatedAt), Relay: ss.Relay}
	if out.UniqueOpenToken == nil {
		out.UniqueOpenToken = map[string]string{}
	}
	if ss.SentAt != nil {
		v := ss.SentAt.UTC().Format("2006-01-02 15:04:05")
		out.SentAt = &v
	}
	if ss.CancelledAt != nil {
		at := ss.CancelledAt.UTC().Format("2006-01-02 15:04:05")
		out.CancelledAt = &at
	}
	if ss.PausedAt != nil {
		at, why := ss.PausedAt.UTC().Format("2006-01-02 15:04:05"), ss.PausedReason
		out.PausedAt, out.PausedReason = &at, &why
	}
	if snd := ss.Sender; snd != nil {
		name, address := snd.FromName, snd.PostalAddress()
		out.FromSender, out.ReplyTo, out.SenderName, out.SenderAddress = string(snd.FromEmail), string(snd.ReplyTo), &name, &address
	}
	return out
}

// listSingleSends answers GET /single-send/list: the account's sends,
// streamed (page, per_page and after_id as for the long lists).
func (s *Server) listSingleSends(c *gin.Context) {
	page, err := readCursorPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	l := newListWriter(c, "singleSends")
	total, err := s.db.ListSingleSends(c.Request.Context(), userID(c), page, func(ss *mail.SingleSend) error {
		return l.add(renderSingleSend(ss))
	})
	s.finishList(l, page, total, err)
}

// singleSendDetails answers GET /single-send/details?utr=: the send in a
// one-element array, as interface.md shows it.
func (s *Server) singleSendDetails(c *gin.Context) {
	utr, err := readUTR(c.Query("utr"))
	if err != nil {
		s.fail(c, err)
		return
	}
	ss, err := s.db.SingleSend(c.Request.Context(), userID(c), utr)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := renderSingleSend(&ss)
	if ss.Sender != nil {
		if out.Warnings, err = s.domains.SendWarnings(c.Request.Context(), userID(c), ss.Sender.FromEmail); err != nil {
			s.fail(c, err)
			return
		}
	}
	ok(c, gin.H{"singleSend": []singleSendJSON{out}})
}

// readUTR reads a required utr; one that is no UUID names no record.
func readUTR(v string) (string, error) {
	if strings.TrimSpace(v) == "" {
		return "", mail.Invalid("utr", mail.RequiredMessage("utr"))
	}
	utr, valid := mail.ParseUTR(v)
	if !valid {
		return "", mail.NotFound()
	}
	return utr, nil
}

// parseSingleSend reads a single send create or update from the request
// and checks it as the console's compose form is checked.
func (s *Server) parseSingleSend(c *gin.Context, f form) (mail.SingleSendInput, error) {
	return s.sends.Parse(c.Request.Context(), userID(c), mail.SingleSendForm{
		TemplateID:   f.str("template_id"),
		TemplateJSON: f.raw("template_json"),
		TemplateHTML: f.raw("template_html"),
		SenderID:     f.str("sender_id"),
		GroupID:      f.str("unsubscribe_group_id"),
		Name:         f.str("single_send_name"),
		Subject:      f.str("subject"),
		Preheader:    f.str("preheader"),
		Recipients:   listRefs(f, "recipient_id"),
		Excluded:     listRefs(f, "exclude_specific_recipient_id"),
		ScheduleType: f.str("schedule_type"),
		ScheduleDate: f.str("schedule_date"),
		ScheduleTime: f.str("schedule_time"),
		Relay:        f.str("relay"),
	})
}

// listRefs reads a send's recipient lists: an array of "contacts_3"
// strings (key[0], key[], repeated key or a JSON array), or of objects as
// the resource shows them ({"id":"3","table":"contacts_"}, or
// key[0][id]=3&key[0][table]=contacts_), after the strings in index order.
// An object without its table or id is an invalid element, not none, and
// so is one whose table or id is an array or an object.
func listRefs(f form, key string) []string {
	out := f.list(key)
	type object struct {
		table, id string
		bad       bool
	}
	objs := map[int]*object{}
	member := func(k string, v *string) {
		rest, isElem := strings.CutPrefix(k, key+"[")
		index, member, _ := strings.Cut(rest, "]")
		i, err := strconv.Atoi(index)
		if !isElem || !strings.HasPrefix(member, "[") || err != nil || i < 0 {
			return
		}
		o := objs[i]
		if o == nil {
			o = &object{}
			objs[i] = o
		}
		name, tail, _ := strings.Cut(member[1:], "]")
		switch {
		case v == nil || tail != "":
			o.bad = true // the member is an array or an object
		case name == "table":
			o.table = strings.TrimSpace(*v)
		case name == "id":
			o.id = strings.TrimSpace(*v)
		}
	}
	for k, vs := range f.vals {
		member(k, &vs[0])
	}
	for k := range f.composite {
		member(k, nil)
	}
	indexes := make([]int, 0, len(objs))
	for i := range objs {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	for _, i := range indexes {
		o := objs[i]
		if o.bad {
			out = append(out, "?") // names no list: the field is invalid
			continue
		}
		out = append(out, o.table+o.id)
	}
	return out
}

// createSingleSend answers POST /single/send/create: a ready send, due now
// or at its schedule.
func (s *Server) createSingleSend(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	in, err := s.parseSingleSend(c, f)
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	q, err := s.sends.Create(c.Request.Context(), userID(c), in)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"utr": q.UTR})
}

// updateSingleSend answers POST /single/send/update: a draft or ready send
// takes the new fields and is queued again at its next version.
func (s *Server) updateSingleSend(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var utrErr error
	if f.str("utr") == "" {
		utrErr = mail.Invalid("utr", mail.RequiredMessage("utr"))
	}
	in, err := s.parseSingleSend(c, f)
	if err := f.checked(mail.JoinInvalid(utrErr, err)); err != nil {
		s.fail(c, err)
		return
	}
	utr, err := readUTR(f.str("utr")) // after the fields: an unknown utr is a 404 either way
	if err != nil {
		s.fail(c, err)
		return
	}
	q, err := s.sends.Update(c.Request.Context(), userID(c), utr, in)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"utr": q.UTR})
}

// duplicateSingleSend answers GET or POST /single/send/duplicate?utr=.
func (s *Server) duplicateSingleSend(c *gin.Context) {
	f, err := readForm(c)
	var utr string
	if err == nil {
		utr, err = readUTR(f.str("utr"))
		err = f.checked(err)
	}
	if err == nil {
		_, err = s.db.DuplicateSingleSend(c.Request.Context(), userID(c), utr)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Duplicated Successfully")
}

// pausedSendAction answers GET /single/send/{resume,cancel}?utr=: act on
// the account's paused send utr, then done.
func (s *Server) pausedSendAction(act func(ctx context.Context, userID int64, utr string) error, done string) gin.HandlerFunc {
	return func(c *gin.Context) {
		utr, err := readUTR(c.Query("utr"))
		if err == nil {
			err = act(c.Request.Context(), userID(c), utr)
		}
		if err != nil {
			s.fail(c, err)
			return
		}
		ok(c, done)
	}
}

// deleteSingleSend answers DELETE /single/send/delete?utr=.
func (s *Server) deleteSingleSend(c *gin.Context) {
	utr, err := readUTR(c.Query("utr"))
	if err == nil {
		err = s.db.DeleteSingleSend(c.Request.Context(), userID(c), utr)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	deleted(c)
}
