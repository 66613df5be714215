package console

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

// badCredentials is the one answer to an unknown address, a wrong
// password and a member who has not set one yet, so a sign-in tells
// nobody which addresses exist.
const badCredentials = "These credentials do not match our records."

// signInShow answers GET /signin.
func (h *Handler) signInShow(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	if session(r) != nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	h.render(w, r, http.StatusOK, "signin", page{Title: "Sign in", Form: map[string]string{"next": next}})
}

// signIn answers POST /signin: a new session for the right password,
// limited per address and per IP.
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	form := map[string]string{"email": r.PostFormValue("email"), "next": localPath(r.PostFormValue("next"))}
	password := r.PostFormValue("password")
	again := func(status int, err error, msg string) {
		h.render(w, r, status, "signin", page{Title: "Sign in", Form: form, Errors: fieldErrors(err), Message: msg})
	}
	email, err := mail.ParseConsoleEmail("email", form["email"])
	if password == "" {
		err = mail.JoinInvalid(err, mail.Invalid("password", mail.RequiredMessage("password")))
	}
	if err != nil {
		again(http.StatusUnprocessableEntity, err, "")
		return
	}
	if wait, ok := h.allow(r, email); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		again(http.StatusTooManyRequests, nil, "Too many attempts. Try again in "+strconv.Itoa(wait)+" seconds.")
		return
	}
	c, err := h.db.ConsoleCredentials(r.Context(), email)
	if err != nil && errorCode(err) != mail.ENOTFOUND {
		h.fail(w, r, err)
		return
	}
	if !h.checkPassword(c.PasswordHash, password) {
		again(http.StatusUnprocessableEntity, nil, badCredentials)
		return
	}
	if c.Disabled {
		again(http.StatusUnprocessableEntity, nil, "The account is disabled.")
		return
	}
	if err := h.startSession(w, r, c.UserID); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.db.RecordAudit(r.Context(), c.AccountID, postgres.Actor{UserID: c.UserID, Name: string(email), IP: clientIP(r)}, "signed in", ""); err != nil {
		h.log.ErrorContext(r.Context(), "audit line not recorded", "action", "signed in", "err", err)
	}
	http.Redirect(w, r, form["next"], http.StatusSeeOther)
}

// checkPassword is true when password is hash's. With no hash it spends
// the same work on a stand-in, so the answer's time does not tell.
func (h *Handler) checkPassword(hash, password string) bool {
	if hash == "" {
		bcrypt.CompareHashAndPassword(h.standIn, []byte(password))
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// hashPassword is what is stored of password.
func (h *Handler) hashPassword(password string) (string, error) {
	b, err := bcrypt.GenerateFromPassword([]byte(password), h.cfg.BcryptCost)
	return string(b), err
}

// startSession signs the browser in as console user: whatever session it
// brought ends (no session is ever kept across a sign-in) and a new one
// starts.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, user int64) error {
	st := stateOf(r)
	if st.token != "" {
		if err := h.db.EndSession(r.Context(), st.token); err != nil {
			return err
		}
	}
	token, err := h.db.NewSession(r.Context(), user, h.cfg.Session, clientIP(r), r.UserAgent())
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: h.sessionCookie, Value: token, Path: "/", MaxAge: int(h.cfg.Session.Max / time.Second),
		HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteLaxMode})
	h.clearCookie(w, h.csrfCookie)
	return nil
}

// allow takes one try of the allowances of the address from this client,
// of the address, and of the client; when one is spent, the seconds to
// wait.
func (h *Handler) allow(r *http.Request, email mail.Email) (int, bool) {
	ip := limitKey(clientIP(r))
	for _, l := range []struct {
		limit Limit
		key   string
	}{{h.deps.LimitAddressIP, email.Lower() + " " + ip}, {h.deps.LimitAddress, email.Lower()}, {h.deps.LimitIP, ip}} {
		if l.limit == nil {
			continue
		}
		ok, wait, err := l.limit(r.Context(), l.key)
		if err != nil {
			h.log.WarnContext(r.Context(), "sign-in limit not checked: the try goes through", "err", err)
			continue
		}
		if !ok {
			return max(1, int((wait+time.Second-1)/time.Second)), false
		}
	}
	return 0, true
}

// limitKey is the client a limit counts: an IPv4 address, or an IPv6
// address's /64 (one subscriber has a whole /64 to pick from).
func limitKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Is4() || a.Is4In6() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// signOut answers POST /signout.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request) {
	if err := h.db.EndSession(r.Context(), stateOf(r).token); err != nil {
		h.fail(w, r, err)
		return
	}
	h.clearCookie(w, h.sessionCookie)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// signOutEverywhere answers POST /signout/everywhere: every session of the
// user ends, this one too.
func (h *Handler) signOutEverywhere(w http.ResponseWriter, r *http.Request) {
	if _, err := h.db.EndSessions(r.Context(), session(r).UserID, ""); err != nil {
		h.fail(w, r, err)
		return
	}
	h.clearCookie(w, h.sessionCookie)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// wakeMailer asks the worker to mail waiting links now; when Redis is
// away, its minute sweep does.
func (h *Handler) wakeMailer(ctx context.Context) {
	if h.deps.ConsoleMails == nil {
		return
	}
	if err := h.deps.ConsoleMails(ctx); err != nil {
		h.log.WarnContext(ctx, "console mails not enqueued: the worker's sweep sends them", "err", err)
	}
}
