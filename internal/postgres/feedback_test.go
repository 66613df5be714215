package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// Reports about a send's deliveries, against the batch that records the
// same deliveries: a hard bounce and a complaint count once per delivery
// (a second report, or a bounce already taken at RCPT TO, counts nothing),
// a report that arrives before its batch is recorded counts and lets the
// batch complete the send, a soft bounce counts every time, a delivery
// found by its Message-ID is acted on only when its address matches.
func TestRecordFeedback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "feedback")
	if err != nil {
		t.Fatal(err)
	}
	var typ, sender, send int64
	var utr string
	q := func(sql string, args ...any) {
		t.Helper()
		if _, err := d.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	row := func(sql string, args []any, dst ...any) {
		t.Helper()
		if err := d.Pool.QueryRow(ctx, sql, args...).Scan(dst...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	row(`INSERT INTO contact_types (user_id, name) VALUES ($1, 'T') RETURNING id`, []any{user}, &typ)
	q(`INSERT INTO contacts (user_id, contact_type_id, email) SELECT $1, $2, unnest($3::text[])`, user, typ,
		[]string{"Ann@example.com", "bob@example.com", "cy@example.com", "di@example.com", "ed@example.com"})
	row(`INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'F', 'news@f.example', 'news@f.example', 276, 'S 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, []any{user}, &sender)
	row(`INSERT INTO single_sends (user_id, utr, template_id, template_html, sender_id, unsubscribe_group_id, single_send_name,
			subject, preheader, recipient_id, status, due_at, unique_open_token)
		VALUES ($1, gen_random_uuid(), 1, '<p>x</p>', $2, 0, 'fb', 's', 'p', $3::jsonb, 1, now(), '{}') RETURNING id, utr`,
		[]any{user, sender, fmt.Sprintf(`[{"id":"%d","table":"contacts_"}]`, typ)}, &send, &utr)
	var version int32
	row(`SELECT version FROM single_sends WHERE id = $1`, []any{send}, &version)
	disp, err := d.DispatchSend(ctx, send, version, 10, 0)
	if err != nil || !disp.Started || disp.Triggered != 5 {
		t.Fatalf("dispatch %+v %v", disp, err)
	}
	lease, claimed, err := d.ClaimDeliveries(ctx, send, 0, 0, disp.First, disp.First+10, time.Minute)
	if err != nil || len(claimed) != 5 {
		t.Fatalf("claim: %d %v", len(claimed), err)
	}
	id := map[string]int64{}
	for _, c := range claimed {
		id[string(c.Recipient.Email)] = c.ID
	}
	record := func(f mail.Feedback) mail.FeedbackResult {
		t.Helper()
		f.SendID = send
		r, err := d.RecordFeedback(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// Ann's DSN arrives while her batch is still sending (her row pending).
	if r := record(mail.Feedback{Kind: mail.HardBounce, DeliveryID: id["Ann@example.com"], Status: "5.1.1", Reason: "smtp; 550 5.1.1 no such user", Via: "dsn"}); !r.Found || !r.Counted || r.UserID != user || r.Email != "Ann@example.com" {
		t.Fatalf("ann's bounce: %+v", r)
	}
	// The batch records: bob bounced at RCPT TO, the others sent.
	var outcomes []mail.Outcome
	for _, c := range claimed {
		o := mail.Outcome{ID: c.ID, Email: c.Recipient.Email, Status: mail.DeliverySent}
		if c.Recipient.Email == "bob@example.com" {
			o.Status, o.Error = mail.DeliveryBounced, "550 no such user"
		}
		outcomes = append(outcomes, o)
	}
	completed, err := d.RecordBatch(ctx, lease, user, delivery.NewRecord(lease.SendID, outcomes, time.Now()))
	if err != nil || !completed.Completed {
		t.Fatalf("record: completed %v, %v", completed, err)
	}

	// Ann's second DSN, a DSN for bob (bounced at RCPT TO): nothing more.
	for _, who := range []string{"Ann@example.com", "bob@example.com"} {
		if r := record(mail.Feedback{Kind: mail.HardBounce, DeliveryID: id[who], Status: "5.1.1", Via: "dsn"}); !r.Found || r.Counted {
			t.Errorf("%s's bounce again: %+v", who, r)
		}
	}
	// Cy's complaint, twice; found by Message-ID, so matched to the
	// addresses the report names.
	if r := record(mail.Feedback{Kind: mail.Complaint, DeliveryID: id["cy@example.com"], Reason: "abuse", Via: "arf", Match: []string{"someone@else.example"}}); r.Found || r.Counted {
		t.Errorf("a complaint naming another address: %+v", r)
	}
	for i, want := range []bool{true, false} {
		if r := record(mail.Feedback{Kind: mail.Complaint, DeliveryID: id["cy@example.com"], Reason: "abuse", Via: "arf", Match: []string{"cy@example.com"}}); !r.Found || r.Counted != want {
			t.Errorf("cy's complaint %d: %+v", i+1, r)
		}
	}
	// Di's soft bounces count each time; a sent delivery's hard bounce
	// (ed's, asynchronous) turns it bounced.
	for range 2 {
		if r := record(mail.Feedback{Kind: mail.SoftBounce, DeliveryID: id["di@example.com"], Status: "4.2.2", Via: "dsn"}); !r.Found || !r.Counted {
			t.Errorf("di's soft bounce: %+v", r)
		}
	}
	if r := record(mail.Feedback{Kind: mail.HardBounce, DeliveryID: id["ed@example.com"], Status: "5.1.1", Reason: "gone", Via: "text"}); !r.Counted {
		t.Errorf("ed's bounce: %+v", r)
	}
	// No such delivery.
	if r := record(mail.Feedback{Kind: mail.HardBounce, DeliveryID: id["ed@example.com"] + 1000, Status: "5.1.1"}); r.Found {
		t.Errorf("unknown delivery: %+v", r)
	}

	var status, bounced int64
	var delivered int64
	row(`SELECT status, bounces, delivered FROM single_sends WHERE id = $1`, []any{send}, &status, &bounced, &delivered)
	if status != 3 || bounced != 3 || delivered != 4 { // ann counted sent by her batch and bounced by her report
		t.Errorf("send: status %d, bounces %d, delivered %d; want 3, 3 (bob, ann, ed), 4", status, bounced, delivered)
	}
	statuses := map[string]int16{}
	rows, err := d.Pool.Query(ctx, `SELECT email, status FROM deliveries WHERE send_id = $1`, send)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e string
		var s int16
		if err := rows.Scan(&e, &s); err != nil {
			t.Fatal(err)
		}
		statuses[e] = s
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if want := map[string]int16{"Ann@example.com": 2, "bob@example.com": 3, "cy@example.com": 2, "di@example.com": 2, "ed@example.com": 3}; fmt.Sprint(statuses) != fmt.Sprint(want) {
		t.Errorf("delivery statuses %v, want %v", statuses, want)
	}
	var suppressed []string
	row(`SELECT array_agg(email_lc ORDER BY email_lc) FROM bounces WHERE user_id = $1`, []any{user}, &suppressed)
	if want := []string{"ann@example.com", "bob@example.com", "ed@example.com"}; !slices.Equal(suppressed, want) {
		t.Errorf("bounces %v, want %v", suppressed, want)
	}
	var reason string
	row(`SELECT reason FROM unsubscribes WHERE user_id = $1 AND email_lc = 'cy@example.com' AND unsubscribe_groups_id IS NULL`, []any{user}, &reason)
	if reason != "complaint" {
		t.Errorf("cy's unsubscribe reason %q", reason)
	}
	var events []string
	row(`SELECT array_agg(kind || ':' || (payload->>'email_address') ORDER BY id) FROM events WHERE user_id = $1 AND kind LIKE 'address.%'`, []any{user}, &events)
	if want := []string{"address.bounced:ann@example.com", "address.bounced:bob@example.com", "address.complained:cy@example.com",
		"address.bounced:ed@example.com"}; !slices.Equal(events, want) {
		t.Errorf("events %v, want %v", events, want)
	}
	stats, err := d.SingleSendStats(ctx, user, utr)
	if err != nil {
		t.Fatal(err)
	}
	if c := stats.Counts; c.Bounces != 3 || c.SoftBounces != 2 || c.Complaints != 1 || c.Delivered != 4 || c.Unsubscribes != 0 {
		t.Errorf("statistics %+v", c)
	}
	// The global list's kept count took the complaint.
	var n int64
	total, err := d.ListUnsubscribes(ctx, user, nil, &mail.Page{Number: 1, Size: 10}, func(*mail.Unsubscribe) error { n++; return nil })
	if err != nil || total != 1 || n != 1 {
		t.Errorf("global list: %d listed, total %d, %v", n, total, err)
	}
}

// Kept inbound messages are capped and pruned by age.
func TestKeepInbound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	big := make([]byte, postgres.MaxInboundKept+100)
	id, err := d.KeepInbound(ctx, mail.InboundMessage{MailFrom: "", Rcpt: "bounces@b.example", Reason: "not a report\x00", Size: len(big), Raw: big, SendID: 7})
	if err != nil {
		t.Fatal(err)
	}
	var size, kept int
	var send *int64
	var delivery *int64
	if err := d.Pool.QueryRow(ctx, `SELECT size, length(raw), send_id, delivery_id FROM inbound_messages WHERE id = $1`, id).Scan(&size, &kept, &send, &delivery); err != nil {
		t.Fatal(err)
	}
	if size != len(big) || kept != postgres.MaxInboundKept || send == nil || *send != 7 || delivery != nil {
		t.Errorf("kept size %d, %d bytes, send %v, delivery %v", size, kept, send, delivery)
	}
	if _, err := d.Pool.Exec(ctx, `UPDATE inbound_messages SET received_at = now() - interval '31 days' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if n, err := d.PruneInbound(ctx, 30*24*time.Hour); err != nil || n < 1 {
		t.Errorf("pruned %d, %v", n, err)
	}
}

// An automation run's reports count for its automation: total_bounces and
// the automation's statistics.
func TestRecordFeedbackAutomationRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "feedback-run")
	if err != nil {
		t.Fatal(err)
	}
	const sendID = 130001 // a range of its own (see TestClaimDeliveriesRecipients)
	var automation int64
	var utr string
	if err := d.Pool.QueryRow(ctx, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table)
		VALUES ($1, gen_random_uuid(), 'welcome', 1, 1, 'contacts_') RETURNING id, utr`, user).Scan(&automation, &utr); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO single_sends (id, user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader, status, automation_id)
		 OVERRIDING SYSTEM VALUE VALUES (` + itoa(sendID) + `, ` + itoa(user) + `, gen_random_uuid(), 1, 1, 0, 'run', 's', 'p', 3, ` + itoa(automation) + `)`,
		`CREATE TABLE IF NOT EXISTS deliveries_p` + itoa(sendID/postgres.PartitionSends) + ` PARTITION OF deliveries FOR VALUES FROM (` +
			itoa(sendID/postgres.PartitionSends*postgres.PartitionSends) + `) TO (` + itoa((sendID/postgres.PartitionSends+1)*postgres.PartitionSends) + `)`,
		`INSERT INTO deliveries (send_id, user_id, email, list_key, status) VALUES (` + itoa(sendID) + `, ` + itoa(user) + `, 'a@run.example', 'contacts_1', 2),
		 (` + itoa(sendID) + `, ` + itoa(user) + `, 'b@run.example', 'contacts_1', 2)`,
	} {
		if _, err := d.Pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var a, b int64
	if err := d.Pool.QueryRow(ctx, `SELECT min(id), max(id) FROM deliveries WHERE send_id = $1`, sendID).Scan(&a, &b); err != nil {
		t.Fatal(err)
	}
	for _, f := range []mail.Feedback{
		{Kind: mail.HardBounce, SendID: sendID, DeliveryID: a, Status: "5.1.1", Via: "dsn"},
		{Kind: mail.HardBounce, SendID: sendID, DeliveryID: a, Status: "5.1.1", Via: "dsn"},
		{Kind: mail.Complaint, SendID: sendID, DeliveryID: b, Reason: "abuse", Via: "arf"},
	} {
		if _, err := d.RecordFeedback(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	if err := d.Pool.QueryRow(ctx, `SELECT total_bounces FROM automations WHERE id = $1`, automation).Scan(&total); err != nil {
		t.Fatal(err)
	}
	stats, err := d.AutomationStats(ctx, user, utr)
	if err != nil {
		t.Fatal(err)
	}
	if total != 1 || stats.Bounces != 1 || stats.Complaints != 1 {
		t.Errorf("automation: total_bounces %d, statistics %+v", total, stats.Counts)
	}
}

// A complaint found by its Message-ID names the address as it went out,
// its domain an A-label (h@xn--bcher-kva.example); the delivery holds it
// as written (H@Bücher.example): they match.
func TestRecordFeedbackIDN(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "feedback-idn")
	if err != nil {
		t.Fatal(err)
	}
	var typ, sender, send int64
	row := func(sql string, args []any, dst ...any) {
		t.Helper()
		if err := d.Pool.QueryRow(ctx, sql, args...).Scan(dst...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	row(`INSERT INTO contact_types (user_id, name) VALUES ($1, 'T') RETURNING id`, []any{user}, &typ)
	row(`INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, 'H@Bücher.example') RETURNING contact_type_id`, []any{user, typ}, &typ)
	row(`INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'F', 'news@f.example', 'news@f.example', 276, 'S 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, []any{user}, &sender)
	row(`INSERT INTO single_sends (user_id, utr, template_id, template_html, sender_id, unsubscribe_group_id, single_send_name,
			subject, preheader, recipient_id, status, due_at, unique_open_token)
		VALUES ($1, gen_random_uuid(), 1, '<p>x</p>', $2, 0, 'fb', 's', 'p', $3::jsonb, 1, now(), '{}') RETURNING id`,
		[]any{user, sender, fmt.Sprintf(`[{"id":"%d","table":"contacts_"}]`, typ)}, &send)
	var version int32
	row(`SELECT version FROM single_sends WHERE id = $1`, []any{send}, &version)
	disp, err := d.DispatchSend(ctx, send, version, 10, 0)
	if err != nil || disp.Triggered != 1 {
		t.Fatalf("dispatch %+v %v", disp, err)
	}
	lease, claimed, err := d.ClaimDeliveries(ctx, send, 0, 0, disp.First, disp.First+10, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d %v", len(claimed), err)
	}
	if _, err := d.RecordBatch(ctx, lease, user, delivery.NewRecord(lease.SendID, []mail.Outcome{{ID: claimed[0].ID, Email: claimed[0].Recipient.Email, Status: mail.DeliverySent}}, time.Now())); err != nil {
		t.Fatal(err)
	}
	r, err := d.RecordFeedback(ctx, mail.Feedback{Kind: mail.Complaint, SendID: send, DeliveryID: claimed[0].ID, Reason: "abuse", Via: "arf",
		Match: []string{"h@xn--bcher-kva.example"}})
	if err != nil || !r.Found || !r.Counted || r.Email != "H@Bücher.example" {
		t.Fatalf("complaint: %+v %v", r, err)
	}
}
