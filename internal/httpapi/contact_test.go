package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/testdb"
)

// seedType makes a contact type for acct directly in the database.
func seedType(t *testing.T, acct account, name string) int64 {
	t.Helper()
	var id int64
	err := testdb.New(t).Pool.QueryRow(context.Background(),
		"INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id", acct.id, name).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// seedField makes a custom field for acct directly in the database.
func seedField(t *testing.T, acct account, name, typ string) int64 {
	t.Helper()
	var id int64
	err := testdb.New(t).Pool.QueryRow(context.Background(),
		"INSERT INTO custom_fields (user_id, field_name, field_type) VALUES ($1, $2, $3) RETURNING id", acct.id, name, typ).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// contactID finds the id of acct's live contact with this address.
func contactID(t *testing.T, acct account, email string) int64 {
	t.Helper()
	var id int64
	err := testdb.New(t).Pool.QueryRow(context.Background(),
		"SELECT id FROM contacts WHERE user_id = $1 AND email_lc = lower($2) AND deleted_at IS NULL", acct.id, email).Scan(&id)
	if err != nil {
		t.Fatalf("contact %s: %v", email, err)
	}
	return id
}

// ids replaces "<id>" placeholders in want, in order.
func withIDs(want string, ids ...int64) string {
	for _, id := range ids {
		want = strings.Replace(want, "<id>", strconv.FormatInt(id, 10), 1)
	}
	return want
}

func TestContactAddAndRead(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Customers")
	seedField(t, acct, "age", "number")
	seedField(t, acct, "joined", "datetime-local")
	seedField(t, acct, "nickname", "text")

	a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: multipartBody{
		"contact_type_id": fmt.Sprint(typ), "email": " Ada@Example.com ", "country": "826",
		"first_name": "Ada", "last_name": "Lovelace", "city": "London", "postal_code": "W1",
		"custom_field[age]": "36", "custom_field[joined]": "2026-01-02T10:30",
	}}).expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	id := contactID(t, acct, "ada@example.com")

	r := a.do(req{method: "GET", path: fmt.Sprintf("/api/contacts/details?contact_id=%d", id), acct: &acct})
	want := withIDs(`{"status":"success","message":{"contact":{"id":<id>,"user_id":<id>,"contact_type_id":<id>,`+
		`"first_name":"Ada","last_name":"Lovelace","email":"Ada@Example.com","alt_email":null,"country":"826",`+
		`"state":"","city":"London","address_line1":"","address_line2":"","state_province_region":"","postal_code":"W1",`+
		`"custom_field":{"age":{"field_name":"age","field_value":"36"},"joined":{"field_name":"joined","field_value":"2026-01-02T10:30"},"nickname":{"field_name":"nickname","field_value":null}},`+
		`"deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>","fullname":"Ada Lovelace"}}}`, id, acct.id, typ)
	if got := normalize(r.body); r.code != 200 || got != want {
		t.Fatalf("details:\n got %d %s\nwant %s", r.code, got, want)
	}

	r = a.do(req{method: "GET", path: "/api/contacts/list", acct: &acct})
	want = withIDs(`{"status":"success","message":{"contacts":[{"id":<id>,"user_id":<id>,"contact_type_id":<id>,`+
		`"first_name":"Ada","last_name":"Lovelace","email":"Ada@Example.com","alt_email":null,"country":"United Kingdom",`+
		`"state":"","city":"London","address_line1":"","address_line2":"","state_province_region":"","postal_code":"W1",`+
		`"custom_field":{"age":{"field_name":"age","field_value":"36"},"joined":{"field_name":"joined","field_value":"2026-01-02T10:30"},"nickname":{"field_name":"nickname","field_value":null}},`+
		`"deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>","fullname":"Ada Lovelace",`+
		`"contact_type":{"id":<id>,"user_id":<id>,"name":"Customers","deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>"}}]}}`,
		id, acct.id, typ, typ, acct.id)
	if got := normalize(r.body); r.code != 200 || got != want {
		t.Fatalf("list:\n got %d %s\nwant %s", r.code, got, want)
	}
}

// Adding an address that exists in the type (any case) updates it; fields
// not sent keep their values.
func TestContactAddExistingUpdates(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	other := seedType(t, acct, "Other")
	seedField(t, acct, "age", "number")
	add := func(body url.Values) {
		t.Helper()
		a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: body}).
			expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	}
	add(url.Values{"contact_type_id": {fmt.Sprint(typ)}, "email": {"bob@example.com"}, "country": {"276"},
		"first_name": {"Bob"}, "city": {"Berlin"}, "custom_field[age]": {"40"}})
	add(url.Values{"contact_type_id": {fmt.Sprint(typ)}, "email": {"BOB@example.com"}, "country": {"40"}, "last_name": {"Builder"}})
	add(url.Values{"contact_type_id": {fmt.Sprint(other)}, "email": {"bob@example.com"}, "country": {"40"}})

	var n int
	var email, first, last, city string
	var country int
	var custom string
	err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT count(*) OVER (), email, first_name, last_name, city, country, custom::text
		FROM contacts WHERE user_id = $1 AND contact_type_id = $2`, acct.id, typ).Scan(&n, &email, &first, &last, &city, &country, &custom)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || email != "BOB@example.com" || first != "Bob" || last != "Builder" || city != "Berlin" || country != 40 || custom != `{"age": 40}` {
		t.Fatalf("got %d %s %s %s %s %d %s", n, email, first, last, city, country, custom)
	}
}

func TestContactValidation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	seedField(t, acct, "age", "number")
	seedField(t, acct, "joined", "datetime-local")
	other := a.account()
	otherType := seedType(t, other, "Theirs")
	tests := []struct {
		name string
		body any
		want string
	}{
		{"nothing", url.Values{}, `{"contact_type_id":["The contact type id field is required."],"email":["The email field is required."],"country":["The country field is required."]}`},
		{"missing email", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "country": {"276"}}, `{"email":["The email field is required."]}`},
		{"bad email", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "country": {"276"}, "email": {"not-an-address"}}, `{"email":["The email must be a valid email address."]}`},
		{"no dot in domain", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "country": {"276"}, "email": {"a@localhost"}}, `{"email":["The email must be a valid email address."]}`},
		{"display name", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "country": {"276"}, "email": {"Ada <a@b.co>"}}, `{"email":["The email must be a valid email address."]}`},
		{"too long", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "country": {"276"}, "email": {strings.Repeat("a", 250) + "@b.co"}}, `{"email":["The email must be a valid email address."]}`},
		{"unknown country", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "country": {"999"}, "email": {"a@b.co"}}, `{"country":["The selected country is invalid."]}`},
		{"country not a number", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "country": {"DE"}, "email": {"a@b.co"}}, `{"country":["The country must be an integer."]}`},
		{"type not a number", url.Values{"contact_type_id": {"x"}, "country": {"276"}, "email": {"a@b.co"}}, `{"contact_type_id":["The contact type id must be an integer."]}`},
		{"another account's type", url.Values{"contact_type_id": {fmt.Sprint(otherType)}, "country": {"276"}, "email": {"a@b.co"}}, `{"contact_type_id":["The selected contact type id is invalid."]}`},
		{"bad alt email", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "country": {"276"}, "email": {"a@b.co"}, "alt_email": {"nope"}}, `{"alt_email":["The alt email must be a valid email address."]}`},
		{"bad number", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "country": {"276"}, "email": {"a@b.co"}, "custom_field[age]": {"old"}}, `{"custom_field.age":["The age must be a number."]}`},
		{"bad datetime", url.Values{"contact_type_id": {fmt.Sprint(typ)}, "country": {"276"}, "email": {"a@b.co"}, "custom_field[joined]": {"2026-01-02"}}, `{"custom_field.joined":["The joined must be a date and time as YYYY-MM-DDTHH:MM."]}`},
		{"unknown custom field", jsonBody(fmt.Sprintf(`{"contact_type_id":%d,"country":276,"email":"a@b.co","custom_field":{"shoe":"9"}}`, typ)), `{"custom_field.shoe":["The custom field shoe does not exist."]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: tt.body}).
				expect(t, 422, `{"status":"failed","errors":`+tt.want+`}`)
		})
	}
	var n int
	testdb.New(t).Pool.QueryRow(context.Background(), "SELECT count(*) FROM contacts WHERE user_id = $1", acct.id).Scan(&n)
	if n != 0 {
		t.Fatalf("%d contacts written by failed adds", n)
	}
}

func TestContactUpdate(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	typ2 := seedType(t, acct, "Customers")
	for _, e := range []string{"a@example.com", "b@example.com"} {
		a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: jsonBody(fmt.Sprintf(
			`{"contact_type_id":%d,"email":%q,"country":276,"first_name":"A"}`, typ, e))}).
			expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	}
	id := contactID(t, acct, "a@example.com")
	a.do(req{method: "POST", path: "/api/contacts/update", acct: &acct, body: url.Values{
		"contact_id": {fmt.Sprint(id)}, "contact_type_id": {fmt.Sprint(typ2)}, "email": {"a2@example.com"}, "country": {"40"}, "last_name": {"Z"},
	}}).expect(t, 200, `{"status":"success","message":"Contact Updated Successfully"}`)
	r := a.do(req{method: "GET", path: fmt.Sprintf("/api/contacts/details?contact_id=%d", id), acct: &acct})
	if !strings.Contains(r.body, `"contact_type_id":`+fmt.Sprint(typ2)+`,"first_name":"A","last_name":"Z","email":"a2@example.com","alt_email":null,"country":"40"`) {
		t.Fatalf("after update: %s", r.body)
	}
	// Taking another live contact's address in the same type is refused.
	a.do(req{method: "POST", path: "/api/contacts/update", acct: &acct, body: url.Values{
		"contact_id": {fmt.Sprint(contactID(t, acct, "b@example.com"))}, "contact_type_id": {fmt.Sprint(typ2)}, "email": {"A2@example.com"}, "country": {"40"},
	}}).expect(t, 422, `{"status":"failed","errors":{"email":["The email has already been taken."]}}`)
	a.do(req{method: "POST", path: "/api/contacts/update", acct: &acct, body: url.Values{
		"contact_type_id": {fmt.Sprint(typ2)}, "country": {"40"},
	}}).expect(t, 422, `{"status":"failed","errors":{"contact_id":["The contact id field is required."],"email":["The email field is required."]}}`)
	a.do(req{method: "POST", path: "/api/contacts/update", acct: &acct, body: url.Values{
		"contact_id": {"999999999"}, "contact_type_id": {fmt.Sprint(typ2)}, "email": {"x@example.com"}, "country": {"40"},
	}}).expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
}

func TestContactDelete(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	var ids []int64
	for i := 0; i < 4; i++ {
		e := fmt.Sprintf("c%d@example.com", i)
		a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
			"contact_type_id": {fmt.Sprint(typ)}, "email": {e}, "country": {"276"}}}).
			expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
		ids = append(ids, contactID(t, acct, e))
	}
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/contacts/delete?contact_id=%d", ids[0]), acct: &acct}).
		expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/contacts/delete?contact_id=%d", ids[0]), acct: &acct}).
		expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	a.do(req{method: "GET", path: fmt.Sprintf("/api/contacts/details?contact_id=%d", ids[0]), acct: &acct}).
		expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	a.do(req{method: "DELETE", path: "/api/contacts/delete?contact_id=abc", acct: &acct}).
		expect(t, 422, `{"status":"failed","errors":{"contact_id":["The contact id must be an integer."]}}`)
	a.do(req{method: "DELETE", path: "/api/contacts/delete", acct: &acct}).
		expect(t, 422, `{"status":"failed","errors":{"contact_id":["The contact id field is required."]}}`)

	// Bulk delete is all or nothing: one deleted id refuses the lot.
	a.do(req{method: "POST", path: "/api/contacts/bulk-delete", acct: &acct, body: url.Values{
		"strIds[0]": {fmt.Sprint(ids[1])}, "strIds[1]": {fmt.Sprint(ids[0])}}}).
		expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	a.do(req{method: "POST", path: "/api/contacts/bulk-delete", acct: &acct, body: url.Values{"strIds[0]": {"x"}}}).
		expect(t, 422, `{"status":"failed","errors":{"strIds":["The str ids must be an array of integers."]}}`)
	a.do(req{method: "POST", path: "/api/contacts/bulk-delete", acct: &acct, body: url.Values{}}).
		expect(t, 422, `{"status":"failed","errors":{"strIds":["The str ids field is required."]}}`)
	a.do(req{method: "POST", path: "/api/contacts/bulk-delete", acct: &acct, body: url.Values{
		"strIds[]": {fmt.Sprint(ids[1]), fmt.Sprint(ids[2])}}}).
		expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	a.do(req{method: "POST", path: "/api/contacts/bulk-delete", acct: &acct, body: jsonBody(fmt.Sprintf(`{"strIds":["%d"]}`, ids[3]))}).
		expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	a.do(req{method: "GET", path: "/api/contacts/list", acct: &acct}).
		expect(t, 200, `{"status":"success","message":{"contacts":[]}}`)
	// A deleted address can be added again.
	a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
		"contact_type_id": {fmt.Sprint(typ)}, "email": {"c0@example.com"}, "country": {"276"}}}).
		expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
}

// Account B gets the not-found answer for A's contacts on every route.
func TestContactIsolation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	owner, intruder := a.account(), a.account()
	typ := seedType(t, owner, "Leads")
	myType := seedType(t, intruder, "Mine")
	a.do(req{method: "POST", path: "/api/contacts/add", acct: &owner, body: url.Values{
		"contact_type_id": {fmt.Sprint(typ)}, "email": {"secret@example.com"}, "country": {"276"}}}).
		expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	id := contactID(t, owner, "secret@example.com")
	nf := `{"status":"failed","errors":"Record Not Found"}`
	a.do(req{method: "GET", path: fmt.Sprintf("/api/contacts/details?contact_id=%d", id), acct: &intruder}).expect(t, 404, nf)
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/contacts/delete?contact_id=%d", id), acct: &intruder}).expect(t, 404, nf)
	a.do(req{method: "POST", path: "/api/contacts/bulk-delete", acct: &intruder, body: url.Values{"strIds[0]": {fmt.Sprint(id)}}}).expect(t, 404, nf)
	a.do(req{method: "POST", path: "/api/contacts/update", acct: &intruder, body: url.Values{
		"contact_id": {fmt.Sprint(id)}, "contact_type_id": {fmt.Sprint(myType)}, "email": {"x@example.com"}, "country": {"276"}}}).expect(t, 404, nf)
	a.do(req{method: "GET", path: "/api/contacts/list", acct: &intruder}).expect(t, 200, `{"status":"success","message":{"contacts":[]}}`)
	if r := a.do(req{method: "GET", path: fmt.Sprintf("/api/contacts/details?contact_id=%d", id), acct: &owner}); r.code != 200 {
		t.Fatalf("owner lost the contact: %d %s", r.code, r.body)
	}
}

func TestContactListPages(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	_, err := testdb.New(t).Pool.Exec(context.Background(), `INSERT INTO contacts (user_id, contact_type_id, email)
		SELECT $1, $2, 'p' || g || '@example.com' FROM generate_series(1, 25) g`, acct.id, typ)
	if err == nil {
		err = testdb.New(t).Recount(context.Background(), acct.id) // rows written around storage
	}
	if err != nil {
		t.Fatal(err)
	}
	r := a.do(req{method: "GET", path: "/api/contacts/list?page=3&per_page=10", acct: &acct})
	if r.code != 200 || strings.Count(r.body, `"email":`) != 5 || !strings.Contains(r.body, `"email":"p21@example.com"`) ||
		!strings.HasSuffix(r.body, `],"pagination":{"page":3,"per_page":10,"total":25}}}`) {
		t.Fatalf("page 3: %d %s", r.code, r.body)
	}
	// after_id: the page after a contact (page numbers count from it), total
	// still the whole list.
	p20 := contactID(t, acct, "p20@example.com")
	for _, path := range []string{
		fmt.Sprintf("/api/contacts/list?per_page=10&after_id=%d", p20),
		fmt.Sprintf("/api/contacts/list?page=1&per_page=10&after_id=%d", p20),
		fmt.Sprintf("/api/contacts/list?page=2&per_page=3&after_id=%d", contactID(t, acct, "p17@example.com")),
	} {
		r := a.do(req{method: "GET", path: path, acct: &acct})
		if r.code != 200 || strings.Count(r.body, `"email":`) != 5-strings.Count(path, "page=2")*2 || !strings.Contains(r.body, `"email":"p21@example.com"`) ||
			!strings.Contains(r.body, `],"pagination":{"page":`) || !strings.HasSuffix(r.body, `,"total":25}}}`) {
			t.Fatalf("%s: %d %s", path, r.code, r.body)
		}
	}
	a.do(req{method: "GET", path: "/api/contacts/list?after_id=x&page=0", acct: &acct}).
		expect(t, 422, `{"status":"failed","errors":{"page":["The page must be at least 1."],"after_id":["The after id must be an integer."]}}`)
	a.do(req{method: "GET", path: "/api/contacts/list?per_page=1001", acct: &acct}).
		expect(t, 422, `{"status":"failed","errors":{"per_page":["The per page may not be greater than 1000."]}}`)
	a.do(req{method: "GET", path: "/api/contacts/list?page=0", acct: &acct}).
		expect(t, 422, `{"status":"failed","errors":{"page":["The page must be at least 1."]}}`)
	if r := a.do(req{method: "GET", path: "/api/contacts/list", acct: &acct}); strings.Count(r.body, `"email":`) != 25 {
		t.Fatalf("unpaged: %s", r.body)
	}
}

// A body over MAX_BODY_BYTES (1 MB in these tests) is refused with a 422.
func TestBodyCap(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	big := url.Values{"contact_type_id": {fmt.Sprint(typ)}, "email": {"a@example.com"}, "country": {"276"},
		"first_name": {strings.Repeat("x", 2<<20)}}
	a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: big}).
		expect(t, 422, `{"status":"failed","errors":{"body":["The request body may not be larger than 1048576 bytes."]}}`)
	a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: jsonBody(`{"email": `)}).
		expect(t, 422, `{"status":"failed","errors":{"body":["The request body is not valid JSON."]}}`)
	// The upload has its own, larger cap.
	var b strings.Builder
	b.WriteString("email,first_name\n")
	for b.Len() < 3<<20 {
		fmt.Fprintf(&b, "u%d@example.com,%s\n", b.Len(), strings.Repeat("y", 100))
	}
	upload(a, acct, typ, b.String()).expect(t, 200, imported)
}

// Text PostgreSQL cannot store is refused at the edge, never a 500.
func TestUnstorableText(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	seedField(t, acct, "note", "text")
	base := func(k, v string) url.Values {
		b := url.Values{"contact_type_id": {fmt.Sprint(typ)}, "email": {"a@example.com"}, "country": {"276"}}
		b.Set(k, v)
		return b
	}
	a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: base("first_name", "A\x00B")}).
		expect(t, 422, `{"status":"failed","errors":{"first_name":["The first name must be UTF-8 text without NUL characters."]}}`)
	a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: base("custom_field[note]", "\xff\xfe")}).
		expect(t, 422, `{"status":"failed","errors":{"custom_field.note":["The custom field note must be UTF-8 text without NUL characters."]}}`)
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: multipartBody{"name": "Na\x00me"}}).
		expect(t, 422, `{"status":"failed","errors":{"name":["The name must be UTF-8 text without NUL characters."]}}`)
	upload(a, acct, typ, "email,first_name\na@example.com,A\x00\n").
		expect(t, 422, `{"status":"failed","errors":{"file":["Line 2 contains a NUL character."]}}`)
	a.do(req{method: "GET", path: "/api/contacts/list", header: map[string]string{"PublicKey": "\xff\xfe", "SecretKey": acct.secret}}).
		expect(t, 401, `{"status":"failed","errors":"The public key or secret key is invalid."}`)
	a.do(req{method: "GET", path: "/api/contacts/list", acct: &acct}).
		expect(t, 200, `{"status":"success","message":{"contacts":[]}}`)
}

// An empty alt_email clears it to null, as an import's empty cell does.
func TestContactClearAltEmail(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	add := func(alt string) {
		t.Helper()
		a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
			"contact_type_id": {fmt.Sprint(typ)}, "email": {"a@example.com"}, "country": {"276"}, "alt_email": {alt}}}).
			expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	}
	id := func() string {
		return fmt.Sprintf("/api/contacts/details?contact_id=%d", contactID(t, acct, "a@example.com"))
	}
	add("alt@example.com")
	if r := a.do(req{method: "GET", path: id(), acct: &acct}); !strings.Contains(r.body, `"alt_email":"alt@example.com"`) {
		t.Fatal(r.body)
	}
	add("")
	if r := a.do(req{method: "GET", path: id(), acct: &acct}); !strings.Contains(r.body, `"alt_email":null`) {
		t.Fatal(r.body)
	}
}

func TestContactCustomFieldTwice(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	seedField(t, acct, "Score", "number")
	a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: jsonBody(fmt.Sprintf(
		`{"contact_type_id":%d,"email":"a@example.com","country":276,"custom_field":{"score":"3","SCORE":"4"}}`, typ))}).
		expect(t, 422, `{"status":"failed","errors":{"custom_field.score":["The custom field Score was sent more than once."]}}`)
}
