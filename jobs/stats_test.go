package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/mailroom/mailroom/internal/activity"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// A send's statistics, read through the real router, say what the SMTP
// server and the pixel saw: delivered, a hard bounce, a soft bounce (a
// policy refusal), a deferral then its delivery, opens and an unsubscribe;
// the timeline's hours add up to the totals.
func TestSendStatistics(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, `<html><body><p>Hi ((first_name))</p></body></html>`)
	tries := map[string]int{}
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		tries[rcpt]++
		switch {
		case strings.HasPrefix(rcpt, "gone@"):
			return smtptest.Permanent("no such user")
		case strings.HasPrefix(rcpt, "hank@"):
			return &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 7, 1}, Message: "refused by policy"}
		case strings.HasPrefix(rcpt, "later@") && tries[rcpt] == 1:
			return smtptest.Temporary("try later")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 2, Window: 2, StallAfter: time.Second})
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
	q.drain(t, mux)
	exec(t, d, "UPDATE deliveries SET next_at = now() WHERE send_id = $1 AND status = 0", f.send)
	exec(t, d, "UPDATE single_sends SET progress_at = now() - interval '1 minute' WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewSweepSendsTask())
	q.drain(t, mux)
	if got := sendCounters(t, d, f.send); got.Status != 3 {
		t.Fatalf("send not completed: %+v", got)
	}

	rec := activity.New(d, slog.New(slog.NewTextHandler(io.Discard, nil)), activity.Options{Every: time.Hour})
	defer rec.Close(ctx)
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: d, Geo: testdb.Geo(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Activity: rec})
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("PublicKey", f.keys.Public)
		r.Header.Set("SecretKey", f.keys.Secret)
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	// Two opens of ann's mail, one of Bob's.
	for _, m := range s.Messages() {
		html, _ := htmlOf(t, m.Data)
		px := pixelRE.FindStringSubmatch(html)
		if px == nil {
			t.Fatalf("no pixel in\n%s", html)
		}
		n := map[string]int{"ann@example.com": 2, "Bob@example.com": 1}[m.To[0]]
		for range n {
			if code, _ := get(px[1]); code != 200 {
				t.Fatalf("pixel: %d", code)
			}
		}
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// ann leaves the send's group from her mail's page.
	if _, err := d.UnsubscribeRecipient(ctx, mail.UnsubscribeToken{UserID: f.user, Email: "ann@example.com", GroupID: f.group, SendID: f.send},
		&f.group, mail.ViaOneClick); err != nil {
		t.Fatal(err)
	}

	utr := scalar[string](t, d, "SELECT utr::text FROM single_sends WHERE id = $1", f.send)
	hours := scalar[[]time.Time](t, d, "SELECT array_agg(hour ORDER BY hour) FROM send_stats WHERE scope = 's' AND scope_id = $1", f.send)
	// Triggered 5: ann, Bob, gone, later and hank (the segment's); carol
	// excluded, dave, erin and frank suppressed. Delivered: ann, Bob and
	// later (deferred once); gone bounced, hank refused by policy.
	const counts = `"triggered":%d,"delivered":%d,"deferred":%d,"bounces":%d,"soft_bounces":%d,"unique_opens":%d,"total_opens":%d,"unique_clicks":0,"total_clicks":0,"unsubscribes":%d,"complaints":0`
	total := fmt.Sprintf(counts, 5, 3, 1, 1, 1, 2, 3, 1)
	code, body := get("/api/single-send/stats?utr=" + utr)
	if len(hours) == 1 {
		timeline := fmt.Sprintf(`{"hour":%q,`+counts+`}`, hours[0].UTC().Format(time.RFC3339), 5, 3, 1, 1, 1, 2, 3, 1)
		if want := `{"status":"success","message":{` + total + `,"links":[],"timeline":[` + timeline + `]}}`; code != 200 || body != want {
			t.Fatalf("stats: %d\n%s\nwant\n%s", code, body, want)
		}
	} else {
		// The send crossed an hour: the split is the clock's, the sums not.
		var st struct {
			mail.Counts
			Timeline []mail.HourCounts
		}
		var env struct{ Message json.RawMessage }
		if err := json.Unmarshal([]byte(body), &env); err != nil || json.Unmarshal(env.Message, &st) != nil {
			t.Fatalf("stats: %d %s", code, body)
		}
		var sum mail.Counts
		for _, h := range st.Timeline {
			sum.Add(h.Counts)
		}
		if !strings.HasPrefix(body, `{"status":"success","message":{`+total+`,"links":[],"timeline":[`) || sum != st.Counts || len(st.Timeline) != len(hours) {
			t.Fatalf("stats over %d hours: %d %s", len(hours), code, body)
		}
	}
	if code, body := get("/api/single-send/stats?utr=9b2f4f4e-1a7f-4a8e-9e51-7f1f0f0f0f0f"); code != 404 || body != `{"status":"failed","errors":"Record not found"}` {
		t.Fatalf("unknown utr: %d %s", code, body)
	}
	if code, body := get("/api/single-send/stats"); code != 422 || body != `{"status":"failed","errors":{"utr":["The utr field is required."]}}` {
		t.Fatalf("no utr: %d %s", code, body)
	}
	if code, body := get("/api/automations/stats?utr=" + utr); code != 404 || body != `{"status":"failed","errors":"Record Not Found"}` {
		t.Fatalf("a single send's utr as an automation: %d %s", code, body)
	}
}
