package console

import (
	"net/http"
	"strconv"

	"github.com/mailroom/mailroom/internal/mail"
)

// accountData is the account page's model.
type accountData struct {
	Team       []mail.ConsoleUser
	Roles      []mail.Role
	SendRate   int
	Recipients []mail.NotificationRecipient
	MoreRecips int64 // recipients beyond those listed
	Audit      []mail.AuditEvent
	OlderAudit int64 // the before= of the next page, 0 for none
	Keys       *mail.Keys
}

// auditPage is how many audit lines the account page lists at once.
const auditPage = 50

// notices are the lines a redirect may ask the account page to show; the
// page shows only these, never text from the address.
var notices = map[string]string{
	"invited": "The invitation is on its way.",
	"role":    "The role is changed.",
	"removed": "The member is removed.",
}

// accountShow answers GET /account.
func (h *Handler) accountShow(w http.ResponseWriter, r *http.Request) {
	h.account(w, r, http.StatusOK, page{Notice: notices[r.URL.Query().Get("notice")]}, nil)
}

// account renders the account page with p (its errors and form) and keys
// when they were just made.
func (h *Handler) account(w http.ResponseWriter, r *http.Request, status int, p page, keys *mail.Keys) {
	s := session(r)
	ctx := r.Context()
	d := accountData{Roles: mail.Roles, Keys: keys}
	var err error
	if d.Team, err = h.db.ConsoleUsers(ctx, s.AccountID); err != nil {
		h.fail(w, r, err)
		return
	}
	if d.SendRate, err = h.db.SendRate(ctx, s.AccountID); err != nil {
		h.fail(w, r, err)
		return
	}
	var total int64
	if d.Recipients, total, err = h.db.NotificationRecipients(ctx, s.AccountID, &mail.Page{Number: 1, Size: 100}); err != nil {
		h.fail(w, r, err)
		return
	}
	d.MoreRecips = total - int64(len(d.Recipients))
	before, _ := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	if d.Audit, err = h.db.AuditEvents(ctx, s.AccountID, before, auditPage); err != nil {
		h.fail(w, r, err)
		return
	}
	if len(d.Audit) == auditPage {
		d.OlderAudit = d.Audit[len(d.Audit)-1].ID
	}
	p.Title, p.Nav, p.Data = "Account", "account", d
	h.render(w, r, status, "account", p)
}

// keysRotate answers POST /account/keys: new keys, the secret shown this
// once; the old ones are refused from now on.
func (h *Handler) keysRotate(w http.ResponseWriter, r *http.Request) {
	keys, err := h.db.RotateKeysBy(r.Context(), session(r).AccountID, actor(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	session(r).PublicKey = keys.Public
	h.account(w, r, http.StatusOK, page{Notice: "New keys are made; the old ones no longer work. Copy the secret key now: it is not shown again."}, &keys)
}

// teamInvite answers POST /account/team: the address joins the team with
// the role and gets an invitation mail.
func (h *Handler) teamInvite(w http.ResponseWriter, r *http.Request) {
	form := map[string]string{"email": r.PostFormValue("email"), "role": r.PostFormValue("role")}
	email, err := mail.ParseConsoleEmail("email", form["email"])
	role, rerr := mail.ParseRole("role", form["role"])
	if err = mail.JoinInvalid(err, rerr); err == nil {
		_, err = h.db.Invite(r.Context(), session(r).AccountID, actor(r), email, role)
	}
	if fe := fieldErrors(err); fe != nil {
		h.account(w, r, http.StatusUnprocessableEntity, page{Form: form, Errors: fe}, nil)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.wakeMailer(r.Context())
	http.Redirect(w, r, "/account?notice=invited#team", http.StatusSeeOther)
}

// memberID is the {id} of a team route; false for one that is no id.
func memberID(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	return id, err == nil && id > 0
}

// teamRole answers POST /account/team/{id}/role.
func (h *Handler) teamRole(w http.ResponseWriter, r *http.Request) {
	id, ok := memberID(r)
	if !ok {
		h.fail(w, r, mail.NotFound())
		return
	}
	role, err := mail.ParseRole("role", r.PostFormValue("role"))
	if err == nil {
		err = h.db.SetRole(r.Context(), session(r).AccountID, actor(r), id, role)
	}
	if fe := fieldErrors(err); fe != nil {
		h.account(w, r, http.StatusUnprocessableEntity, page{Errors: fe}, nil)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/account?notice=role#team", http.StatusSeeOther)
}

// teamRemove answers POST /account/team/{id}/remove. A member removed
// is signed out everywhere; removing oneself ends at the sign-in page.
func (h *Handler) teamRemove(w http.ResponseWriter, r *http.Request) {
	id, ok := memberID(r)
	if !ok {
		h.fail(w, r, mail.NotFound())
		return
	}
	if err := h.db.RemoveMember(r.Context(), session(r).AccountID, actor(r), id); err != nil {
		h.fail(w, r, err)
		return
	}
	if id == session(r).UserID {
		h.clearCookie(w, h.sessionCookie)
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/account?notice=removed#team", http.StatusSeeOther)
}
