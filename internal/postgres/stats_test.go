package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// A flush of opens and clicks counts what a pixel and a link prove, once
// per mail for the unique counts, and nothing for forged or unknown ones;
// the links keep their numbers when a later compile adds one.
func TestRecordActivity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "activity")
	if err != nil {
		t.Fatal(err)
	}
	var send, utr = int64(0), ""
	if err := d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id,
			single_send_name, subject, preheader, status, unique_open_token)
		VALUES ($1, gen_random_uuid(), 1, 1, 1, 'r', 's', 'p', 2, '{"contacts_1": "tok"}') RETURNING id, utr::text`, user).Scan(&send, &utr); err != nil {
		t.Fatal(err)
	}
	if err := d.EnsurePartition(ctx, send); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 3)
	for i := range ids {
		if err := d.Pool.QueryRow(ctx, `INSERT INTO deliveries (send_id, user_id, email, list_key, status) VALUES ($1, $2, 'a@b.co', 'contacts_1', 2) RETURNING id`,
			send, user).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	links, err := d.NumberLinks(ctx, send, []string{"https://a.example/", "https://b.example/", "https://a.example/"})
	if err != nil || !reflect.DeepEqual(links, []string{"https://a.example/", "https://b.example/"}) {
		t.Fatalf("links %v %v", links, err)
	}
	// A later compile with another link: the old numbers stay.
	links, err = d.NumberLinks(ctx, send, []string{"https://c.example/", "https://b.example/"})
	if err != nil || !reflect.DeepEqual(links, []string{"https://a.example/", "https://b.example/", "https://c.example/"}) {
		t.Fatalf("links after a second compile %v %v", links, err)
	}

	opens := []mail.Open{
		{SendID: send, DeliveryID: ids[0], ListToken: "tok"},
		{SendID: send, DeliveryID: ids[0], ListToken: "tok"},
		{SendID: send, DeliveryID: ids[1], ListToken: "tok"},
		{SendID: send, DeliveryID: ids[2], ListToken: "forged"},
		{SendID: send, DeliveryID: 1 << 40, ListToken: "tok"},
	}
	clicks := []mail.Click{
		{SendID: send, DeliveryID: ids[0], Link: 0},
		{SendID: send, DeliveryID: ids[0], Link: 0},
		{SendID: send, DeliveryID: ids[0], Link: 1},
		{SendID: send, DeliveryID: ids[1], Link: 1},
		{SendID: send, DeliveryID: ids[1], Link: 7},     // no such link
		{SendID: send, DeliveryID: 1 << 40, Link: 0},    // no such delivery
		{SendID: send + 1, DeliveryID: ids[2], Link: 0}, // another send
	}
	if err := d.RecordActivity(ctx, opens, clicks); err != nil {
		t.Fatal(err)
	}
	// A second flush: the same mails again are not unique any more.
	if err := d.RecordActivity(ctx, opens[:1], clicks[:1]); err != nil {
		t.Fatal(err)
	}
	st, err := d.SingleSendStats(ctx, user, utr)
	if err != nil {
		t.Fatal(err)
	}
	want := mail.Counts{UniqueOpens: 2, TotalOpens: 4, UniqueClicks: 2, TotalClicks: 5}
	if st.Counts != want || len(st.Timeline) != 1 || st.Timeline[0].Counts != want {
		t.Errorf("stats %+v, want %+v in one hour", st, want)
	}
	wantLinks := []mail.LinkClicks{{URL: "https://a.example/", UniqueClicks: 1, TotalClicks: 3}, {URL: "https://b.example/", UniqueClicks: 2, TotalClicks: 2}}
	if !reflect.DeepEqual(st.Links, wantLinks) {
		t.Errorf("links %+v, want %+v", st.Links, wantLinks)
	}
	var uniq, total int64
	if err := d.Pool.QueryRow(ctx, "SELECT unique_opens, total_opens FROM single_sends WHERE id = $1", send).Scan(&uniq, &total); err != nil || uniq != 2 || total != 4 {
		t.Errorf("the send's open counters %d/%d (%v), want 2/4", uniq, total, err)
	}
	// Another account reads nothing of it.
	other, _, _ := d.CreateAccount(ctx, "other")
	if _, err := d.SingleSendStats(ctx, other, utr); mail.ErrorCode(err) != mail.ENOTFOUND {
		t.Errorf("another account's read: %v", err)
	}
}

// BenchmarkAutomationStats reads the statistics of an automation live for
// a year (8,760 hours with counts) with 1,000 links: what a stats request
// costs at its largest.
func BenchmarkAutomationStats(b *testing.B) {
	ctx := context.Background()
	d := testdb.New(b)
	user, _, err := d.CreateAccount(ctx, "bench-stats")
	if err != nil {
		b.Fatal(err)
	}
	var auto int64
	var utr string
	if err := d.Pool.QueryRow(ctx, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table)
		VALUES ($1, gen_random_uuid(), 'a', 2, 1, 'contacts_') RETURNING id, utr::text`, user).Scan(&auto, &utr); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `INSERT INTO send_stats (scope, scope_id, hour, triggered, delivered, total_opens)
		SELECT 'a', $1, date_trunc('hour', now()) - g * interval '1 hour', 100, 99, 40 FROM generate_series(0, 8759) g`, auto); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `INSERT INTO link_stats (scope, scope_id, url, unique_clicks, total_clicks)
		SELECT 'a', $1, 'https://shop.example/item/' || g, g, 2 * g FROM generate_series(1, 1000) g`, auto); err != nil {
		b.Fatal(err)
	}
	d.Pool.Exec(ctx, "ANALYZE send_stats, link_stats")
	b.ResetTimer()
	for b.Loop() {
		st, err := d.AutomationStats(ctx, user, utr)
		if err != nil || len(st.Timeline) != 8760 || st.Delivered != 99*8760 || len(st.Links) != 1000 {
			b.Fatalf("%d hours, %d links, %v", len(st.Timeline), len(st.Links), err)
		}
	}
}

// BenchmarkRecordActivity is one recorder flush of clicks (and a fifth as
// many opens) over a send of 100,000 delivered mails and 10 links, at the
// recorder's batch size and ten times it: what the click redirect's
// writes cost the database per item.
func BenchmarkRecordActivity(b *testing.B) {
	ctx := context.Background()
	d := testdb.New(b)
	user, _, err := d.CreateAccount(ctx, "activity-bench")
	if err != nil {
		b.Fatal(err)
	}
	send, _, ids := sendWithMails(b, d, user, 100_000)
	urls := make([]string, 10)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://shop.example/item/%d", i)
	}
	if _, err := d.NumberLinks(ctx, send, urls); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, "ANALYZE deliveries"); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				clicks := make([]mail.Click, n)
				for i := range clicks {
					clicks[i] = mail.Click{SendID: send, DeliveryID: ids[r.IntN(len(ids))], Link: r.IntN(len(urls))}
				}
				opens := make([]mail.Open, n/5)
				for i := range opens {
					opens[i] = mail.Open{SendID: send, DeliveryID: ids[r.IntN(len(ids))], ListToken: "tok"}
				}
				if err := d.RecordActivity(ctx, opens, clicks); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/click")
		})
	}
}

// Two processes flushing clicks of the same mails at the same moment (a
// link scanner clicking every link through two API processes) count each
// mail one unique clicker, and every click.
func TestConcurrentClicksCountOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "concurrent-clicks")
	if err != nil {
		t.Fatal(err)
	}
	send, utr, ids := sendWithMails(t, d, user, 300)
	if _, err := d.NumberLinks(ctx, send, []string{"https://a.example/", "https://b.example/"}); err != nil {
		t.Fatal(err)
	}
	const rounds, writers = 10, 2
	per := len(ids) / rounds
	for r := range rounds {
		var clicks []mail.Click
		for _, id := range ids[r*per : (r+1)*per] {
			clicks = append(clicks, mail.Click{SendID: send, DeliveryID: id, Link: 0}, mail.Click{SendID: send, DeliveryID: id, Link: 1})
		}
		errs := make(chan error, writers)
		for range writers {
			go func() { errs <- d.RecordActivity(ctx, nil, clicks) }()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	st, err := d.SingleSendStats(ctx, user, utr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts.UniqueClicks != int64(len(ids)) || st.Counts.TotalClicks != int64(len(ids)*2*writers) {
		t.Errorf("unique %d, total %d clicks; want %d and %d", st.Counts.UniqueClicks, st.Counts.TotalClicks, len(ids), len(ids)*2*writers)
	}
	for _, l := range st.Links {
		if l.UniqueClicks != int64(len(ids)) || l.TotalClicks != int64(len(ids)*writers) {
			t.Errorf("link %+v: want %d unique, %d total", l, len(ids), len(ids)*writers)
		}
	}
}

// sendWithMails makes a running send of account user (list token "tok"
// for contacts_1) in a partition of its own, with n sent mails; it
// answers the send, its utr and the mails' ids in order.
func sendWithMails(tb testing.TB, d *postgres.DB, user int64, n int) (send int64, utr string, ids []int64) {
	tb.Helper()
	ctx := context.Background()
	if err := d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id,
			single_send_name, subject, preheader, status, unique_open_token)
		VALUES ($1, gen_random_uuid(), 1, 1, 1, 'r', 's', 'p', 2, '{"contacts_1": "tok"}') RETURNING id, utr::text`, user).Scan(&send, &utr); err != nil {
		tb.Fatal(err)
	}
	if err := d.EnsurePartition(ctx, send); err != nil {
		tb.Fatal(err)
	}
	if err := d.Pool.QueryRow(ctx, `WITH ins AS (INSERT INTO deliveries (send_id, user_id, email, list_key, status)
		SELECT $1, $2, 'r' || i || '@b.example', 'contacts_1', 2 FROM generate_series(1, $3::int) i RETURNING id)
		SELECT array_agg(id ORDER BY id) FROM ins`, send, user, n).Scan(&ids); err != nil {
		tb.Fatal(err)
	}
	return send, utr, ids
}
