package postgres_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

// A batch of recipients in one query: reserved fields, the country's name,
// custom values as text; deleted contacts and other accounts' left out.
func TestRecipients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "recipients")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := d.CreateAccount(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	var typ int64
	if err := d.Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'T') RETURNING id", user).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	if err := d.Pool.QueryRow(ctx, `WITH x AS (INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name, alt_email,
			country, state, city, address_line1, custom, deleted_at) VALUES
		($1, $2, 'Ann@Example.com', 'Ann', 'Lee', 'ann@alt.example', 276, 'Bayern', 'München', 'Hauptstr. 1',
		 '{"Age": 34, "Company_Name": "Acme <b>", "joined": "2026-03-10T09:00", "score": 1.5}', NULL),
		($1, $2, 'bob@example.com', 'Bob', '', NULL, NULL, '', '', '', '{}', NULL),
		($1, $2, 'gone@example.com', 'Gone', '', NULL, NULL, '', '', '', '{}', now()),
		($3, $2, 'other@example.com', 'Other', '', NULL, NULL, '', '', '', '{}', NULL)
		RETURNING id) SELECT array_agg(id ORDER BY id) FROM x`, user, typ, other).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	got, err := d.Recipients(ctx, user, append(ids, 999999999))
	if err != nil {
		t.Fatal(err)
	}
	want := []mail.Recipient{
		{ContactID: ids[0], Email: "Ann@Example.com", FirstName: "Ann", LastName: "Lee", AltEmail: "ann@alt.example",
			Country: "Germany", State: "Bayern", City: "München", AddressLine1: "Hauptstr. 1",
			Custom: map[string]string{"age": "34", "company_name": "Acme <b>", "joined": "2026-03-10T09:00", "score": "1.5"}},
		{ContactID: ids[1], Email: "bob@example.com", FirstName: "Bob"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if got[0].CustomValue("company_name") != "Acme <b>" {
		t.Fatal("CustomValue")
	}
}
