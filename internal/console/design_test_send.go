package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// designTestSend answers POST …/test of the design editor: the posted
// design (saved or not) goes as a test mail to up to five addresses, made
// for the preview's contact, by the worker (task design:test-send) through
// the transport a send's mails take; it counts in no statistic. The page
// comes back as it was posted, saying where the mail goes or what is
// wrong.
func (h *Handler) designTestSend(w http.ResponseWriter, r *http.Request) {
	rec, err := h.designRecord(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	es := postedState(r, &rec)
	again := func(status int, p page) { h.editor(w, r, status, &rec, es, p) }
	in, err := h.designInput(r, &rec)
	c, cerr := h.previewContact(r)
	to, terr := mail.ParseTestRecipients("test_recipients", []string{r.PostFormValue("test_recipients")})
	err = mail.JoinInvalid(err, cerr, terr)
	if err == nil {
		err = h.testSender(r, &rec)
	}
	if err == nil {
		err = h.testRecipients(r, to)
	}
	if err == nil {
		_, err = h.renderDesign(&rec, in, c)
	}
	if fe := fieldErrors(err); fe != nil {
		again(http.StatusUnprocessableEntity, page{Errors: fe})
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if wait, ok := h.allowTest(r); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		again(http.StatusTooManyRequests, page{Message: "Too many test mails. Try again in " + strconv.Itoa(wait) + " seconds."})
		return
	}
	if h.deps.DesignTest == nil {
		again(http.StatusServiceUnavailable, page{Message: "Test mails cannot be sent: this server has no worker queue."})
		return
	}
	id, err := h.db.CreateDesignTest(r.Context(), mail.DesignTest{UserID: session(r).AccountID, SenderID: rec.SenderID,
		ContactID: c.ContactID, Subject: rec.Subject, Preheader: rec.Preheader, HTML: in.TemplateHTML, Recipients: to})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.deps.DesignTest(r.Context(), id); err != nil {
		h.log.ErrorContext(r.Context(), "test mail not queued", "design_test", id, "err", err)
		again(http.StatusServiceUnavailable, page{Message: "The test mail could not be queued. Try again in a moment."})
		return
	}
	stateOf(r).target = rec.Name
	again(http.StatusOK, page{Notice: "A test mail is on its way to " + strings.Join(mail.EmailStrings(to), ", ") + "."})
}

// testSender checks that rec's sender may send a test: a live sender of
// the account, verified unless unverified senders are allowed (the API's
// messages for a send).
func (h *Handler) testSender(r *http.Request, rec *mail.DesignRecord) error {
	got, err := h.db.SendReferences(r.Context(), session(r).AccountID, mail.SendRefs{SenderID: rec.SenderID})
	switch {
	case err != nil:
		return err
	case !got.Sender:
		return mail.Invalid("sender", "The selected sender id is invalid: give the mail a sender before a test.")
	case !got.SenderVerified && !h.cfg.AllowUnverifiedSenders:
		return mail.Invalid("sender", "The selected sender is not verified.")
	}
	return nil
}

// testRecipients refuses test mails to the account's suppressed
// addresses (global unsubscribes and hard bounces), as a send would: a
// test is still a mail to that person.
func (h *Handler) testRecipients(r *http.Request, to []mail.Email) error {
	out, err := h.db.SuppressedAmong(r.Context(), session(r).AccountID, to)
	if err != nil || len(out) == 0 {
		return err
	}
	return mail.Invalid("test_recipients", "Suppressed (unsubscribed from all mail or bounced), so no test mail goes to: "+
		strings.Join(mail.EmailStrings(out), ", ")+".")
}

// allowTest takes one test mail of the account's allowance; when it is
// spent, the seconds to wait.
func (h *Handler) allowTest(r *http.Request) (int, bool) {
	if h.deps.LimitTestSends == nil {
		return 0, true
	}
	ok, wait, err := h.deps.LimitTestSends(r.Context(), strconv.FormatInt(session(r).AccountID, 10))
	if err != nil {
		h.log.WarnContext(r.Context(), "test mail limit not checked: the test goes", "err", err)
		return 0, true
	}
	if !ok {
		return max(1, int((wait+time.Second-1)/time.Second)), false
	}
	return 0, true
}
