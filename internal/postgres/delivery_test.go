package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// Retention drops a partition only when every send in its range is long
// done and a later send exists past it; the sends and their counters stay.
func TestDropExpiredDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "retention")
	if err != nil {
		t.Fatal(err)
	}
	// Sends with chosen ids: 70,001 (completed a year ago), 80,001
	// (completed yesterday), 90,001 (running), 100,001 (a later send).
	send := func(id int64, status int, sentAgo string) {
		t.Helper()
		if _, err := d.Pool.Exec(ctx, `INSERT INTO single_sends (id, user_id, utr, template_id, sender_id, unsubscribe_group_id,
				single_send_name, subject, preheader, status, delivered, sent_at)
			OVERRIDING SYSTEM VALUE
			VALUES ($1, $2, gen_random_uuid(), 1, 1, 1, 'r', 's', 'p', $3, 42, now() - $4::interval)`, id, user, status, sentAgo); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS deliveries_p`+itoa(id/postgres.PartitionSends)+
			` PARTITION OF deliveries FOR VALUES FROM (`+itoa(id/postgres.PartitionSends*postgres.PartitionSends)+`) TO (`+
			itoa((id/postgres.PartitionSends+1)*postgres.PartitionSends)+`)`); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Pool.Exec(ctx, `INSERT INTO deliveries (send_id, user_id, email, list_key, status) VALUES ($1, $2, 'a@b.co', 'contacts_1', 2)`, id, user); err != nil {
			t.Fatal(err)
		}
	}
	send(70001, 3, "1 year")
	send(80001, 3, "1 day")
	send(90001, 2, "0")
	send(100001, 1, "0")

	dropped, err := d.DropExpiredDeliveries(ctx, 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dropped, "deliveries_p7") || slices.ContainsFunc(dropped, func(s string) bool {
		return s == "deliveries_p8" || s == "deliveries_p9" || s == "deliveries_p10"
	}) {
		t.Fatalf("dropped %v, want deliveries_p7 and not p8, p9, p10", dropped)
	}
	var exists bool
	var delivered int64
	if err := d.Pool.QueryRow(ctx, "SELECT to_regclass('deliveries_p7') IS NOT NULL, (SELECT delivered FROM single_sends WHERE id = 70001)").Scan(&exists, &delivered); err != nil {
		t.Fatal(err)
	}
	if exists || delivered != 42 {
		t.Errorf("p7 exists %v; the send's delivered %d, want 42", exists, delivered)
	}
	// Running again drops nothing more.
	if again, err := d.DropExpiredDeliveries(ctx, 30*24*time.Hour); err != nil || slices.Contains(again, "deliveries_p8") {
		t.Errorf("second run: %v %v", again, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
