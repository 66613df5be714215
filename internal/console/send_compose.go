package console

import (
	"net/http"

	"github.com/mailroom/mailroom/internal/mail"
)

// sendNew answers GET /sends/new: an empty compose form, sending now from
// the first verified sender with the blank template.
func (h *Handler) sendNew(w http.ResponseWriter, r *http.Request) {
	h.compose(w, r, http.StatusOK, sendForm{ScheduleType: "0", TemplateID: "1"}, "", nil, nil)
}

// sendEdit answers GET /sends/{utr}/edit: the compose form of a draft or
// a send still waiting for its time. One that started is only shown.
func (h *Handler) sendEdit(w http.ResponseWriter, r *http.Request) {
	ss, ok := h.loadSend(w, r)
	if !ok {
		return
	}
	if ss.Status == mail.SendRunning || ss.Status == mail.SendCompleted {
		http.Redirect(w, r, "/sends/"+ss.UTR, http.StatusSeeOther)
		return
	}
	h.compose(w, r, http.StatusOK, sendFormOf(&ss), ss.UTR, &ss, nil)
}

// compose renders the compose form with f and its field errors.
func (h *Handler) compose(w http.ResponseWriter, r *http.Request, status int, f sendForm, utr string, stored *mail.SingleSend,
	errs map[string][]string) {
	d, err := h.composeFor(r.Context(), session(r).AccountID, f, utr, stored)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// A new form starts from the first verified sender.
	if f.SenderID == "" && stored == nil && errs == nil && len(d.Senders) > 0 && d.Senders[0].Verified {
		d.Senders[0].Picked = true
		d.Form.SenderID = d.Senders[0].ID
	}
	title := "New single send"
	if stored != nil {
		title = "Edit " + stored.Name
	}
	h.render(w, r, status, "send_compose", page{Title: title, Nav: "sends", Errors: errs, Data: d,
		Notice: sendNotices[r.URL.Query().Get("notice")]})
}

// loadSend reads the account's send named by the route's {utr}, or
// answers 404 (a utr that is not a UUID, or another account's).
func (h *Handler) loadSend(w http.ResponseWriter, r *http.Request) (mail.SingleSend, bool) {
	utr, valid := mail.ParseUTR(r.PathValue("utr"))
	if !valid {
		h.fail(w, r, mail.NotFound())
		return mail.SingleSend{}, false
	}
	ss, err := h.db.SingleSend(r.Context(), session(r).AccountID, utr)
	if err != nil {
		h.fail(w, r, err)
		return ss, false
	}
	return ss, true
}
