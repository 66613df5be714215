package postgres_test

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
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

// A claimed range carries what a mail needs of each recipient, read in the
// claim's one statement: reserved fields, the country by name, custom
// values as text keyed by the lower-cased field name; a member stored by
// hand in a segment (no contact) by its own fields.
func TestClaimDeliveriesRecipients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "claim")
	if err != nil {
		t.Fatal(err)
	}
	const sendID = 120001 // a range of its own (TestDropExpiredDeliveries uses 70,001-100,001)
	var typ, seg int64
	if err := d.Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'T') RETURNING id", user).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if err := d.Pool.QueryRow(ctx, `INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value) VALUES ($1, $2, 's', '{}', '{}', '{}') RETURNING id`, user, typ).Scan(&seg); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO single_sends (id, user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader, status)
		 OVERRIDING SYSTEM VALUE VALUES ($1, $2, gen_random_uuid(), 1, 1, 0, 'c', 's', 'p', 2)`,
		`CREATE TABLE IF NOT EXISTS deliveries_p` + itoa(sendID/postgres.PartitionSends) + ` PARTITION OF deliveries FOR VALUES FROM (` +
			itoa(sendID/postgres.PartitionSends*postgres.PartitionSends) + `) TO (` + itoa((sendID/postgres.PartitionSends+1)*postgres.PartitionSends) + `) WITH (fillfactor = 70)`,
		`WITH c AS (INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name, alt_email,
			country, state, city, address_line1, address_line2, state_province_region, postal_code, custom) VALUES
		($2, $3, 'Ann@Example.com', 'Ann', 'Lee', 'ann@alt.example', 276, 'Bayern', 'München', 'Hauptstr. 1', 'Hof', 'BY', '80331',
		 '{"Age": 34, "Company_Name": "Acme <b>", "joined": "2026-03-10T09:00", "score": 1.5, "none": null}'),
		($2, $3, 'bob@example.com', 'Bob', '', NULL, NULL, '', '', '', '', '', '', '{}') RETURNING id, email),
		s AS (INSERT INTO segment_recipients (user_id, segment_id, email, first_name, last_name) VALUES ($2, $4, 'hand@example.com', 'Hand', 'Made') RETURNING id, email)
		INSERT INTO deliveries (send_id, user_id, contact_id, segment_recipient_id, email, list_key)
		SELECT $1::bigint, $2::bigint, id, NULL::bigint, email, 'contacts_' || $3::bigint FROM c
		UNION ALL SELECT $1, $2, NULL, id, email, 'segments_' || $4::bigint FROM s
		ORDER BY 5`,
	} {
		args := []any{sendID, user, typ, seg}
		if strings.HasPrefix(sql, "CREATE") {
			args = nil
		} else if strings.HasPrefix(strings.TrimSpace(sql), "INSERT INTO single_sends") {
			args = args[:2]
		}
		if _, err := d.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var first int64
	if err := d.Pool.QueryRow(ctx, "SELECT min(id) FROM deliveries WHERE send_id = $1", sendID).Scan(&first); err != nil {
		t.Fatal(err)
	}
	lease, claimed, err := d.ClaimDeliveries(ctx, sendID, 0, 0, first, first+10, time.Minute)
	if err != nil || lease == nil {
		t.Fatalf("claim: %v %v", lease, err)
	}
	got := make([]mail.Recipient, len(claimed))
	for i, c := range claimed {
		got[i] = c.Recipient
		got[i].ContactID = 0 // ids of the sequence
	}
	want := []mail.Recipient{
		{Email: "Ann@Example.com", FirstName: "Ann", LastName: "Lee", AltEmail: "ann@alt.example",
			Country: "Germany", State: "Bayern", City: "München", AddressLine1: "Hauptstr. 1", AddressLine2: "Hof",
			StateProvinceRegion: "BY", PostalCode: "80331",
			Custom: map[string]string{"age": "34", "company_name": "Acme <b>", "joined": "2026-03-10T09:00", "score": "1.5"}},
		{Email: "bob@example.com", FirstName: "Bob"},
		{Email: "hand@example.com", FirstName: "Hand", LastName: "Made"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if claimed[0].Recipient.ContactID == 0 || claimed[2].Recipient.ContactID != 0 || claimed[0].Attempts != 1 {
		t.Errorf("contact ids %d, %d (want a contact's, then 0); attempts %d, want 1",
			claimed[0].Recipient.ContactID, claimed[2].Recipient.ContactID, claimed[0].Attempts)
	}
	if got[0].CustomValue("Company_Name") != "Acme <b>" {
		t.Errorf("CustomValue(Company_Name) = %q", got[0].CustomValue("Company_Name"))
	}
}
