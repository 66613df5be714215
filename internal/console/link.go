package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

// The single-use links: /invite/{token} (an invitation, or the command
// line's sign-in link for a new owner) and /reset/{token} (a password
// reset) both ask for a password, then sign in.

// linkPurposes are the links a path takes.
func linkPurposes(r *http.Request) []mail.TokenPurpose {
	if strings.HasPrefix(r.URL.Path, "/reset/") {
		return []mail.TokenPurpose{mail.TokenReset}
	}
	return []mail.TokenPurpose{mail.TokenInvite, mail.TokenSignIn}
}

const deadLink = "This link has expired or was used already. Ask for a new one."

// link is who the request's link is for; false, answered, when it does not
// work.
func (h *Handler) link(w http.ResponseWriter, r *http.Request) (postgres.LinkHolder, bool) {
	l, err := h.db.PeekLink(r.Context(), r.PathValue("token"), linkPurposes(r)...)
	if errorCode(err) == mail.ENOTFOUND {
		h.problem(w, r, http.StatusNotFound, "Link expired", deadLink)
		return l, false
	}
	if err != nil {
		h.fail(w, r, err)
		return l, false
	}
	return l, true
}

// linkShow answers GET /invite/{token} and /reset/{token}: the password
// form, if the link works.
func (h *Handler) linkShow(w http.ResponseWriter, r *http.Request) {
	l, ok := h.link(w, r)
	if !ok {
		return
	}
	h.render(w, r, http.StatusOK, "password", page{Title: "Choose a password", Data: l})
}

// resetShow answers GET /reset: the form asking for a reset link.
func (h *Handler) resetShow(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "reset", page{Title: "Reset your password"})
}

// resetRequest answers POST /reset. The answer is the same whether the
// address has a console user or not.
func (h *Handler) resetRequest(w http.ResponseWriter, r *http.Request) {
	form := map[string]string{"email": r.PostFormValue("email")}
	email, err := mail.ParseConsoleEmail("email", form["email"])
	if err != nil {
		h.render(w, r, http.StatusUnprocessableEntity, "reset", page{Title: "Reset your password", Form: form, Errors: fieldErrors(err)})
		return
	}
	if wait, ok := h.allow(r, email); !ok {
		h.render(w, r, http.StatusTooManyRequests, "reset", page{Title: "Reset your password", Form: form,
			Message: "Too many attempts. Try again in " + strconv.Itoa(wait) + " seconds."})
		return
	}
	asked, err := h.db.RequestReset(r.Context(), email)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if asked {
		h.wakeMailer(r.Context())
	}
	h.render(w, r, http.StatusOK, "reset", page{Title: "Reset your password", Form: form,
		Notice: "If " + string(email) + " signs in to mailroom, a mail with a link to choose a new password is on its way. The link works for an hour."})
}

// linkTake answers POST /invite/{token} and /reset/{token}: the password
// is set, the link spent, every other session of the user ended, and this
// browser signed in.
func (h *Handler) linkTake(w http.ResponseWriter, r *http.Request) {
	l, ok := h.link(w, r)
	if !ok {
		return
	}
	password := r.PostFormValue("password")
	err := mail.ParsePassword("password", password, mail.Email(l.Email))
	if err == nil && r.PostFormValue("password_confirmation") != password {
		err = mail.Invalid("password_confirmation", "The password confirmation does not match.")
	}
	if err != nil {
		h.render(w, r, http.StatusUnprocessableEntity, "password", page{Title: "Choose a password", Data: l, Errors: fieldErrors(err)})
		return
	}
	hash, err := h.hashPassword(password)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	u, err := h.db.SetPasswordByLink(r.Context(), r.PathValue("token"), hash, clientIP(r), linkPurposes(r)...)
	if errorCode(err) == mail.ENOTFOUND {
		h.problem(w, r, http.StatusNotFound, "Link expired", deadLink) // spent by a twin request meanwhile
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.startSession(w, r, u.ID); err != nil {
		h.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
