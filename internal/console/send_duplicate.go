package console

import (
	"net/http"

	"github.com/mailroom/mailroom/internal/mail"
)

// sendDuplicate answers POST /sends/{utr}/duplicate: a draft copy of the
// send (the API's duplicate), opened in the compose form.
func (h *Handler) sendDuplicate(w http.ResponseWriter, r *http.Request) {
	utr, valid := mail.ParseUTR(r.PathValue("utr"))
	if !valid {
		h.fail(w, r, mail.NotFound())
		return
	}
	copyUTR, err := h.db.DuplicateSingleSend(r.Context(), session(r).AccountID, utr)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	stateOf(r).target = utr
	http.Redirect(w, r, "/sends/"+copyUTR+"/edit?notice=duplicated", http.StatusSeeOther)
}

// sendResume answers POST /sends/{utr}/resume: a send a reputation guard
// paused goes on (the API's resume), back on its page.
func (h *Handler) sendResume(w http.ResponseWriter, r *http.Request) {
	utr, valid := mail.ParseUTR(r.PathValue("utr"))
	if !valid {
		h.fail(w, r, mail.NotFound())
		return
	}
	if err := h.db.ResumeSingleSend(r.Context(), session(r).AccountID, utr); err != nil {
		h.fail(w, r, err)
		return
	}
	stateOf(r).target = utr
	http.Redirect(w, r, "/sends/"+utr+"?notice=resumed", http.StatusSeeOther)
}
