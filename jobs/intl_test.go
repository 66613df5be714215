package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	netmail "net/mail"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// International addresses end to end, into a real SMTP server (go-smtp)
// with and without SMTPUTF8: contacts ü-h@example.com and h@bücher.example
// and senders news@bücher.example and ü@bücher.example are saved through
// the API; the senders' verification mails and single sends from each go
// through the worker's handlers. The domain goes out as its A-label in the
// envelope and the header; a UTF-8 local part goes as UTF-8 with SMTPUTF8
// where the server offers it, and where it does not, that mail fails for
// good with the reason (not retried, the address not suppressed) while the
// others are delivered.
func TestInternationalSend(t *testing.T) {
	// Not parallel: a verification run mails every pending sender of the
	// package's database, another test's too.
	ctx := context.Background()
	d := testdb.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	user, call := apiCaller(t, d, "intl")
	typ := scalar[int64](t, d, `INSERT INTO contact_types (user_id, name) VALUES ($1, 'intl') RETURNING id`, user)
	for _, e := range []string{"ü-h@example.com", "h@bücher.example"} {
		if code, body := call("POST", "/api/contacts/add", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "email": {e}, "country": {"276"}}); code != 200 {
			t.Fatalf("add %s: %d %s", e, code, body)
		}
	}
	sender := map[string]int64{}
	for _, e := range []string{"news@bücher.example", "ü@bücher.example"} {
		if code, body := call("POST", "/api/sender/save", url.Values{"from_name": {"Bücher"}, "from_email": {e}, "reply_to_email": {"help@bücher.example"},
			"country_id": {"276"}, "company_address": {"Marienplatz 1"}, "nickname": {"n"}}); code != 200 {
			t.Fatalf("save sender %s: %d %s", e, code, body)
		}
		sender[e] = scalar[int64](t, d, "SELECT id FROM senders WHERE user_id = $1 AND from_email = $2", user, e)
	}

	// The verification mails, from an IDN NOTIFY_FROM; each link verifies.
	vs := smtptest.New(t, smtptest.Options{})
	vpool := smtp.NewPool(smtp.Config{Addr: vs.Addr, Size: 1, Timeout: 5 * time.Second})
	defer vpool.Close()
	verify := jobs.VerifySenders(jobs.Deps{DB: d, Log: log, Transport: vpool, NotifyFrom: "mailroom <verify@bücher.example>",
		PublicURL: "https://mail.example.test"})
	if err := verify(ctx, jobs.NewVerifySendersTask()); err != nil {
		t.Fatal(err)
	}
	for _, rcpt := range []string{"news@xn--bcher-kva.example", "ü@xn--bcher-kva.example"} {
		m := received(t, vs, rcpt)
		hd := parse(t, m)
		if m.From != "verify@xn--bcher-kva.example" || m.UTF8 != strings.HasPrefix(rcpt, "ü") ||
			hd.Get("From") != `"mailroom" <verify@xn--bcher-kva.example>` || hd.Get("To") != "<"+rcpt+">" {
			t.Errorf("verification mail to %s: envelope %s (SMTPUTF8 %v), From %q, To %q", rcpt, m.From, m.UTF8, hd.Get("From"), hd.Get("To"))
		}
		link := linkRE.FindStringSubmatch(strings.ReplaceAll(string(m.Data), "=\r\n", ""))
		if link == nil {
			t.Fatalf("no link in\n%s", m.Data)
		}
		if code, body := call("GET", link[1], nil); code != 200 || !strings.Contains(body, "is verified") {
			t.Fatalf("verify %s: %d %s", rcpt, code, body)
		}
	}

	lists := fmt.Sprintf(`[{"id":"%d","table":"contacts_"}]`, typ)
	group := scalar[int64](t, d, `INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		VALUES ($1, gen_random_uuid()::text, 'News', 'News', 1) RETURNING id`, user)
	send := func(t *testing.T, from string, opts smtptest.Options) (*smtptest.Server, int64) {
		t.Helper()
		s := smtptest.New(t, opts)
		pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
		t.Cleanup(func() { pool.Close() })
		mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 10, Window: 1, StallAfter: time.Second})
		id := scalar[int64](t, d, `INSERT INTO single_sends (user_id, utr, template_id, template_html, sender_id, unsubscribe_group_id,
				single_send_name, subject, preheader, recipient_id, exclude_specific_recipient_id, status, due_at)
			VALUES ($1, gen_random_uuid(), 1, '<p>Hi</p>', $2, $4, 'intl', 'Hello', '', $3::jsonb, '[]'::jsonb, 1, now()) RETURNING id`,
			user, sender[from], lists, group)
		version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", id)
		q.enqueue(ctx, jobs.NewDispatchTask(id, version, time.Now()))
		q.drain(t, mux)
		return s, id
	}
	type row struct {
		status int
		err    string
	}
	rows := func(t *testing.T, id int64) map[string]row {
		t.Helper()
		r, err := d.Pool.Query(ctx, "SELECT email, status, COALESCE(error, '') FROM deliveries WHERE send_id = $1", id)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		out := map[string]row{}
		for r.Next() {
			var e string
			var w row
			if err := r.Scan(&e, &w.status, &w.err); err != nil {
				t.Fatal(err)
			}
			out[e] = w
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	const noUTF8 = "smtp: the receiving server does not support SMTPUTF8, needed for a non-ASCII address"
	sent, failed := row{status: 2}, row{status: 4, err: noUTF8}

	t.Run("ASCII sender, server with SMTPUTF8", func(t *testing.T) {
		s, id := send(t, "news@bücher.example", smtptest.Options{})
		if got, want := sendCounters(t, d, id), (counters{Status: 3, Triggered: 2, Delivered: 2, SentAt: true}); got != want {
			t.Errorf("counters %+v, want %+v", got, want)
		}
		idn, utf := received(t, s, "h@xn--bcher-kva.example"), received(t, s, "ü-h@example.com")
		for _, m := range []smtptest.Message{idn, utf} {
			hd := parse(t, m)
			from, err := netmail.ParseAddress(hd.Get("From"))
			if m.From != "news@xn--bcher-kva.example" || err != nil || from.Name != "Bücher" || from.Address != "news@xn--bcher-kva.example" ||
				hd.Get("To") != m.To[0] || hd.Get("Reply-To") != "help@xn--bcher-kva.example" {
				t.Errorf("to %s: envelope from %s; From %q (%+v, %v), To %q, Reply-To %q", m.To[0], m.From, hd.Get("From"), from, err, hd.Get("To"), hd.Get("Reply-To"))
			}
			if want := m.To[0] == "ü-h@example.com"; m.UTF8 != want || (m.Body == "8BITMIME") != want {
				t.Errorf("to %s: SMTPUTF8 %v, BODY=%q", m.To[0], m.UTF8, m.Body)
			}
		}
		if !bytes.Contains(utf.Data, []byte("\r\nTo: ü-h@example.com\r\n")) {
			t.Errorf("the UTF-8 To is not raw UTF-8:\n%s", utf.Data)
		}
	})

	t.Run("ASCII sender, server without SMTPUTF8", func(t *testing.T) {
		s, id := send(t, "news@bücher.example", smtptest.Options{NoSMTPUTF8: true})
		if got, want := sendCounters(t, d, id), (counters{Status: 3, Triggered: 2, Delivered: 1, SentAt: true}); got != want {
			t.Errorf("counters %+v, want %+v", got, want)
		}
		if got := rows(t, id); got["h@bücher.example"] != sent || got["ü-h@example.com"] != failed {
			t.Errorf("deliveries %+v", got)
		}
		if m := received(t, s, "h@xn--bcher-kva.example"); m.UTF8 || s.Count() != 1 {
			t.Errorf("received %d mails, SMTPUTF8 %v", s.Count(), m.UTF8)
		}
		if n := scalar[int64](t, d, "SELECT count(*) FROM bounces WHERE user_id = $1", user); n != 0 {
			t.Errorf("%d addresses suppressed", n)
		}
	})

	t.Run("UTF-8 sender, server with SMTPUTF8", func(t *testing.T) {
		s, id := send(t, "ü@bücher.example", smtptest.Options{})
		if got, want := sendCounters(t, d, id), (counters{Status: 3, Triggered: 2, Delivered: 2, SentAt: true}); got != want {
			t.Errorf("counters %+v, want %+v", got, want)
		}
		for _, rcpt := range []string{"h@xn--bcher-kva.example", "ü-h@example.com"} {
			m := received(t, s, rcpt)
			hd := parse(t, m)
			from, err := netmail.ParseAddress(hd.Get("From"))
			if m.From != "ü@xn--bcher-kva.example" || !m.UTF8 || err != nil || from.Address != "ü@xn--bcher-kva.example" || hd.Get("To") != rcpt {
				t.Errorf("to %s: envelope from %s (SMTPUTF8 %v); From %q (%v), To %q", rcpt, m.From, m.UTF8, hd.Get("From"), err, hd.Get("To"))
			}
		}
	})

	t.Run("UTF-8 sender, server without SMTPUTF8", func(t *testing.T) {
		s, id := send(t, "ü@bücher.example", smtptest.Options{NoSMTPUTF8: true})
		if got, want := sendCounters(t, d, id), (counters{Status: 3, Triggered: 2, SentAt: true}); got != want {
			t.Errorf("counters %+v, want %+v", got, want)
		}
		if got := rows(t, id); got["h@bücher.example"] != failed || got["ü-h@example.com"] != failed || s.Count() != 0 {
			t.Errorf("deliveries %+v, %d mails received", got, s.Count())
		}
	})
}

// received is the one mail s received for rcpt.
func received(t *testing.T, s *smtptest.Server, rcpt string) smtptest.Message {
	t.Helper()
	var found []smtptest.Message
	for _, m := range s.Messages() {
		if len(m.To) == 1 && m.To[0] == rcpt {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		var to []string
		for _, m := range s.Messages() {
			to = append(to, m.To...)
		}
		t.Fatalf("%d mails for %s; received for %q", len(found), rcpt, to)
	}
	return found[0]
}

// parse reads a received mail's header as net/mail does.
func parse(t *testing.T, m smtptest.Message) netmail.Header {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		t.Fatalf("mail to %v: %v\n%s", m.To, err, m.Data)
	}
	return msg.Header
}
