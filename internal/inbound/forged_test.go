package inbound

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
)

// dsn is a delivery status notification about the recipients, quoting a
// message whose header is quoted.
func dsn(quoted string, recipients ...string) []byte {
	var b strings.Builder
	b.WriteString("From: MAILER-DAEMON@mx.example.org\r\nSubject: Undelivered Mail\r\n" +
		"Content-Type: multipart/report; report-type=delivery-status; boundary=B\r\n\r\n" +
		"--B\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n")
	for _, r := range recipients {
		fmt.Fprintf(&b, "\r\nFinal-Recipient: rfc822; %s\r\nAction: failed\r\nStatus: 5.1.1\r\n", r)
	}
	b.WriteString("\r\n--B\r\nContent-Type: text/rfc822-headers\r\n\r\n" + quoted + "\r\n\r\n--B--\r\n")
	return []byte(b.String())
}

// arf is an abuse report naming the recipients in Original-Rcpt-To,
// quoting a message whose header is quoted.
func arf(quoted string, recipients ...string) []byte {
	var b strings.Builder
	b.WriteString("From: fbl@isp.example\r\nSubject: Abuse report\r\n" +
		"Content-Type: multipart/report; report-type=feedback-report; boundary=B\r\n\r\n" +
		"--B\r\nContent-Type: text/plain\r\n\r\nA complaint.\r\n" +
		"--B\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\nUser-Agent: x/1\r\nVersion: 1\r\n")
	for _, r := range recipients {
		fmt.Fprintf(&b, "Original-Rcpt-To: %s\r\n", r)
	}
	b.WriteString("\r\n--B\r\nContent-Type: text/rfc822-headers\r\n\r\n" + quoted + "\r\n\r\n--B--\r\n")
	return []byte(b.String())
}

// Reports an outsider can write change nothing: the sequential
// Message-IDs of every guessed delivery with the right address (the
// finding's spray: DSNs and complaints to bounces@ and postmaster@, at the
// sender's domain and another), Message-IDs sealed by another installation,
// a genuine Message-ID in a report naming more than one address, a genuine
// return path in a report naming thirteen. None bounces, suppresses,
// counts or records an event; they are kept (up to the hourly cap). Then
// the same reports made right act, each logged at info with the account
// and the delivery. Not parallel: the other tests count what is kept for
// the same mailboxes.
func TestForgedReportsChangeNothing(t *testing.T) {
	d := testdb.New(t)
	var emails []string
	for i := range 13 {
		emails = append(emails, fmt.Sprintf("name%d@example.com", i))
	}
	f := newFixture(t, d, emails...)
	var logs logLines
	_, addr := listen(t, d, f, Config{KeepPerHour: 100000}, func(s *Server) {
		s.log = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})

	lo, hi := f.ids[emails[0]], f.ids[emails[0]]
	for _, id := range f.ids {
		lo, hi = min(lo, id), max(hi, id)
	}
	byID := map[int64]string{}
	for e, id := range f.ids {
		byID[id] = e
	}
	other := mail.NewTokenSigner(bytes.Repeat([]byte{0x5a}, 32)) // another installation's key

	type forged struct {
		rcpt string
		data []byte
	}
	var spray []forged
	reports := []string{"bounces@" + bounceDomain, "postmaster@" + bounceDomain}
	for send := f.send - 1; send <= f.send+1; send++ {
		for id := max(1, lo-2); id <= hi+2; id++ {
			email := byID[id]
			if email == "" {
				email = emails[int(id)%len(emails)]
			}
			for _, domain := range []string{"acme.example", "spoofed.example"} {
				quoted := fmt.Sprintf("Message-ID: <%d.%d@%s>", send, id, domain)
				spray = append(spray,
					forged{reports[id%2], dsn(quoted, email)},
					forged{reports[(id+1)%2], arf(quoted, email)},
					forged{reports[id%2], arf(quoted, emails...)})
			}
			sealed := "Message-ID: " + string(other.AppendMessageID(nil, send, id, "acme.example"))
			spray = append(spray, forged{reports[0], dsn(sealed, email)}, forged{reports[1], arf(sealed, email)})
		}
	}
	// A genuine Message-ID (quoted from a mail the attacker received),
	// moved to another domain, or in a report naming two addresses; a
	// genuine return path naming thirteen.
	mine := f.ids[emails[3]]
	genuine := "Message-ID: " + string(f.signer.AppendMessageID(nil, f.send, mine, "acme.example"))
	moved := strings.Replace(genuine, "@acme.example>", "@spoofed.example>", 1)
	spray = append(spray,
		forged{reports[0], dsn(moved, emails[3])},
		forged{reports[0], arf(moved, emails[3])},
		forged{reports[0], dsn(genuine, emails[3], emails[4])},
		forged{reports[1], arf(genuine, emails[3], emails[4])},
		forged{f.verp.Address(f.send, mine), dsn("Subject: x", emails...)},
		forged{reports[0], arf("Return-Path: <"+f.verp.Address(f.send, mine)+">", emails...)},
	)
	// A genuine return path quoted (or given as Original-Mail-From) in a
	// report about another address: the mail's owner is not the one
	// named, so nothing happens to either.
	quotedRP := "Return-Path: <" + f.verp.Address(f.send, mine) + ">"
	omf := strings.Replace(string(arf("Subject: x", emails[6])), "Feedback-Type: abuse\r\n",
		"Feedback-Type: abuse\r\nOriginal-Mail-From: <"+f.verp.Address(f.send, mine)+">\r\n", 1)
	spray = append(spray,
		forged{reports[0], dsn(quotedRP, emails[6])},
		forged{reports[1], arf(quotedRP, emails[6])},
		forged{reports[0], []byte(omf)},
	)
	eventsBefore := scalar[int64](t, d, `SELECT count(*) FROM events WHERE user_id = $1`, f.user)
	for i, m := range spray {
		if err := smtptest.Deliver(addr, "", []string{m.rcpt}, m.data); err != nil {
			t.Fatalf("report %d to %s: %v", i, m.rcpt, err)
		}
	}

	for _, q := range []string{
		`SELECT count(*) FROM bounces WHERE user_id = $1`,
		`SELECT count(*) FROM unsubscribes WHERE user_id = $1`,
		`SELECT count(*) - ` + fmt.Sprint(eventsBefore) + ` FROM events WHERE user_id = $1`,
		`SELECT count(*) FROM deliveries WHERE user_id = $1 AND (bounced_at IS NOT NULL OR complained_at IS NOT NULL OR status <> 2)`,
		`SELECT bounces FROM single_sends WHERE user_id = $1`,
		`SELECT COALESCE(sum(st.bounces + st.soft_bounces + st.complaints), 0)::bigint FROM send_stats st
			JOIN single_sends ss ON st.scope = 's' AND st.scope_id = ss.id WHERE ss.user_id = $1`,
	} {
		if n := scalar[int64](t, d, q, f.user); n != 0 {
			t.Errorf("%d forged reports: %s = %d, want 0", len(spray), q, n)
		}
	}
	kept := f.kept(t, d, append(reports, f.verp.Address(f.send, mine))...)
	if len(kept) != len(spray) {
		t.Errorf("%d reports kept for inspection, want all %d", len(kept), len(spray))
	}
	if acted := logs.with(t, "inbound report acted on"); len(acted) != 0 {
		t.Errorf("forged reports were acted on: %v", acted)
	}

	// Made right, the same reports act: the return path's DSN about its one
	// recipient, a complaint quoting the genuine Message-ID and naming its
	// one address.
	bounced, complained := emails[5], emails[3]
	if err := smtptest.Deliver(addr, "", []string{f.verp.Address(f.send, f.ids[bounced])}, dsn("Subject: x", bounced)); err != nil {
		t.Fatal(err)
	}
	if err := smtptest.Deliver(addr, "", []string{reports[0]}, arf(genuine, complained)); err != nil {
		t.Fatal(err)
	}
	if n := scalar[int64](t, d, `SELECT count(*) FROM bounces WHERE user_id = $1 AND email_lc = $2`, f.user, bounced); n != 1 {
		t.Errorf("the genuine bounce suppressed %d rows, want 1", n)
	}
	if n := scalar[int64](t, d, `SELECT count(*) FROM unsubscribes WHERE user_id = $1 AND email_address = $2`, f.user, complained); n != 1 {
		t.Errorf("the genuine complaint unsubscribed %d rows, want 1", n)
	}
	acted := logs.with(t, "inbound report acted on")
	want := []map[string]any{
		{"kind": "hard_bounce", "via": "dsn", "named_by": "return path", "delivery_id": float64(f.ids[bounced])},
		{"kind": "complaint", "via": "arf", "named_by": "message-id", "delivery_id": float64(f.ids[complained])},
	}
	if len(acted) != len(want) {
		t.Fatalf("%d reports logged as acted on, want %d: %v", len(acted), len(want), acted)
	}
	for i, w := range want {
		w["level"], w["user_id"], w["send_id"] = "INFO", float64(f.user), float64(f.send)
		for k, v := range w {
			if acted[i][k] != v {
				t.Errorf("report %d logged %s = %v, want %v: %v", i, k, acted[i][k], v, acted[i])
			}
		}
	}
}
