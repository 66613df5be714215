package inbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/smtp"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
)

const bounceDomain = "bounces.acme.example"

// fixture is an account whose send went to every address of emails, each
// delivery recorded sent.
type fixture struct {
	user, send int64
	utr        string
	group      int64
	ids        map[string]int64 // delivery id by address
	signer     *mail.TokenSigner
	verp       mail.VERP
	// inboundBefore is the last kept message's id before the fixture.
	inboundBefore int64
}

func newFixture(t testing.TB, d *postgres.DB, emails ...string) *fixture {
	t.Helper()
	ctx := context.Background()
	user, _, err := d.CreateAccount(ctx, "inbound")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{user: user, ids: map[string]int64{}}
	row := func(sql string, args []any, dst ...any) {
		t.Helper()
		if err := d.Pool.QueryRow(ctx, sql, args...).Scan(dst...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var typ, sender int64
	row(`INSERT INTO contact_types (user_id, name) VALUES ($1, 'T') RETURNING id`, []any{user}, &typ)
	if _, err := d.Pool.Exec(ctx, `INSERT INTO contacts (user_id, contact_type_id, email) SELECT $1, $2, unnest($3::text[])`, user, typ, emails); err != nil {
		t.Fatal(err)
	}
	row(`INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'Acme Shop', 'news@acme.example', 'news@acme.example', 276, 'S 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, []any{user}, &sender)
	row(`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		VALUES ($1, gen_random_uuid()::text, 'News', 'News', 1) RETURNING id`, []any{user}, &f.group)
	row(`INSERT INTO single_sends (user_id, utr, template_id, template_html, sender_id, unsubscribe_group_id, single_send_name,
			subject, preheader, recipient_id, status, due_at, unique_open_token)
		VALUES ($1, gen_random_uuid(), 1, '<p>x</p>', $2, $3, 'in', 's', 'p', $4::jsonb, 1, now(), '{}') RETURNING id, utr`,
		[]any{user, sender, f.group, fmt.Sprintf(`[{"id":"%d","table":"contacts_"}]`, typ)}, &f.send, &f.utr)
	var version int32
	row(`SELECT version FROM single_sends WHERE id = $1`, []any{f.send}, &version)
	size := max(1000, len(emails)) // one batch
	disp, err := d.DispatchSend(ctx, f.send, version, size, 0)
	if err != nil || disp.Triggered != int64(len(emails)) {
		t.Fatalf("dispatch %+v %v", disp, err)
	}
	lease, claimed, err := d.ClaimDeliveries(ctx, f.send, f.group, 0, disp.First, disp.First+int64(size), time.Minute)
	if err != nil || len(claimed) != len(emails) {
		t.Fatalf("claim %d: %v", len(claimed), err)
	}
	var outcomes []mail.Outcome
	for _, c := range claimed {
		f.ids[string(c.Recipient.Email)] = c.ID
		outcomes = append(outcomes, mail.Outcome{ID: c.ID, Email: c.Recipient.Email, Status: mail.DeliverySent})
	}
	if _, err := d.RecordBatch(ctx, lease, user, delivery.NewRecord(lease.SendID, outcomes, time.Now())); err != nil {
		t.Fatal(err)
	}
	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}
	f.signer = mail.NewTokenSigner(key)
	f.verp = mail.VERP{Domain: bounceDomain, Signer: f.signer}
	f.inboundBefore = scalar[int64](t, d, `SELECT COALESCE(max(id), 0) FROM inbound_messages`)
	return f
}

// values are a sample's placeholders for the mail to email.
func (f *fixture) values(email string) map[string]string {
	id := f.ids[email]
	var r mail.Recipient
	links := mail.Links{Base: "https://m.acme.example", Signer: f.signer}
	links.Fill(&r, mail.UnsubscribeToken{UserID: f.user, Email: mail.Email(email), GroupID: f.group, SendID: f.send})
	return map[string]string{
		"{{VERP}}":             f.verp.Address(f.send, id),
		"{{MESSAGE_ID}}":       string(f.signer.AppendMessageID(nil, f.send, id, "acme.example")),
		"{{RCPT}}":             email,
		"{{LIST_UNSUBSCRIBE}}": "<" + r.Tokens.UnsubscribeURL + ">,\r\n <mailto:unsubscribe@" + bounceDomain + "?subject=unsubscribe-" + r.Tokens.Unsubscribe + ">",
		"{{BOUNCE_DOMAIN}}":    bounceDomain,
		"{{MAILTO}}":           "unsubscribe@" + bounceDomain,
		"{{SUBJECT}}":          "unsubscribe-" + r.Tokens.Unsubscribe,
	}
}

// listen starts a listener over d for the fixture's key, stopped when the
// test ends; opts change the server before it listens.
func listen(t testing.TB, d *postgres.DB, f *fixture, cfg Config, opts ...func(*Server)) (*Server, string) {
	t.Helper()
	cfg.VERP, cfg.Signer = f.verp, f.signer
	if cfg.Mailto == "" {
		cfg.Mailto = "unsubscribe@" + bounceDomain
	}
	s := New(d, slog.New(slog.NewTextHandler(io.Discard, nil)), cfg)
	for _, o := range opts {
		o(s)
	}
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s, addr.String()
}

// code is an SMTP refusal's reply code, 0 for anything else.
func code(err error) int {
	var tp *textproto.Error
	if errors.As(err, &tp) {
		return tp.Code
	}
	return 0
}

// kept are the reasons of the messages kept for the recipient addresses
// given since the fixture was made, in order.
func (f *fixture) kept(t testing.TB, d *postgres.DB, rcpts ...string) []string {
	t.Helper()
	var reasons []string
	if err := d.Pool.QueryRow(context.Background(), `SELECT COALESCE(array_agg(reason ORDER BY id), '{}') FROM inbound_messages
		WHERE rcpt = ANY($1) AND id > $2`, rcpts, f.inboundBefore).Scan(&reasons); err != nil {
		t.Fatal(err)
	}
	return reasons
}

func scalar[T any](t testing.TB, d *postgres.DB, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := d.Pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// Every sample over SMTP to the listener: the DSNs and text bounces to
// their deliveries' return paths, the feedback reports to bounces@ (the
// address feedback loops are registered with), found through the quoted
// Return-Path, Original-Mail-From, or Message-ID confirmed by
// Original-Rcpt-To or the quoted List-Unsubscribe token. Hard bounces and
// complaints count once, soft bounces every time; what is not a report is
// kept, an out-of-office note dropped.
func TestSamplesOverSMTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	samples := []struct {
		file, email string
		to          string // "verp" or an address
		kind        mail.FeedbackKind
	}{
		{"dsn-gmail-5.1.1.eml", "g@example.net", "verp", mail.HardBounce},
		{"dsn-outlook-5.1.10.eml", "o@example.net", "verp", mail.HardBounce},
		{"dsn-postfix-5.1.1.eml", "p@example.net", "verp", mail.HardBounce},
		{"dsn-exim-5.0.0.eml", "e@example.net", "verp", mail.HardBounce},
		{"text-undelivered-5.1.1.eml", "t@example.net", "verp", mail.HardBounce},
		{"text-yahoo-failure-notice.eml", "y@example.net", "verp", mail.HardBounce},
		{"dsn-gmail-5.2.2-over-quota.eml", "q@example.net", "verp", mail.SoftBounce},
		{"dsn-postfix-delayed-4.4.1.eml", "l@example.net", "verp", mail.SoftBounce},
		{"arf-yahoo.eml", "cy@example.net", "bounces@" + bounceDomain, mail.Complaint},
		{"arf-aol.eml", "ca@example.net", "bounces@" + bounceDomain, mail.Complaint},
		{"arf-microsoft-jmrp.eml", "cm@example.net", "bounces@" + bounceDomain, mail.Complaint},
	}
	var emails []string
	for _, s := range samples {
		emails = append(emails, s.email)
	}
	f := newFixture(t, d, append(emails, "auto@example.net")...)
	_, addr := listen(t, d, f, Config{})

	for round := range 2 { // every report twice: hard bounces and complaints count once
		for _, s := range samples {
			v := f.values(s.email)
			to := s.to
			if to == "verp" {
				to = v["{{VERP}}"]
			}
			if err := smtptest.Deliver(addr, "", []string{to}, sample(t, s.file, v)); err != nil {
				t.Fatalf("round %d, %s: %v", round, s.file, err)
			}
		}
	}
	// An out-of-office note to a return path: dropped, not kept.
	v := f.values("auto@example.net")
	if err := smtptest.Deliver(addr, "", []string{v["{{VERP}}"]}, sample(t, "garbage-autoreply.eml", v)); err != nil {
		t.Fatal(err)
	}

	for _, s := range samples {
		var status int16
		var bouncedAt, complainedAt *time.Time
		if err := d.Pool.QueryRow(ctx, `SELECT status, bounced_at, complained_at FROM deliveries WHERE send_id = $1 AND id = $2`,
			f.send, f.ids[s.email]).Scan(&status, &bouncedAt, &complainedAt); err != nil {
			t.Fatal(err)
		}
		wantStatus := int16(mail.DeliverySent)
		if s.kind == mail.HardBounce {
			wantStatus = int16(mail.DeliveryBounced)
		}
		if status != wantStatus || (bouncedAt != nil) != (s.kind == mail.HardBounce) || (complainedAt != nil) != (s.kind == mail.Complaint) {
			t.Errorf("%s: status %d, bounced %v, complained %v", s.file, status, bouncedAt, complainedAt)
		}
	}
	bounced := scalar[[]string](t, d, `SELECT array_agg(email_lc ORDER BY email_lc) FROM bounces WHERE user_id = $1`, f.user)
	if want := []string{"e@example.net", "g@example.net", "o@example.net", "p@example.net", "t@example.net", "y@example.net"}; !slices.Equal(bounced, want) {
		t.Errorf("bounces list %v, want %v", bounced, want)
	}
	complained := scalar[[]string](t, d, `SELECT array_agg(email_lc ORDER BY email_lc) FROM unsubscribes
		WHERE user_id = $1 AND unsubscribe_groups_id IS NULL AND reason = 'complaint'`, f.user)
	if want := []string{"ca@example.net", "cm@example.net", "cy@example.net"}; !slices.Equal(complained, want) {
		t.Errorf("complaints %v, want %v", complained, want)
	}
	if n := scalar[int64](t, d, `SELECT bounces FROM single_sends WHERE id = $1`, f.send); n != 6 {
		t.Errorf("send bounces %d, want 6", n)
	}
	stats, err := d.SingleSendStats(ctx, f.user, f.utr)
	if err != nil {
		t.Fatal(err)
	}
	if c := stats.Counts; c.Bounces != 6 || c.SoftBounces != 4 || c.Complaints != 3 || c.Delivered != int64(len(emails)+1) {
		t.Errorf("statistics %+v: want 6 bounces, 4 soft bounces (2 reports twice), 3 complaints", c)
	}
	events := scalar[[]string](t, d, `SELECT array_agg(kind ORDER BY id) FROM events WHERE user_id = $1 AND kind LIKE 'address.%'`, f.user)
	if n := strings.Count(strings.Join(events, " "), "address.bounced"); n != 6 || len(events) != 9 {
		t.Errorf("events %v: want 6 address.bounced, 3 address.complained", events)
	}
	var payload map[string]any
	if err := d.Pool.QueryRow(ctx, `SELECT payload FROM events WHERE user_id = $1 AND kind = 'address.bounced' AND payload->>'email_address' = 'g@example.net'`,
		f.user).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if payload["status"] != "5.1.1" || payload["via"] != "dsn" || payload["delivery_id"] != float64(f.ids["g@example.net"]) ||
		!strings.Contains(fmt.Sprint(payload["reason"]), "NoSuchUser") {
		t.Errorf("address.bounced payload %v", payload)
	}
	if got := f.kept(t, d, v["{{VERP}}"]); len(got) != 0 {
		t.Errorf("the auto-reply was kept: %v", got)
	}
}

// What the listener takes and refuses at RCPT TO; what it keeps: mail that
// is no report, garbage, a report naming a delivery by Message-ID alone
// or naming another address, a mailto without a valid token; a parser
// panic is kept too, and the listener goes on.
func TestListenerRefusesAndKeeps(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net", "bob@example.net")
	s, addr := listen(t, d, f, Config{MaxBytes: 64 << 10})
	ann := f.values("ann@example.net")

	for _, tt := range []struct {
		rcpt string
		code int
	}{
		{"someone@example.com", 550},              // not ours: no relay
		{"bounces+abcdefgh@" + bounceDomain, 550}, // a token that does not open
		{"info@" + bounceDomain, 550},
		{"other@" + bounceDomain, 550},
		{strings.ToUpper(ann["{{VERP}}"]), 0}, // case changed on the way: still ours
		{"bounces@" + strings.ToUpper(bounceDomain), 0},
		{"postmaster@" + bounceDomain, 0},
		{"Unsubscribe@" + bounceDomain, 0},
	} {
		err := smtptest.Deliver(addr, "", []string{tt.rcpt}, []byte("From: x@y.example\nSubject: hi\n\nhello\n"))
		if code(err) != tt.code {
			t.Errorf("RCPT %s: %v, want %d", tt.rcpt, err, tt.code)
		}
	}
	if reasons := f.kept(t, d, strings.ToLower(ann["{{VERP}}"]), "bounces@"+bounceDomain, "postmaster@"+bounceDomain,
		"unsubscribe@"+bounceDomain); len(reasons) != 4 {
		t.Errorf("kept %q, want the 4 accepted", reasons)
	}

	// Too big: refused at the end of DATA, nothing kept.
	big := append([]byte("From: x@y.example\nSubject: big\n\n"), strings.Repeat(strings.Repeat("x", 99)+"\n", 700)...)
	if err := smtptest.Deliver(addr, "", []string{"bounces@" + bounceDomain}, big); code(err) != 552 {
		t.Errorf("a message over the limit: %v", err)
	}

	// Garbage to a return path, a forged complaint (ann's Message-ID, bob's
	// address), a report naming ann by Message-ID alone.
	bob := f.values("bob@example.net")
	forged := f.values("ann@example.net")
	forged["{{RCPT}}"] = "bob@example.net"
	for _, m := range []struct {
		rcpt string
		data []byte
		want string
	}{
		{bob["{{VERP}}"], sample(t, "garbage-binary.bin", nil), "unparseable: inbound: not an RFC 5322 message"},
		{bob["{{VERP}}"], sample(t, "garbage-broken-report.eml", bob), "delivery status notification without a failed or delayed recipient"},
		{"bounces@" + bounceDomain, sample(t, "garbage-spam.eml", bob), "not a report"},
		{"bounces@" + bounceDomain, sample(t, "arf-aol.eml", forged), "complaint for delivery"},
		{"bounces@" + bounceDomain, []byte(strings.NewReplacer("Original-Rcpt-To: ann@example.net\n", "", "To: redacted@aol.com\n", "").
			Replace(string(sample(t, "arf-aol.eml", ann)))), "named by Message-ID alone"},
		{"unsubscribe@" + bounceDomain, []byte("From: a@b.example\nSubject: please remove me\n\nthanks\n"), "without unsubscribe-{token}"},
		{"unsubscribe@" + bounceDomain, []byte("From: a@b.example\nSubject: unsubscribe-AAAAAAAAAAAAAAAAAAAAAAAAAAAA\n\n"), "token is not valid"},
	} {
		before := len(f.kept(t, d, m.rcpt))
		if err := smtptest.Deliver(addr, "", []string{m.rcpt}, m.data); err != nil {
			t.Fatalf("%s: %v", m.want, err)
		}
		got := f.kept(t, d, m.rcpt)
		if len(got) != before+1 || !strings.Contains(got[len(got)-1], m.want) {
			t.Errorf("kept %q, want a reason with %q", got[before:], m.want)
		}
	}
	if n := scalar[int64](t, d, `SELECT count(*) FROM unsubscribes WHERE user_id = $1`, f.user); n != 0 {
		t.Errorf("%d unsubscribes from forged or unconfirmed reports", n)
	}

	// A parser panic: kept, the message answered 250, the listener alive.
	s.parse = func([]byte) (*Report, error) { panic("boom") }
	if err := smtptest.Deliver(addr, "", []string{bob["{{VERP}}"]}, sample(t, "dsn-postfix-5.1.1.eml", bob)); err != nil {
		t.Fatal(err)
	}
	s.parse = Parse
	if got := f.kept(t, d, bob["{{VERP}}"]); !strings.HasPrefix(got[len(got)-1], "parser panic: boom") {
		t.Errorf("after a panic, kept %q", got[len(got)-1])
	}
	if err := smtptest.Deliver(addr, "", []string{bob["{{VERP}}"]}, sample(t, "dsn-postfix-5.1.1.eml", bob)); err != nil {
		t.Fatal(err)
	}
	if n := scalar[int64](t, d, `SELECT count(*) FROM bounces WHERE user_id = $1 AND email_lc = 'bob@example.net'`, f.user); n != 1 {
		t.Errorf("after the panic the listener did not bounce bob: %d", n)
	}
}

// A mail to the List-Unsubscribe mailto with the token in its subject
// (as the header sets it, after "Re:", RFC 2047-encoded) unsubscribes as
// one click does: from the mail's group, the send's unsubscribes counted,
// once.
func TestMailtoUnsubscribe(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net")
	const mailto = "leave@" + bounceDomain // this test's own: the kept rows it checks are its own
	_, addr := listen(t, d, f, Config{Mailto: mailto})
	v := f.values("ann@example.net")
	for _, subject := range []string{v["{{SUBJECT}}"], "Re: " + v["{{SUBJECT}}"], mime.BEncoding.Encode("UTF-8", "Ré: "+v["{{SUBJECT}}"])} {
		v["{{SUBJECT}}"] = subject
		if err := smtptest.Deliver(addr, "ann@example.net", []string{mailto}, sample(t, "mailto-unsubscribe.eml", v)); err != nil {
			t.Fatal(err)
		}
	}
	if n := scalar[int64](t, d, `SELECT count(*) FROM unsubscribes WHERE user_id = $1 AND unsubscribe_groups_id = $2 AND email_lc = 'ann@example.net'`,
		f.user, f.group); n != 1 {
		t.Errorf("ann in the send's group %d times", n)
	}
	if n := scalar[int64](t, d, `SELECT unsubscribes FROM single_sends WHERE id = $1`, f.send); n != 1 {
		t.Errorf("send unsubscribes %d", n)
	}
	if got := f.kept(t, d, mailto); len(got) != 0 {
		t.Errorf("kept %q", got)
	}
	via := scalar[string](t, d, `SELECT payload->>'via' FROM events WHERE user_id = $1 AND kind = 'address.unsubscribed'`, f.user)
	if via != "mailto" {
		t.Errorf("event via %q", via)
	}
}

// A database that fails answers 451 (the sender tries again); shutdown
// waits for nothing idle and refuses new connections.
func TestTemporaryFailureAndShutdown(t *testing.T) {
	t.Parallel()
	shared := testdb.New(t)
	f := newFixture(t, shared, "ann@example.net")
	d, err := postgres.Open(context.Background(), testdb.DSN(t), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s, addr := listen(t, d, f, Config{})
	d.Close()
	v := f.values("ann@example.net")
	if err := smtptest.Deliver(addr, "", []string{v["{{VERP}}"]}, sample(t, "dsn-postfix-5.1.1.eml", v)); code(err) != 451 {
		t.Errorf("with the database closed: %v, want 451", err)
	}

	idle, err := smtp.Dial(addr) // a connection that says nothing
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("shutdown took %v with an idle connection", took)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("the listener still takes connections")
	}
	if err := idle.Noop(); err == nil {
		t.Error("the idle connection is still served")
	}
}

// Reports over SMTP to the listener from 1 and from 8 connections at
// once, each a Postfix DSN of a hard bounce to another delivery (parsed,
// recorded in its transaction, answered): reports/s.
func BenchmarkIntake(b *testing.B) {
	for _, conns := range []int{1, 8} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) { benchmarkIntake(b, conns) })
	}
}

func benchmarkIntake(b *testing.B, conns int) {
	d := testdb.New(b)
	emails := make([]string, b.N)
	for i := range emails {
		emails[i] = fmt.Sprintf("r%d@example.net", i)
	}
	f := newFixture(b, d, emails...)
	_, addr := listen(b, d, f, Config{})
	msgs := make([][]byte, b.N)
	rcpts := make([]string, b.N)
	for i, e := range emails {
		v := f.values(e)
		msgs[i], rcpts[i] = sample(b, "dsn-postfix-5.1.1.eml", v), v["{{VERP}}"]
	}
	clients := make([]*smtp.Client, conns)
	for i := range clients {
		c, err := smtp.Dial(addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	errs := make(chan error, conns)
	b.ResetTimer()
	start := time.Now()
	for k, c := range clients {
		go func() {
			for i := k; i < b.N; i += conns {
				if err := c.Mail(""); err != nil {
					errs <- err
					return
				}
				if err := c.Rcpt(rcpts[i]); err != nil {
					errs <- err
					return
				}
				w, err := c.Data()
				if err != nil {
					errs <- err
					return
				}
				w.Write(msgs[i])
				if err := w.Close(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reports/s")
	b.StopTimer()
	if n := scalar[int64](b, d, `SELECT bounces FROM single_sends WHERE id = $1`, f.send); n != int64(b.N) {
		b.Fatalf("%d bounces counted of %d", n, b.N)
	}
}

// Past Config.KeepPerHour (a tenth of it at once) messages the listener
// cannot act on are still answered 250 but no longer kept, so the open
// port cannot fill the database.
func TestKeepPerHour(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	f := newFixture(t, d, "ann@example.net")
	// This test's own mailbox: the tests beside it keep junk sent to
	// postmaster@ the bounce domain, and count what is kept there.
	_, addr := listen(t, d, f, Config{KeepPerHour: 30, Mailto: "unsubscribe@keep.example"})
	rcpt := "postmaster@keep.example"
	for i := range 8 {
		if err := smtptest.Deliver(addr, "", []string{rcpt}, []byte(fmt.Sprintf("From: x@y.example\nSubject: junk %d\n\nhello\n", i))); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if kept := f.kept(t, d, rcpt); len(kept) != 3 {
		t.Errorf("kept %d of 8 junk messages, want the burst of 3", len(kept))
	}
}
