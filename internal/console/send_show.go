package console

import (
	"context"
	"net/http"

	"github.com/mailroom/mailroom/internal/mail"
)

// showData is a send's page model.
type showData struct {
	Send       mail.SingleSend
	Changeable bool
	Recipients []listOption
	Excluded   []listOption
	Group      string
	Template   string // the catalogue template's name, "" for the send's own design
	Progress   progressData
	Warnings   []string // what receivers will hold against its mails
}

// sendWarnings are what receivers will hold against the mails of a send
// of account from sender from, as the API's details give them (none
// without a domain service).
func (h *Handler) sendWarnings(ctx context.Context, account int64, from mail.Email) ([]string, error) {
	if h.deps.Domains == nil || from == "" {
		return nil, nil
	}
	return h.deps.Domains.SendWarnings(ctx, account, from)
}

// sendShow answers GET /sends/{utr}: what the send is, and its progress,
// which updates itself while it runs.
func (h *Handler) sendShow(w http.ResponseWriter, r *http.Request) {
	ss, ok := h.loadSend(w, r)
	if !ok {
		return
	}
	ctx, account := r.Context(), session(r).AccountID
	p, err := h.db.SendProgress(ctx, account, ss.UTR)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	c, err := h.composeFor(ctx, account, sendFormOf(&ss), ss.UTR, &ss)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := showData{Send: ss, Progress: progressOf(ss.UTR, p, "").withResume(r),
		Changeable: ss.Status == mail.SendDraft || ss.Status == mail.SendReady}
	if ss.Sender != nil && ss.Status != mail.SendCompleted {
		if d.Warnings, err = h.sendWarnings(ctx, account, ss.Sender.FromEmail); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if !hasDesign(&ss) {
		d.Template = templateName(id(ss.TemplateID))
	}
	for _, l := range c.Lists {
		if l.Picked {
			d.Recipients = append(d.Recipients, l)
		}
		if l.Skipped {
			d.Excluded = append(d.Excluded, l)
		}
	}
	for _, g := range c.Groups {
		if g.ID == ss.GroupID {
			d.Group = g.Name
		}
	}
	h.render(w, r, http.StatusOK, "send_show", page{Title: ss.Name, Nav: "sends", Notice: sendNotices[r.URL.Query().Get("notice")], Data: d})
}
