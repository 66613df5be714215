package console

import (
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

// Cookie names. The session cookie holds an opaque random token (the
// session lives in PostgreSQL); the CSRF cookie holds the token the forms
// of a browser that is not signed in carry. Over https they take the
// __Host- prefix: the browser then takes them only from this host, Secure
// and for the whole site, so a sibling subdomain cannot plant one.
const (
	sessionCookieName = "mailroom_session"
	csrfCookieName    = "mailroom_csrf"
	csrfField         = "csrf"
	csrfHeader        = "X-CSRF-Token"
)

func (h *Handler) cookieName(name string) string {
	if h.secure {
		return "__Host-" + name
	}
	return name
}

// maxFormBytes caps a form's body, unless its route says otherwise
// (bodyLimit).
const maxFormBytes = 1 << 20

// route is what a line of the route table says beyond its access and
// audit line.
type route struct {
	maxBody int64 // the body's cap
}

// routeOption sets a route's own value of route.
type routeOption func(*route)

// bodyLimit caps the route's bodies at n bytes instead of maxFormBytes
// (an upload).
func bodyLimit(n int64) routeOption { return func(r *route) { r.maxBody = n } }

// state is what the middleware learned of a request, on its context.
type state struct {
	session *mail.Session // nil: not signed in
	token   string        // the session cookie's token
	csrf    string        // the token this browser's forms carry
	nonce   string        // the page's CSP nonce (styles the editor adds)
	target  string        // what a write acted on, for the audit trail
	ip      string        // the client's address
}

type stateKey struct{}

func stateOf(r *http.Request) *state { return r.Context().Value(stateKey{}).(*state) }

// session is the request's signed-in session (routes above public only).
func session(r *http.Request) *mail.Session { return stateOf(r).session }

// crossOrigin refuses unsafe requests a browser marks as coming from
// another site (Sec-Fetch-Site, Origin): a second wall behind the tokens.
var crossOrigin = http.NewCrossOriginProtection()

// chain is the console's middleware around one route, after ServeHTTP's
// state and security headers, in order: the body limit, the cross-origin check, the session, the
// route's access, the CSRF token, then the route, and the audit line of a
// successful write.
func (h *Handler) chain(need access, audit string, fn http.HandlerFunc, opts ...routeOption) http.Handler {
	rt := route{maxBody: maxFormBytes}
	for _, o := range opts {
		o(&rt)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := stateOf(r) // ServeHTTP's, its headers set
		unsafe := r.Method != http.MethodGet && r.Method != http.MethodHead
		if unsafe {
			r.Body = http.MaxBytesReader(w, r.Body, rt.maxBody)
			if err := crossOrigin.Check(r); err != nil {
				h.forbidden(w, r, "The request came from another site and was refused.")
				return
			}
		}
		h.loadSession(w, r, st)
		if need > public && st.session == nil {
			h.toSignIn(w, r)
			return
		}
		if st.session != nil && (need == writer && !st.session.Role.CanWrite() || need == manager && !st.session.Role.CanManage()) {
			h.forbidden(w, r, "Your role ("+string(st.session.Role)+") may not do this.")
			return
		}
		if unsafe && !h.formRead(w, r) {
			return
		}
		if unsafe && !validCSRF(r, st.csrf) {
			h.forbidden(w, r, "The form has expired. Reload the page and try again.")
			return
		}
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		fn(rec, r)
		if audit != "" && unsafe && rec.status < 400 && st.session != nil {
			if err := h.db.RecordAudit(r.Context(), st.session.AccountID, actor(r), audit, st.target); err != nil {
				h.log.ErrorContext(r.Context(), "audit line not recorded", "action", audit, "err", err)
			}
		}
	})
}

// securityHeaders are on every console answer: a strict CSP (scripts and
// styles only from the console's own files; the styles the code editor
// adds carry the page's nonce), no framing, no referrer (pages may carry
// tokens in their address) and no caching of pages.
func (h *Handler) securityHeaders(w http.ResponseWriter, st *state) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self' 'nonce-"+st.nonce+"'; "+
		"img-src 'self' data: https:; font-src 'self'; connect-src 'self'; form-action 'self'; frame-src 'self'; "+
		"frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
}

// loadSession finds the request's session from its cookie, and the CSRF
// token its forms carry: the session's, or the CSRF cookie's (set here
// when missing) for a browser that is not signed in.
func (h *Handler) loadSession(w http.ResponseWriter, r *http.Request, st *state) {
	if c, err := r.Cookie(h.sessionCookie); err == nil && c.Value != "" && len(c.Value) <= 64 {
		s, err := h.db.Session(r.Context(), c.Value, h.cfg.Session)
		switch {
		case err == nil:
			st.session, st.token, st.csrf = &s, c.Value, s.CSRF
			return
		case mail.ErrorCode(err) == mail.ENOTFOUND:
			h.clearCookie(w, h.sessionCookie) // expired or signed out
		default:
			h.log.ErrorContext(r.Context(), "session not read", "err", err)
		}
	}
	if c, err := r.Cookie(h.csrfCookie); err == nil && len(c.Value) >= 32 && len(c.Value) <= 64 {
		st.csrf = c.Value
		return
	}
	st.csrf = mail.RandomToken(32)
	http.SetCookie(w, &http.Cookie{Name: h.csrfCookie, Value: st.csrf, Path: "/", HttpOnly: true,
		Secure: h.secure, SameSite: http.SameSiteLaxMode})
}

// formRead reads an urlencoded form's body, answering 413 when it is over
// the limit (so a long form does not read as a missing token).
func (h *Handler) formRead(w http.ResponseWriter, r *http.Request) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		return true
	}
	err := r.ParseForm()
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		h.problem(w, r, http.StatusRequestEntityTooLarge, "Too large", "The form is too large.")
		return false
	case err != nil:
		h.problem(w, r, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return false
	}
	return true
}

// validCSRF is true when the request carries want in its csrf form field
// or X-CSRF-Token header.
func validCSRF(r *http.Request, want string) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	return want != "" && got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// toSignIn sends a request without a live session to the sign-in page,
// to come back to the page it asked for.
func (h *Handler) toSignIn(w http.ResponseWriter, r *http.Request) {
	next := "/"
	if r.Method == http.MethodGet {
		next = r.URL.RequestURI()
	}
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", "/signin")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, "/signin?next="+url.QueryEscape(next), http.StatusSeeOther)
}

// localPath is next when it names a page of this site, else "/". A
// backslash anywhere is refused: browsers read it as a slash, and the
// redirect cleans the path, so /./\evil.example would leave as
// /\evil.example, another host's address.
func localPath(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n\t") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}

// actor is who does the request's write, for the audit trail.
func actor(r *http.Request) postgres.Actor {
	a := postgres.Actor{IP: clientIP(r)}
	if s := session(r); s != nil {
		a.UserID, a.Name = s.UserID, s.Email
	}
	return a
}

// clientIP is the address the request came from: the connection's, or,
// when that is a trusted proxy, the last address in X-Forwarded-For that
// is not one (what a client writes there itself comes before it).
func (h *Handler) clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || !h.trusted(addr) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if a = a.Unmap(); !h.trusted(a) {
			return a.String()
		}
	}
	return host
}

func (h *Handler) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range h.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientIP is the request's client address (see Handler.clientIP).
func clientIP(r *http.Request) string { return stateOf(r).ip }

func (h *Handler) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: h.secure, SameSite: http.SameSiteLaxMode})
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wroteHeader {
		s.status, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// errorCode is err's mail code ("" for others).
func errorCode(err error) string {
	var e *mail.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
