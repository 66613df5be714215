package jobs_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// A send through several relays (real SMTP servers, one of which goes
// away mid-send): every mail delivered once, none failed, no attempt
// counted twice; the relays that stayed split the mail by their weights,
// the Gmail users' mails go to the relay routed Gmail, and a send naming
// a relay goes there.
func TestSendThroughRelays(t *testing.T) {
	// Not parallel: its sweeper works on every send of the package's
	// database.
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, `<html><body><p>Hi ((first_name))</p></body></html>`)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'r' || i || '@example.com', 'R' FROM generate_series(1, 3000) i`, f.user, f.typeA)
	exec(t, d, `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'p' || i || '@gmail.com', 'P' FROM generate_series(1, 50) i`, f.user, f.typeA)
	a, b, c, g := smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{}), smtptest.New(t, smtptest.Options{}),
		smtptest.New(t, smtptest.Options{})
	cfgs, err := smtp.ParseURLs(strings.Join([]string{
		"smtp://" + a.Addr + "?name=a&weight=1&pool=4", "smtp://" + b.Addr + "?name=b&weight=2&pool=4",
		"smtp://" + c.Addr + "?name=c&weight=3&pool=4", "smtp://" + g.Addr + "?name=g&providers=gmail&pool=2",
	}, " "))
	if err != nil {
		t.Fatal(err)
	}
	relays := smtp.NewRelays(cfgs, nil)
	defer relays.Close()
	mux, q, _ := engine(t, d, relays, jobs.Engine{BatchSize: 200, Window: 4, Concurrency: 8, StallAfter: time.Hour})

	// c goes away once 900 mails went out.
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		for a.Count()+b.Count()+c.Count()+g.Count() < 900 {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
		c.GoAway()
	})
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
	q.drainConcurrently(t, mux, 2)
	close(stop)
	watch.Wait()

	rows := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1", f.send)
	notSent := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1 AND status <> 2", f.send)
	retried := scalar[int64](t, d, "SELECT count(*) FROM deliveries WHERE send_id = $1 AND attempts <> 1", f.send)
	if rows < 3050 || notSent != 0 || retried != 0 {
		t.Fatalf("%d deliveries, %d not sent, %d with attempts other than 1", rows, notSent, retried)
	}
	seen := map[string]int{}
	for _, s := range []*smtptest.Server{a, b, c, g} {
		for _, m := range s.Messages() {
			for _, to := range m.To {
				seen[strings.ToLower(to)]++
			}
		}
	}
	for to, n := range seen {
		if n != 1 {
			t.Errorf("%s received %d times", to, n)
		}
	}
	if int64(len(seen)) != rows {
		t.Fatalf("%d recipients received, %d deliveries", len(seen), rows)
	}
	for _, m := range g.Messages() {
		if !strings.HasSuffix(m.To[0], "@gmail.com") {
			t.Errorf("the Gmail relay took %s", m.To[0])
		}
	}
	if g.Count() != 50 {
		t.Errorf("the Gmail relay took %d of the 50 Gmail users' mails", g.Count())
	}
	// c took about half of the first 900, and nothing once gone; a and b
	// took the rest 1:2.
	if c.Count() < 300 || c.Count() > 600 {
		t.Errorf("c, gone after about 900 mails, took %d", c.Count())
	}
	ab := a.Count() + b.Count()
	if diff := b.Count() - 2*a.Count(); diff*100 > 3*ab || -diff*100 > 3*ab {
		t.Errorf("a took %d and b %d: not 1:2 within 3%%", a.Count(), b.Count())
	}
	if st := relays.Stats(); !st[2].Out || st[2].Failovers == 0 {
		t.Errorf("c after it went away: %+v", st[2])
	}
	t.Logf("a %d, b %d, c %d (gone), g %d", a.Count(), b.Count(), c.Count(), g.Count())

	// A copy naming relay a goes there whole, Gmail users included.
	before := a.Count()
	exec(t, d, `UPDATE single_sends SET status = 3 WHERE id = $1`, f.send)
	copyID := scalar[int64](t, d, `INSERT INTO single_sends (user_id, utr, template_id, template_html, sender_id, unsubscribe_group_id,
			single_send_name, subject, preheader, recipient_id, exclude_specific_recipient_id, status, due_at, unique_open_token, relay)
		SELECT user_id, gen_random_uuid(), template_id, template_html, sender_id, unsubscribe_group_id, 'Copy', subject, preheader,
			recipient_id, exclude_specific_recipient_id, 1, now(), unique_open_token, 'a' FROM single_sends WHERE id = $1 RETURNING id`, f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(copyID, 1, time.Now()))
	q.drainConcurrently(t, mux, 2)
	if got := int64(a.Count() - before); got != rows {
		t.Fatalf("the send naming relay a: a took %d of %d", got, rows)
	}
}

// One account's sender that every relay refuses at MAIL FROM holds that
// account's mails (pending, no attempt counted) and no one else's: the
// relays stay in, and another account's send goes out whole.
func TestRelaysRefusingOneSender(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	good := newSendFixture(t, d, `<p>Hi</p>`)
	bad := newSendFixture(t, d, `<p>Hi</p>`)
	exec(t, d, "UPDATE senders SET from_email = 'news@refused.example' WHERE user_id = $1", bad.user)
	refuse := smtptest.Options{Sender: func(from string) error {
		if strings.HasSuffix(from, "@refused.example") {
			return smtptest.Permanent("5.7.1 sender address rejected")
		}
		return nil
	}}
	a, b := smtptest.New(t, refuse), smtptest.New(t, refuse)
	cfgs, err := smtp.ParseURLs("smtp://" + a.Addr + "?name=a&pool=2 smtp://" + b.Addr + "?name=b&pool=2")
	if err != nil {
		t.Fatal(err)
	}
	relays := smtp.NewRelays(cfgs, nil)
	defer relays.Close()
	mux, q, _ := engine(t, d, relays, jobs.Engine{BatchSize: 50, StallAfter: time.Hour})
	for _, f := range []sendFixture{bad, good} {
		exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
		q.enqueue(ctx, jobs.NewDispatchTask(f.send, scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send), time.Now()))
		q.drain(t, mux)
	}
	if st := relays.Stats(); st[0].Out || st[1].Out {
		t.Fatalf("one sender's refusal took relays out: %+v", st)
	}
	var status int16
	var pending, sent, attempts int64
	if err := d.Pool.QueryRow(ctx, `SELECT s.status, (SELECT count(*) FROM deliveries WHERE send_id = s.id AND status = 2)
		FROM single_sends s WHERE s.id = $1`, good.send).Scan(&status, &sent); err != nil {
		t.Fatal(err)
	}
	if status != 3 || sent == 0 || int64(a.Count()+b.Count()) != sent {
		t.Fatalf("the other account's send: status %d, %d sent, the relays took %d", status, sent, a.Count()+b.Count())
	}
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 0), COALESCE(max(attempts), 0) FROM deliveries WHERE send_id = $1`,
		bad.send).Scan(&pending, &attempts); err != nil {
		t.Fatal(err)
	}
	if pending == 0 || attempts != 0 {
		t.Fatalf("the refused sender's send: %d pending, attempts up to %d", pending, attempts)
	}
}
