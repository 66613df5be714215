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

// A design test mail goes to each of its addresses with the chosen
// contact's values, [Test] before its subject, no pixel, no tracked link
// and no List-Unsubscribe; an address put off is tried again by the
// retry, and only it; once all are done the row is gone and a replay
// sends nothing. Nothing of it counts: no deliveries row, no event.
func TestDesignTestSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, `<p>x</p>`)
	ann := scalar[int64](t, d, `SELECT id FROM contacts WHERE user_id = $1 AND email = 'ann@example.com'`, f.user)
	sender := scalar[int64](t, d, `SELECT sender_id FROM single_sends WHERE id = $1`, f.send)
	tries := map[string]int{}
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		if tries[rcpt]++; strings.HasPrefix(rcpt, "later@") && tries[rcpt] == 1 {
			return smtptest.Temporary("try later")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, _, _ := engine(t, d, pool, jobs.Engine{})

	id, err := d.CreateDesignTest(ctx, mail.DesignTest{UserID: f.user, SenderID: sender, ContactID: ann,
		Subject: "Hello ((first_name))", Preheader: "Soon",
		HTML:       `<html><body><p>Hi ((first_name)) of ((company_name)), this is ((email)).</p><p><a href="https://acme.example/shop">Shop</a> <a href="((unsubscribe_preferences))">Preferences</a></p></body></html>`,
		Recipients: []mail.Email{"me@example.com", "later@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	task := jobs.NewDesignTestSendTask(id)
	if err := mux.ProcessTask(ctx, task); err == nil || !strings.Contains(err.Error(), "1 addresses to try again") {
		t.Fatalf("first run: %v", err)
	}
	if s.Count() != 1 || scalar[int](t, d, "SELECT cardinality(done) FROM design_tests WHERE id = $1", id) != 1 {
		t.Fatalf("after the first run: %d mails", s.Count())
	}
	if err := mux.ProcessTask(ctx, task); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if err := mux.ProcessTask(ctx, task); err != nil { // a replay: the row is gone
		t.Fatalf("replay: %v", err)
	}
	if s.Count() != 2 || tries["me@example.com"] != 1 || tries["later@example.com"] != 2 {
		t.Fatalf("%d mails, tries %v", s.Count(), tries)
	}
	for i, to := range []string{"me@example.com", "later@example.com"} {
		m := s.Messages()[i]
		html, h := htmlOf(t, m.Data)
		text, _ := partOf(t, m.Data, "text/plain")
		if m.To[0] != to || h.Get("Subject") != "[Test] Hello Ann" || h.Get("From") != `"Acme Shop" <news@acme.example>` && h.Get("From") != "Acme Shop <news@acme.example>" {
			t.Fatalf("mail %d: to %v, %q from %q", i, m.To, h.Get("Subject"), h.Get("From"))
		}
		if !strings.Contains(html, "Hi Ann of Acme &amp; Co, this is "+to+".") || !strings.Contains(html, `href="https://acme.example/shop"`) ||
			!strings.Contains(html, `href="https://m.example.test/unsubscribe/test"`) || strings.Contains(html, "/o/") ||
			h.Get("List-Unsubscribe") != "" || !strings.Contains(text, "Hi Ann of Acme & Co") {
			t.Fatalf("mail %d:\n%s\n%s\n%v", i, html, text, h)
		}
	}
	if n := scalar[int64](t, d, `SELECT (SELECT count(*) FROM design_tests) + (SELECT count(*) FROM deliveries WHERE send_id = $1) +
		(SELECT count(*) FROM events WHERE user_id = $2)`, f.send, f.user); n != 0 {
		t.Fatalf("%d rows left or counted", n)
	}
}
