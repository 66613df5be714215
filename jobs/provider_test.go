package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// A send's outcomes are counted by the recipients' mailbox providers as
// they are recorded (a real SMTP server accepting, refusing and putting
// off), with the complaints and hard bounces reported later; the API
// answers them per send and for the account over a period.
func TestProviderReport(t *testing.T) {
	// Not parallel: its sweeper works on every send of the package's
	// database.
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, `<html><body><p>Hi ((first_name))</p></body></html>`)
	for _, e := range []string{"a@gmail.com", "b@GMAIL.com", "c@outlook.com", "d@hotmail.com", "e@yahoo.com", "f@icloud.com"} {
		exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name) VALUES ($1, $2, $3, 'P')`, f.user, f.typeA, e)
	}
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		switch strings.ToLower(strings.Split(rcpt, "@")[0]) {
		case "gone", "d":
			return smtptest.Permanent("no such user")
		case "later", "e":
			return smtptest.Temporary("try later")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 3, Window: 2, StallAfter: time.Hour})
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
	q.drain(t, mux)

	// Reported later: a complaint from a Gmail user, a hard bounce from
	// an Apple one.
	for _, r := range []struct {
		email string
		kind  mail.FeedbackKind
	}{{"a@gmail.com", mail.Complaint}, {"f@icloud.com", mail.HardBounce}} {
		id := scalar[int64](t, d, "SELECT id FROM deliveries WHERE send_id = $1 AND email = $2", f.send, r.email)
		res, err := d.RecordFeedback(ctx, mail.Feedback{Kind: r.kind, SendID: f.send, DeliveryID: id, Reason: "abuse", Status: "5.1.1", Via: "arf"})
		if err != nil || !res.Counted {
			t.Fatalf("%s: %+v %v", r.email, res, err)
		}
	}

	get := apiGet(t, d)
	_, theirs, err := d.CreateAccount(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	call := func(keys mail.Keys, path string, code int, want string) {
		t.Helper()
		if got, body := get(keys, path); got != code || body != want {
			t.Fatalf("%s: %d %s\nwant %d %s", path, got, body, code, want)
		}
	}
	utr := scalar[string](t, d, "SELECT utr::text FROM single_sends WHERE id = $1", f.send)
	// gmail: a, b delivered, a complained; microsoft: c delivered, d
	// refused at RCPT; yahoo: e put off; apple: f delivered, then
	// reported bounced; others: ann, Bob, hank delivered, gone refused,
	// later put off.
	figures := `[{"provider":"gmail","delivered":2,"deferred":0,"bounced":0,"blocked":0,"complained":1},` +
		`{"provider":"microsoft","delivered":1,"deferred":0,"bounced":1,"blocked":0,"complained":0},` +
		`{"provider":"yahoo","delivered":0,"deferred":1,"bounced":0,"blocked":0,"complained":0},` +
		`{"provider":"apple","delivered":1,"deferred":0,"bounced":1,"blocked":0,"complained":0},` +
		`{"provider":"others","delivered":3,"deferred":1,"bounced":1,"blocked":0,"complained":0}]`
	call(f.keys, "/api/single-send/providers?utr="+utr, 200, `{"status":"success","message":{"providers":`+figures+`}}`)
	call(theirs, "/api/single-send/providers?utr="+utr, 404, `{"status":"failed","errors":"Record not found"}`)
	call(f.keys, "/api/single-send/providers", 422, `{"status":"failed","errors":{"utr":["The utr field is required."]}}`)

	today := time.Now().UTC().Format(time.DateOnly)
	from := time.Now().UTC().AddDate(0, 0, -29).Format(time.DateOnly)
	call(f.keys, "/api/providers", 200, `{"status":"success","message":{"from":"`+from+`","to":"`+today+`","providers":`+figures+`}}`)
	zero := `[{"provider":"gmail","delivered":0,"deferred":0,"bounced":0,"blocked":0,"complained":0},` +
		`{"provider":"microsoft","delivered":0,"deferred":0,"bounced":0,"blocked":0,"complained":0},` +
		`{"provider":"yahoo","delivered":0,"deferred":0,"bounced":0,"blocked":0,"complained":0},` +
		`{"provider":"apple","delivered":0,"deferred":0,"bounced":0,"blocked":0,"complained":0},` +
		`{"provider":"others","delivered":0,"deferred":0,"bounced":0,"blocked":0,"complained":0}]`
	call(f.keys, "/api/providers?from=2020-01-01&to=2020-01-31", 200, `{"status":"success","message":{"from":"2020-01-01","to":"2020-01-31","providers":`+zero+`}}`)
	call(theirs, "/api/providers", 200, `{"status":"success","message":{"from":"`+from+`","to":"`+today+`","providers":`+zero+`}}`)
	call(f.keys, "/api/providers?from=junk&to=2020-02-30", 422,
		`{"status":"failed","errors":{"to":["The to must be a valid date in the form YYYY-MM-DD."],"from":["The from must be a valid date in the form YYYY-MM-DD."]}}`)
	call(f.keys, "/api/providers?from=2020-02-01&to=2020-01-31", 422, `{"status":"failed","errors":{"to":["The to must be a date after or equal to from."]}}`)
	call(f.keys, "/api/providers?from=2020-01-01&to=2021-01-01", 422, `{"status":"failed","errors":{"to":["The period may not be longer than 366 days."]}}`)
	call(f.keys, "/api/providers?to=0000-01-01", 422, `{"status":"failed","errors":{"from":["The from must be a valid date in the form YYYY-MM-DD."]}}`)
}
