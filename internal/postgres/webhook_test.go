package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
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
