package console

import (
	"net/http"

	"github.com/mailroom/mailroom/internal/mail"
)

// designSave answers POST …/save of the design editor: the design is
// checked as the API's design route checks it and written through the
// storage the API uses. A refused design shows the page again as it was
// posted, with the API's messages; a running or completed send answers
// 409, as the API's update.
func (h *Handler) designSave(w http.ResponseWriter, r *http.Request) {
	rec, err := h.designRecord(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	in, err := h.designInput(r, &rec)
	if fe := fieldErrors(err); fe != nil {
		h.editor(w, r, http.StatusUnprocessableEntity, &rec, postedState(r, &rec), page{Errors: fe})
		return
	}
	if err == nil {
		if rec.Kind == mail.DesignSingleSend {
			err = h.db.SaveSendDesign(r.Context(), session(r).AccountID, rec.UTR, in)
		} else {
			err = h.db.SaveScheduleDesign(r.Context(), session(r).AccountID, rec.UTR, in)
		}
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	stateOf(r).target = rec.Name
	mode := modeCode
	if in.TemplateJSON != nil {
		mode = modeDesign
	}
	http.Redirect(w, r, designBase(&rec)+"?saved=1&mode="+mode, http.StatusSeeOther)
}
