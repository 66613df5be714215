package console

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mailroom/mailroom/internal/mail"
)

// statsData is the statistics page's model.
type statsData struct {
	Send     mail.SingleSend
	State    sendState
	Figures  []figure
	Links    []linkRow
	Timeline string // the hourly series as JSON, for the chart's script
	Hours    int
}

// figure is one counter with its rate.
type figure struct {
	Name, Value, Rate, Of string
}

// linkRow is one link's clicks.
type linkRow struct {
	URL, Unique, Total string
}

// timeline is the chart's data: one value per hour in each series.
type timeline struct {
	Hours     []int64 `json:"hours"` // Unix seconds
	Delivered []int64 `json:"delivered"`
	Opens     []int64 `json:"opens"`
	Clicks    []int64 `json:"clicks"`
	Bounces   []int64 `json:"bounces"`
}

// sendStats answers GET /sends/{utr}/stats: the send's statistics as
// GET /api/single-send/stats reads them (the same storage function), as
// numbers and rates, the hourly timeline drawn by static/sends.js, and the
// clicks by link.
func (h *Handler) sendStats(w http.ResponseWriter, r *http.Request) {
	ss, ok := h.loadSend(w, r)
	if !ok {
		return
	}
	st, err := h.db.SingleSendStats(r.Context(), session(r).AccountID, ss.UTR)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := statsData{Send: ss, State: sendStateOf(ss.Status, ss.PausedAt != nil, ss.CancelledAt, nil, ss.SentAt), Hours: len(st.Timeline)}
	c := st.Counts
	d.Figures = []figure{
		{"Delivered", count(c.Delivered), rate(c.Delivered, c.Triggered), "of " + count(c.Triggered) + " recipients"},
		{"Unique opens", count(c.UniqueOpens), rate(c.UniqueOpens, c.Delivered), "of delivered (" + count(c.TotalOpens) + " opens)"},
		{"Unique clicks", count(c.UniqueClicks), rate(c.UniqueClicks, c.Delivered), "of delivered (" + count(c.TotalClicks) + " clicks)"},
		{"Bounces", count(c.Bounces), rate(c.Bounces, c.Triggered), "of recipients (" + count(c.SoftBounces) + " soft)"},
		{"Unsubscribes", count(c.Unsubscribes), rate(c.Unsubscribes, c.Delivered), "of delivered"},
		{"Complaints", count(c.Complaints), rate(c.Complaints, c.Delivered), "of delivered"},
	}
	for _, l := range st.Links {
		d.Links = append(d.Links, linkRow{URL: l.URL, Unique: count(l.UniqueClicks), Total: count(l.TotalClicks)})
	}
	t := timeline{Hours: []int64{}, Delivered: []int64{}, Opens: []int64{}, Clicks: []int64{}, Bounces: []int64{}}
	for _, hc := range st.Timeline {
		t.Hours = append(t.Hours, hc.Hour.Unix())
		t.Delivered = append(t.Delivered, hc.Delivered)
		t.Opens = append(t.Opens, hc.UniqueOpens)
		t.Clicks = append(t.Clicks, hc.UniqueClicks)
		t.Bounces = append(t.Bounces, hc.Bounces)
	}
	b, err := json.Marshal(t)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.Timeline = string(b)
	h.render(w, r, http.StatusOK, "send_stats", page{Title: "Statistics of " + ss.Name, Nav: "sends", Data: d})
}

// rate is n of all as a percentage with one decimal, "–" when all is 0.
func rate(n, all int64) string {
	if all <= 0 {
		return "–"
	}
	return strconv.FormatFloat(float64(n)*100/float64(all), 'f', 1, 64) + "%"
}
