package console

import (
	"context"
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
	h.pausedSendAction(w, r, h.db.ResumeSingleSend, "resumed")
}

// sendCancel answers POST /sends/{utr}/cancel: a send a reputation guard
// paused gives up the mails it has not sent and completes (the API's
// cancel), back on its page.
func (h *Handler) sendCancel(w http.ResponseWriter, r *http.Request) {
	h.pausedSendAction(w, r, h.db.CancelSingleSend, "cancelled")
}

// pausedSendAction does act to the paused send of the path and goes back
// to its page with notice.
func (h *Handler) pausedSendAction(w http.ResponseWriter, r *http.Request, act func(ctx context.Context, account int64, utr string) error,
	notice string) {
	utr, valid := mail.ParseUTR(r.PathValue("utr"))
	if !valid {
		h.fail(w, r, mail.NotFound())
		return
	}
	if err := act(r.Context(), session(r).AccountID, utr); err != nil {
		h.fail(w, r, err)
		return
	}
	stateOf(r).target = utr
	http.Redirect(w, r, "/sends/"+utr+"?notice="+notice, http.StatusSeeOther)
}
