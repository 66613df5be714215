package console

import (
	"net/http"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// reviewData is the review page's model: the form's choices, checked,
// with the names of what they name.
type reviewData struct {
	composeData
	Sender     senderOption
	Group      string
	Recipients []listOption
	Excluded   []listOption
	Template   string // the catalogue template's name, or "" for the send's own design
	// Schedule is when the send goes (UTC), nil for now.
	Schedule  *time.Time
	SaveURL   string
	ReviewURL string
	// Warnings are what receivers will hold against its mails (the API's
	// details say the same).
	Warnings []string
}

// sendReview answers POST /sends/review and /sends/{utr}/review: the form
// checked exactly as the API checks a create or update. With problems it
// comes back with the API's messages next to the fields; otherwise the
// review page shows what will go, to which lists, how many recipients
// that is now, and when. step=edit goes back to the form as it was.
func (h *Handler) sendReview(w http.ResponseWriter, r *http.Request) {
	utr, stored, ok := h.formSend(w, r)
	if !ok {
		return
	}
	f := readSendForm(r)
	if r.PostFormValue("step") == "edit" {
		h.compose(w, r, http.StatusOK, f, utr, stored, nil)
		return
	}
	account := session(r).AccountID
	in, err := h.sends.Parse(r.Context(), account, f.input(stored))
	if fe := fieldErrors(err); fe != nil {
		h.compose(w, r, http.StatusUnprocessableEntity, f, utr, stored, fe)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	c, err := h.composeFor(r.Context(), account, f, utr, stored)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := reviewData{composeData: c, Schedule: in.Schedule, Template: templateName(f.TemplateID),
		SaveURL: "/sends", ReviewURL: "/sends/review"}
	if utr != "" {
		d.SaveURL, d.ReviewURL = "/sends/"+utr, "/sends/"+utr+"/review"
	}
	for _, s := range c.Senders {
		if s.ID == id(in.SenderID) {
			d.Sender = s
		}
	}
	if d.Warnings, err = h.sendWarnings(r.Context(), account, mail.Email(d.Sender.Email)); err != nil {
		h.fail(w, r, err)
		return
	}
	for _, g := range c.Groups {
		if g.ID == in.GroupID {
			d.Group = g.Name
		}
	}
	for _, l := range c.Lists {
		if l.Picked {
			d.Recipients = append(d.Recipients, l)
		}
		if l.Skipped {
			d.Excluded = append(d.Excluded, l)
		}
	}
	h.render(w, r, http.StatusOK, "send_review", page{Title: "Review " + in.Name, Nav: "sends", Data: d})
}

// formSend is the send a compose route names: none for /sends/…, the
// account's send {utr} otherwise (404 for another account's).
func (h *Handler) formSend(w http.ResponseWriter, r *http.Request) (string, *mail.SingleSend, bool) {
	if r.PathValue("utr") == "" {
		return "", nil, true
	}
	ss, ok := h.loadSend(w, r)
	if !ok {
		return "", nil, false
	}
	return ss.UTR, &ss, true
}
