package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// sendsPage is how many sends the list shows at once.
const sendsPage = 20

// sendNotices are the lines a redirect may ask a send page to show; the
// page shows only these, never text from the address.
var sendNotices = map[string]string{
	"sending":    "The send is saved and on its way.",
	"scheduled":  "The send is saved and scheduled.",
	"duplicated": "This is a copy, saved as a draft: change what you need, review it, then send it.",
	"deleted":    "The send is deleted.",
	"resumed":    "The send is resumed: it goes on within a few seconds.",
	"cancelled":  "The send is cancelled: the mails it had not sent are skipped.",
}

// sendRow is a send as the list shows it.
type sendRow struct {
	mail.SendSummary
	State                                 sendState
	Percent                               int // of its deliveries final, for a running or completed send
	Recipients, Delivered, Bounces, Opens string
	Changeable                            bool // a draft or a send waiting for its time
}

// sendState is how a send's status reads, and when.
type sendState struct {
	Label, Class string
	At           *time.Time // when it is due, or when it finished
}

// sendStateOf is how a send of status, due at due and sent at sent reads:
// a running one a reputation guard paused as Paused, one cancelled after
// its pause (at cancelled) as Cancelled.
func sendStateOf(status int16, paused bool, cancelled, due, sent *time.Time) sendState {
	switch {
	case status == mail.SendRunning && paused:
		return sendState{Label: "Paused", Class: "paused"}
	case cancelled != nil:
		return sendState{Label: "Cancelled", Class: "cancelled", At: cancelled}
	}
	switch status {
	case mail.SendDraft:
		return sendState{Label: "Draft", Class: "draft"}
	case mail.SendReady:
		return sendState{Label: "Scheduled", Class: "scheduled", At: due}
	case mail.SendRunning:
		return sendState{Label: "Sending", Class: "running"}
	}
	return sendState{Label: "Sent", Class: "completed", At: sent}
}

// listData is the list page's model.
type listData struct {
	Rows         []sendRow
	Page, Pages  int64
	Total        string
	Newer, Older int64 // the neighbouring pages, 0 for none
}

// sendHome answers GET /: the sends are the console's first page.
func (h *Handler) sendHome(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/sends", http.StatusSeeOther)
}

// sendList answers GET /sends?page=: the account's sends, newest first,
// 20 at a time, with their state, counters and progress.
func (h *Handler) sendList(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.URL.Query().Get("page"), 10, 64)
	if err != nil || n < 1 {
		n = 1
	}
	sends, total, err := h.db.SendSummaries(r.Context(), session(r).AccountID, mail.Page{Number: n, Size: sendsPage})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := listData{Page: n, Pages: (total + sendsPage - 1) / sendsPage, Total: count(total) + " sends"}
	if total == 1 {
		d.Total = "1 send"
	}
	if n > 1 {
		d.Newer = min(n-1, max(d.Pages, 1))
	}
	if n < d.Pages {
		d.Older = n + 1
	}
	for _, s := range sends {
		row := sendRow{SendSummary: s, State: sendStateOf(s.Status, s.Paused, s.CancelledAt, s.DueAt, s.SentAt),
			Recipients: count(s.Triggered), Delivered: count(s.Delivered), Bounces: count(s.Bounces), Opens: count(s.UniqueOpens),
			Changeable: s.Status == mail.SendDraft || s.Status == mail.SendReady}
		if s.Triggered > 0 {
			row.Percent = int(s.Went() * 100 / s.Triggered)
		} else if s.Status == mail.SendCompleted {
			row.Percent = 100
		}
		d.Rows = append(d.Rows, row)
	}
	h.render(w, r, http.StatusOK, "send_list", page{Title: "Sends", Nav: "sends", Notice: sendNotices[r.URL.Query().Get("notice")], Data: d})
}
