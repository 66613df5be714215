package console

import (
	"net/http"

	"github.com/mailroom/mailroom/internal/mail"
)

// sendSave answers POST /sends (create) and POST /sends/{utr} (update a
// draft or a send waiting for its time): the form is checked again as the
// API checks it, saved through the same storage, and the dispatch is
// enqueued; the browser goes on to the send's page to watch it.
func (h *Handler) sendSave(w http.ResponseWriter, r *http.Request) {
	utr, stored, ok := h.formSend(w, r)
	if !ok {
		return
	}
	f := readSendForm(r)
	ctx, account := r.Context(), session(r).AccountID
	in, err := h.sends.Parse(ctx, account, f.input(stored))
	if fe := fieldErrors(err); fe != nil {
		h.compose(w, r, http.StatusUnprocessableEntity, f, utr, stored, fe)
		return
	}
	var q mail.Queued
	if err == nil {
		if stored == nil {
			q, err = h.sends.Create(ctx, account, in)
		} else {
			q, err = h.sends.Update(ctx, account, utr, in)
		}
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	stateOf(r).target = in.Name
	notice := "sending"
	if in.Schedule != nil {
		notice = "scheduled"
	}
	http.Redirect(w, r, "/sends/"+q.UTR+"?notice="+notice, http.StatusSeeOther)
}
