package console

import "net/http"

// sendDelete answers POST /sends/{utr}/delete: the API's delete (a draft
// or a send still waiting for its time; one that started answers 409).
func (h *Handler) sendDelete(w http.ResponseWriter, r *http.Request) {
	ss, ok := h.loadSend(w, r)
	if !ok {
		return
	}
	if err := h.db.DeleteSingleSend(r.Context(), session(r).AccountID, ss.UTR); err != nil {
		h.fail(w, r, err)
		return
	}
	stateOf(r).target = ss.Name
	http.Redirect(w, r, "/sends?notice=deleted", http.StatusSeeOther)
}
