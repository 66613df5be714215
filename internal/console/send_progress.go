package console

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// The progress fragment asks again every second while a send runs or is
// about to (every ten while its time is further off). It carries the last few seconds of
// (final deliveries, time) samples in its next request (hx-vals), so the
// current rate is computed from the database's own counters and clock
// without the server keeping anything.
const (
	rateWindow = 5 * time.Second // the rate is over the samples this recent
	maxSamples = 8
)

// progressData is the progress fragment's model.
type progressData struct {
	UTR                                                       string
	State                                                     sendState
	Running, Done, Waiting                                    bool
	Percent                                                   int
	Final, Triggered, Delivered, Remaining, Bounced, Deferred string
	Rate                                                      string // "1,234 mails/s", "" before there are two samples
	Took                                                      string // how long a completed send ran
	Vals                                                      string // hx-vals of the next request
	Poll                                                      string // the next request's delay, "" for none
	Paused                                                    string // why a reputation guard paused the running send
	Cancelled                                                 string // the mails a cancel skipped, "" for none
	CanResume                                                 bool   // the member may resume it (not a viewer)
	CSRF                                                      string // the resume form's token
}

// withResume lets the member of r resume a paused send from the fragment.
func (d progressData) withResume(r *http.Request) progressData {
	if d.Paused != "" {
		d.CanResume, d.CSRF = session(r).Role.CanWrite(), stateOf(r).csrf
	}
	return d
}

// sendProgress answers GET /sends/{utr}/progress?s=: the progress
// fragment of the account's send.
func (h *Handler) sendProgress(w http.ResponseWriter, r *http.Request) {
	utr, valid := mail.ParseUTR(r.PathValue("utr"))
	if !valid {
		h.fail(w, r, mail.NotFound())
		return
	}
	p, err := h.db.SendProgress(r.Context(), session(r).AccountID, utr)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.fragment(w, r, "send_show", "send-progress", progressOf(utr, p, r.URL.Query().Get("s")).withResume(r))
}

// progressOf is the fragment's model for p, with the earlier samples
// (the s the last fragment carried).
func progressOf(utr string, p mail.SendProgress, samples string) progressData {
	d := progressData{UTR: utr, State: sendStateOf(p.Status, p.PausedReason != "", p.CancelledAt, p.DueAt, p.SentAt),
		Running: p.Status == mail.SendRunning,
		Done:    p.Status == mail.SendCompleted, Waiting: p.Status == mail.SendReady, Triggered: count(p.Triggered),
		Final: count(p.Went()), Delivered: count(p.Delivered), Remaining: count(p.Remaining), Bounced: count(p.Bounces),
		Deferred: count(p.Deferred), Paused: p.PausedReason}
	if p.Cancelled > 0 {
		d.Cancelled = count(p.Cancelled)
	}
	switch {
	case p.Triggered > 0:
		d.Percent = int(p.Went() * 100 / p.Triggered)
	case d.Done:
		d.Percent = 100
	}
	if d.Done && p.StartedAt != nil && p.SentAt != nil {
		d.Took = p.SentAt.Sub(*p.StartedAt).Round(time.Second).String()
	}
	if !d.Running {
		d.Remaining = count(0)
		switch {
		case !d.Waiting:
		case p.DueAt != nil && p.DueAt.Sub(p.ReadAt) > time.Minute:
			d.Poll = "10s" // not due for a while
		default:
			d.Poll = "1s" // about to start
		}
		return d
	}
	kept := append(readSamples(samples), sample{p.Done(), p.ReadAt.UnixMilli()})
	for len(kept) > 2 && kept[len(kept)-1].at-kept[0].at > rateWindow.Milliseconds() || len(kept) > maxSamples {
		kept = kept[1:]
	}
	if first, last := kept[0], kept[len(kept)-1]; last.at-first.at >= 500 && last.final >= first.final {
		d.Rate = count((last.final-first.final)*1000/(last.at-first.at)) + " mails/s"
	}
	parts := make([]string, len(kept))
	for i, s := range kept {
		parts[i] = strconv.FormatInt(s.final, 10) + "@" + strconv.FormatInt(s.at, 10)
	}
	vals, _ := json.Marshal(map[string]string{"s": strings.Join(parts, ",")})
	d.Vals, d.Poll = string(vals), "1s"
	return d
}

// sample is a count of final deliveries at a time (Unix ms).
type sample struct{ final, at int64 }

// readSamples reads "final@ms,final@ms", oldest first; anything else in
// it is dropped.
func readSamples(s string) []sample {
	var out []sample
	for _, part := range strings.Split(s, ",") {
		f, at, ok := strings.Cut(part, "@")
		n, err1 := strconv.ParseInt(f, 10, 64)
		t, err2 := strconv.ParseInt(at, 10, 64)
		if !ok || err1 != nil || err2 != nil || n < 0 || t <= 0 || len(out) > 0 && t <= out[len(out)-1].at {
			continue
		}
		out = append(out, sample{n, t})
	}
	if len(out) > maxSamples {
		out = out[len(out)-maxSamples:]
	}
	return out
}
