package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/postgres/db"
	"github.com/mailroom/mailroom/internal/testdb"
)

// Events go to the outbox of each webhook of their account that wants
// some of them (one row per webhook and write), and a webhook's POST
// carries only the kinds it wants, the address of an event naming a
// delivery read from it, the send's utr looked up; an account without
// webhooks writes nothing.
func TestWebhookOutbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "hooks")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := d.CreateAccount(ctx, "none")
	if err != nil {
		t.Fatal(err)
	}
	complaints, _, err := d.CreateWebhook(ctx, user, mail.WebhookInput{URL: "https://a.example/", Events: mail.HookComplaint | mail.HookBounce})
	if err != nil {
		t.Fatal(err)
	}
	opens, _, err := d.CreateWebhook(ctx, user, mail.WebhookInput{URL: "https://b.example/", Events: mail.HookOpen})
	if err != nil {
		t.Fatal(err)
	}
	unsubs, _, err := d.CreateWebhook(ctx, user, mail.WebhookInput{URL: "https://c.example/", Events: mail.HookUnsubscribe})
	if err != nil {
		t.Fatal(err)
	}
	var send, delivery int64
	var utr string
	if err := d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader)
		VALUES ($1, gen_random_uuid(), 1, 0, 0, 's', 's', 'p') RETURNING id, utr::text`, user).Scan(&send, &utr); err != nil {
		t.Fatal(err)
	}
	if err := d.EnsurePartition(ctx, send); err != nil {
		t.Fatal(err)
	}
	if err := d.Pool.QueryRow(ctx, `INSERT INTO deliveries (send_id, user_id, email, list_key, status) VALUES ($1, $2, 'Ann@example.com', 'contacts_1', 2) RETURNING id`,
		send, user).Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	err = d.EmitWebhookEvents(ctx, user, []mail.HookEvent{
		{Kind: mail.HookComplaint, At: 1700000000, SendID: send, DeliveryID: delivery},
		{Kind: mail.HookBounce, At: 1700000001, Email: "gone@example.com", Type: "bounce", Reason: "550 5.1.1 unknown"},
		{Kind: mail.HookOpen, At: 1700000002, SendID: send, DeliveryID: delivery},
		{Kind: mail.HookComplaint, At: 1700000003, SendID: send, DeliveryID: delivery + 1000}, // no such delivery: left out
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.EmitWebhookEvents(ctx, other, []mail.HookEvent{{Kind: mail.HookComplaint, At: 1, Email: "x@example.com"}}); err != nil {
		t.Fatal(err)
	}
	var rows []int64
	if err := d.Pool.QueryRow(ctx, `SELECT array_agg(webhook_id ORDER BY webhook_id) FROM webhook_batches
		WHERE webhook_id IN (SELECT id FROM webhooks WHERE user_id IN ($1, $2))`, user, other).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows, []int64{complaints, opens}) {
		t.Fatalf("outbox rows for webhooks %v, want %v (not %d: no unsubscribe among them)", rows, []int64{complaints, opens}, unsubs)
	}

	post, err := d.NextWebhookPost(ctx, complaints, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`[{"email":"Ann@example.com","timestamp":1700000000,"event":"complaint","single_send_utr":%q,"delivery_id":%d},`+
		`{"email":"gone@example.com","timestamp":1700000001,"event":"bounce","type":"bounce","reason":"550 5.1.1 unknown"}]`, utr, delivery)
	if string(post.Body) != want || post.Events != 2 || len(post.Batches) != 1 || post.Target.URL != "https://a.example/" {
		t.Fatalf("post %+v\n%s\nwant %s", post, post.Body, want)
	}
	post, err = d.NextWebhookPost(ctx, opens, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`[{"email":"Ann@example.com","timestamp":1700000002,"event":"open","single_send_utr":%q,"delivery_id":%d}]`, utr, delivery); string(post.Body) != want {
		t.Fatalf("opens' post %s", post.Body)
	}
	// A webhook that no longer wants opens: its row carries nothing now.
	if err := d.UpdateWebhook(ctx, user, opens, mail.WebhookInput{URL: "https://b.example/", Events: mail.HookClick}); err != nil {
		t.Fatal(err)
	}
	if post, err = d.NextWebhookPost(ctx, opens, 100, nil); err != nil || post.Events != 0 || string(post.Body) != "[]" || len(post.Batches) != 1 {
		t.Fatalf("after the update: %+v %v", post, err)
	}
	// A deleted webhook's rows go with it.
	if err := d.DeleteWebhook(ctx, user, complaints); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM webhook_batches WHERE webhook_id = $1", complaints).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows left (%v)", left, err)
	}
	if _, err := d.NextWebhookPost(ctx, complaints, 100, nil); mail.ErrorCode(err) != mail.ENOTFOUND {
		t.Fatalf("a deleted webhook's post: %v", err)
	}
}

func TestIDRuns(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ ids, runs []int64 }{
		{nil, nil},
		{[]int64{5}, []int64{5, 5}},
		{[]int64{1, 2, 3, 7, 8, 10}, []int64{1, 3, 7, 8, 10, 10}},
	} {
		if got := postgres.IDRuns(tt.ids); !slices.Equal(got, tt.runs) {
			t.Errorf("idRuns(%v) = %v, want %v", tt.ids, got, tt.runs)
		}
	}
}

// Bounce and complaint intake: a report that counts (once per delivery)
// puts its event in the outbox of the webhooks that want it; a report
// counted already, or a soft bounce, puts nothing.
func TestWebhookFeedbackEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "intake")
	if err != nil {
		t.Fatal(err)
	}
	hook, _, err := d.CreateWebhook(ctx, user, mail.WebhookInput{URL: "https://intake.example/", Events: mail.HookBounce | mail.HookComplaint})
	if err != nil {
		t.Fatal(err)
	}
	var send int64
	var utr string
	if err := d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader)
		VALUES ($1, gen_random_uuid(), 1, 0, 0, 's', 's', 'p') RETURNING id, utr::text`, user).Scan(&send, &utr); err != nil {
		t.Fatal(err)
	}
	if err := d.EnsurePartition(ctx, send); err != nil {
		t.Fatal(err)
	}
	var gone, ann int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO deliveries (send_id, user_id, email, list_key, status) VALUES ($1, $2, 'gone@example.com', 'contacts_1', 2) RETURNING id`,
		send, user).Scan(&gone); err != nil {
		t.Fatal(err)
	}
	if err := d.Pool.QueryRow(ctx, `INSERT INTO deliveries (send_id, user_id, email, list_key, status) VALUES ($1, $2, 'ann@example.com', 'contacts_1', 2) RETURNING id`,
		send, user).Scan(&ann); err != nil {
		t.Fatal(err)
	}
	for _, f := range []mail.Feedback{
		{Kind: mail.HardBounce, SendID: send, DeliveryID: gone, Status: "5.1.1", Reason: "550 5.1.1 no such user", Via: "dsn"},
		{Kind: mail.HardBounce, SendID: send, DeliveryID: gone, Status: "5.1.1", Reason: "550 5.1.1 no such user", Via: "dsn"}, // counted already
		{Kind: mail.SoftBounce, SendID: send, DeliveryID: ann, Status: "4.2.2", Reason: "mailbox full", Via: "dsn"},
		{Kind: mail.Complaint, SendID: send, DeliveryID: ann, Reason: "abuse", Via: "arf"},
	} {
		if _, err := d.RecordFeedback(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	post, err := d.NextWebhookPost(ctx, hook, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Email, Event, Type, Reason string
		SingleSendUTR              string `json:"single_send_utr"`
		DeliveryID                 int64  `json:"delivery_id"`
	}
	if err := json.Unmarshal(post.Body, &got); err != nil || len(got) != 2 || len(post.Batches) != 2 {
		t.Fatalf("post %s (%d rows): %v", post.Body, len(post.Batches), err)
	}
	if g := got[0]; g.Event != "bounce" || g.Type != "bounce" || g.Email != "gone@example.com" || g.Reason != "550 5.1.1 no such user" ||
		g.DeliveryID != gone || g.SingleSendUTR != utr {
		t.Errorf("bounce %+v", g)
	}
	if g := got[1]; g.Event != "complaint" || g.Email != "ann@example.com" || g.Reason != "abuse" || g.DeliveryID != ann || g.SingleSendUTR != utr {
		t.Errorf("complaint %+v", g)
	}
}

// BenchmarkWebhookPost builds the body of one webhook POST of a send's
// delivered events, as the worker does: five outbox rows naming 1,000
// sent mails each by id runs, read with their addresses and the send's
// utr, written as JSON, then marked posted. The database's time and this
// process's are both in the figure (nothing runs beside them).
func BenchmarkWebhookPost(b *testing.B) {
	ctx := context.Background()
	d := testdb.New(b)
	user, _, err := d.CreateAccount(ctx, "post-bench")
	if err != nil {
		b.Fatal(err)
	}
	hook, _, err := d.CreateWebhook(ctx, user, mail.WebhookInput{URL: "https://hooks.example/", Events: mail.HookDelivered})
	if err != nil {
		b.Fatal(err)
	}
	var send int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader)
		VALUES ($1, gen_random_uuid(), 1, 0, 0, 's', 's', 'p') RETURNING id`, user).Scan(&send); err != nil {
		b.Fatal(err)
	}
	if err := d.EnsurePartition(ctx, send); err != nil {
		b.Fatal(err)
	}
	var lo, hi int64
	if err := d.Pool.QueryRow(ctx, `WITH ins AS (INSERT INTO deliveries (send_id, user_id, email, list_key, status, sent_at)
		SELECT $1, $2, 'recipient' || i || '@bench.example', 'contacts_1', 2, now() FROM generate_series(1, 100000) i RETURNING id)
		SELECT min(id), max(id) FROM ins`, send, user).Scan(&lo, &hi); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, "ANALYZE deliveries"); err != nil {
		b.Fatal(err)
	}
	const rows, perRow = 5, 1000
	next := lo
	var buf []byte
	events := 0
	for b.Loop() {
		b.StopTimer()
		if next+rows*perRow > hi {
			next = lo
		}
		for range rows {
			if _, err := d.Pool.Exec(ctx, `INSERT INTO webhook_batches (webhook_id, send_id, kind, runs, n) VALUES ($1, $2, $3, $4, $5)`,
				hook, send, int16(mail.HookDelivered), []int64{next, next + perRow - 1}, perRow); err != nil {
				b.Fatal(err)
			}
			next += perRow
		}
		b.StartTimer()
		p, err := d.NextWebhookPost(ctx, hook, rows*perRow, buf)
		if err != nil {
			b.Fatal(err)
		}
		if p.Events != rows*perRow {
			b.Fatalf("%d events in the POST, want %d", p.Events, rows*perRow)
		}
		events += p.Events
		buf = p.Body
		if err := d.WebhookPosted(ctx, hook, p.Batches, &mail.WebhookAttempt{Events: p.Events}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
}

// SuppressedMembers, which walks the suppressions, answers what
// SuppressedAudience, which walks the audience, answers: the same
// addresses, spellings and reasons, over random contact types, segments
// (contact members and members stored by hand), deleted contacts, case
// variants, exclude lists, the send's group, another group, hard bounces
// and another account's suppressions.
func TestSuppressedMembersMatchesAudience(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	q := db.New(d.Pool)
	user, _, err := d.CreateAccount(ctx, "dropped")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := d.CreateAccount(ctx, "dropped-other")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	addr := func() string {
		a := []byte(fmt.Sprintf("person%d@Example.com", r.IntN(300)))
		for i := range a {
			if r.IntN(4) == 0 && a[i] >= 'a' && a[i] <= 'z' {
				a[i] -= 'a' - 'A'
			}
		}
		return string(a)
	}
	scalar := func(query string, args ...any) int64 {
		t.Helper()
		var id int64
		if err := d.Pool.QueryRow(ctx, query, args...).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := d.Pool.Exec(ctx, query, args...); err != nil {
			t.Fatal(err)
		}
	}
	var types []int64
	for i := range 4 {
		types = append(types, scalar("INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id", user, fmt.Sprint("t", i)))
	}
	otherType := scalar("INSERT INTO contact_types (user_id, name) VALUES ($1, 'o') RETURNING id", other)
	var contacts []int64
	for _, ty := range types {
		for range 120 {
			var id int64
			err := d.Pool.QueryRow(ctx, `INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, $3)
				ON CONFLICT DO NOTHING RETURNING id`, user, ty, addr()).Scan(&id)
			if err == nil {
				contacts = append(contacts, id)
			}
		}
	}
	exec("UPDATE contacts SET deleted_at = now() WHERE id = ANY($1)", contacts[:40])
	for range 100 {
		exec("INSERT INTO contacts (user_id, contact_type_id, email) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", other, otherType, addr())
	}
	var segments []int64
	for i := range 3 {
		seg := scalar(`INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value)
			VALUES ($1, $2, $3, '{}', '{}', '{}') RETURNING id`, user, types[i], fmt.Sprint("s", i))
		segments = append(segments, seg)
		for range 60 {
			exec(`INSERT INTO segment_members (user_id, segment_id, contact_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
				user, seg, contacts[r.IntN(len(contacts))])
			exec(`INSERT INTO segment_recipients (user_id, segment_id, email) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, user, seg, addr())
		}
	}
	for range 150 {
		group := []any{nil, int64(1), int64(2)}[r.IntN(3)]
		exec(`INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, user, group, addr())
		exec(`INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address) VALUES ($1, NULL, $2) ON CONFLICT DO NOTHING`, other, addr())
	}
	for range 60 {
		exec(`INSERT INTO bounces (user_id, email_lc) VALUES ($1, lower($2)) ON CONFLICT DO NOTHING`, user, addr())
	}
	cases := []db.SuppressedAudienceParams{
		{TypeIds: types[:2]},
		{SegmentIds: segments[:2]},
		{TypeIds: types[:1], SegmentIds: segments[1:2]},
		{TypeIds: types[:3], SegmentIds: segments[:1], ExcludeTypeIds: types[3:], ExcludeSegmentIds: segments[2:]},
		{TypeIds: []int64{otherType}},
	}
	for i, c := range cases {
		c.UserID, c.GroupID = user, 1
		c.TypeIds, c.SegmentIds = append([]int64{}, c.TypeIds...), append([]int64{}, c.SegmentIds...)
		c.ExcludeTypeIds, c.ExcludeSegmentIds = append([]int64{}, c.ExcludeTypeIds...), append([]int64{}, c.ExcludeSegmentIds...)
		want, err := q.SuppressedAudience(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := q.SuppressedMembers(ctx, db.SuppressedMembersParams{UserID: c.UserID, GroupID: c.GroupID, TypeIds: c.TypeIds,
			SegmentIds: c.SegmentIds, ExcludeTypeIds: c.ExcludeTypeIds, ExcludeSegmentIds: c.ExcludeSegmentIds})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("case %d: %d addresses dropped", i, len(want))
		if len(want) == 0 && i < 4 {
			t.Fatalf("case %d: nothing suppressed: the data tests nothing", i)
		}
		gotRows := make([]db.SuppressedAudienceRow, len(got))
		for j, g := range got {
			gotRows[j] = db.SuppressedAudienceRow(g)
		}
		if !slices.Equal(gotRows, want) {
			t.Errorf("case %d: from the suppressions\n%v\nfrom the audience\n%v", i, gotRows, want)
		}
	}
}

// A failed POST gives up every row of its webhook written before the
// retry window, not only the rows it carried; a deleted webhook's rows
// that an emitter wrote as the delete committed are dropped by the next
// read instead of being found by every sweep.
func TestWebhookGiveUpAndDeletedRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "give-up")
	if err != nil {
		t.Fatal(err)
	}
	hook, _, err := d.CreateWebhook(ctx, user, mail.WebhookInput{URL: "https://dead.example/", Events: mail.HookBounce})
	if err != nil {
		t.Fatal(err)
	}
	row := func(age string) int64 {
		t.Helper()
		var id int64
		if err := d.Pool.QueryRow(ctx, `INSERT INTO webhook_batches (webhook_id, events, n, created_at)
			VALUES ($1, '[{"kind":4,"at":1,"email":"a@b.example"}]', 1, now() - $2::interval) RETURNING id`, hook, age).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	carried := row("30 hours")
	row("29 hours")
	row("25 hours")
	fresh := row("1 hour")
	rows, events, err := d.WebhookFailed(ctx, hook, []int64{carried}, mail.WebhookAttempt{Error: "dial: refused", Events: 1},
		time.Now().Add(-24*time.Hour))
	if err != nil || rows != 3 || events != 3 {
		t.Fatalf("given up %d rows, %d events (%v): want the three older than a day", rows, events, err)
	}
	var pending []int64
	if err := d.Pool.QueryRow(ctx, "SELECT COALESCE(array_agg(id), '{}') FROM webhook_batches WHERE webhook_id = $1 AND state = 0", hook).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pending, []int64{fresh}) {
		t.Fatalf("still waiting %v, want only the fresh row %d", pending, fresh)
	}

	if err := d.DeleteWebhook(ctx, user, hook); err != nil {
		t.Fatal(err)
	}
	row("0 hours") // an emitter's row committed just after the delete
	if _, err := d.NextWebhookPost(ctx, hook, 5000, nil); mail.ErrorCode(err) != mail.ENOTFOUND {
		t.Fatalf("a deleted webhook's post: %v", err)
	}
	var left int
	if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM webhook_batches WHERE webhook_id = $1", hook).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows left for the deleted webhook (%v)", left, err)
	}
}
