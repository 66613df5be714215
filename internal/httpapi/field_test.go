package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/testdb"
)

func TestReservedFields(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	r := a.do(req{method: "GET", path: "/api/reserve-fields", acct: &acct})
	if r.code != 200 {
		t.Fatalf("got %d %s", r.code, r.body)
	}
	golden(t, "reserve_fields", r.body)
	a.do(req{method: "GET", path: "/api/reserve-fields?page=3&per_page=5", acct: &acct}).expect(t, 200,
		`{"status":"success","message":{"reservedFields":[{"id":11,"user_id":null,"field_name":"postal_code","field_type":"text","is_reserved":1,"created_at":null,"updated_at":null}],`+
			`"pagination":{"page":3,"per_page":5,"total":11}}}`)
}

// customValues returns a contact's custom jsonb as text.
func customValues(t *testing.T, id int64) string {
	t.Helper()
	var s string
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT custom::text FROM contacts WHERE id = $1", id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCustomFields(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	list := req{method: "GET", path: "/api/custom-fields", acct: &acct}
	a.do(list).expect(t, 200, `{"status":"success","message":{"customFields":[]}}`)

	save := func(body any) response {
		return a.do(req{method: "POST", path: "/api/custom-fields/save", acct: &acct, body: body})
	}
	save(multipartBody{"field_name": "score", "field_type": "number"}).expect(t, 200, addedOK)
	save(url.Values{"field_name": {" Birthday "}, "field_type": {"datetime-local"}}).expect(t, 200, addedOK)
	save(jsonBody(`{"field_name":"notes","field_type":"text"}`)).expect(t, 200, addedOK)
	ids := listIDs(t, a.do(list), "customFields")
	if len(ids) != 3 || ids[0] <= 11 || ids[0] >= ids[1] || ids[1] >= ids[2] {
		t.Fatalf("ids %v", ids)
	}
	row := func(id int64, name, typ string) string {
		return fmt.Sprintf(`{"id":%d,"user_id":%d,"field_name":%q,"field_type":%q,"is_reserved":0,"created_at":"<timestamp>","updated_at":"<timestamp>"}`,
			id, acct.id, name, typ)
	}
	a.do(list).expectNormalized(t, 200, `{"status":"success","message":{"customFields":[`+
		row(ids[0], "score", "number")+","+row(ids[1], "Birthday", "datetime-local")+","+row(ids[2], "notes", "text")+`]}}`)

	// A name the account has, in any case and any encoding, is taken.
	const taken = `{"status":"failed","errors":{"field_name":["The field name has already been taken."]}}`
	save(multipartBody{"field_name": "SCORE", "field_type": "text"}).expect(t, 422, taken)
	save(url.Values{"field_name": {"birthday"}, "field_type": {"number"}}).expect(t, 422, taken)
	save(jsonBody(`{"field_name":"Notes","field_type":"text"}`)).expect(t, 422, taken)

	// Deleting a field drops its key from the account's contacts, deleted
	// ones included, and from nobody else's.
	other := a.account()
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: url.Values{"name": {"All"}}}).expect(t, 200, addedOK)
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &other, body: url.Values{"name": {"All"}}}).expect(t, 200, addedOK)
	typeID := listIDs(t, a.do(req{method: "GET", path: "/api/contacts-type", acct: &acct}), "contactTypes")[0]
	otherType := listIDs(t, a.do(req{method: "GET", path: "/api/contacts-type", acct: &other}), "contactTypes")[0]
	both := sqlContact(t, acct.id, typeID, "a@example.com", `{"score": 30, "notes": "x"}`, false)
	notes := sqlContact(t, acct.id, typeID, "b@example.com", `{"notes": "y"}`, false)
	deleted := sqlContact(t, acct.id, typeID, "c@example.com", `{"score": 1}`, true)
	theirs := sqlContact(t, other.id, otherType, "a@example.com", `{"score": 5}`, false)

	del := req{method: "DELETE", path: fmt.Sprintf("/api/custom-fields/delete?id=%d", ids[0]), acct: &acct}
	a.do(del).expect(t, 200, deletedOK)
	for id, want := range map[int64]string{both: `{"notes": "x"}`, notes: `{"notes": "y"}`, deleted: `{"score": 1}`, theirs: `{"score": 5}`} {
		if got := customValues(t, id); got != want {
			t.Errorf("contact %d: custom %s, want %s", id, got, want)
		}
	}
	a.do(del).expect(t, 404, notFound)
	a.do(list).expectNormalized(t, 200, `{"status":"success","message":{"customFields":[`+
		row(ids[1], "Birthday", "datetime-local")+","+row(ids[2], "notes", "text")+`]}}`)

	// The name is free again.
	save(url.Values{"field_name": {"Score"}, "field_type": {"text"}}).expect(t, 200, addedOK)

	// Paging.
	a.do(req{method: "GET", path: "/api/custom-fields?page=2&per_page=2", acct: &acct}).expectNormalized(t, 200,
		fmt.Sprintf(`{"status":"success","message":{"customFields":[%s],"pagination":{"page":2,"per_page":2,"total":3}}}`,
			row(listIDs(t, a.do(list), "customFields")[2], "Score", "text")))
}

func TestCustomFieldValidation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	invalid := func(fields string) string { return `{"status":"failed","errors":{` + fields + `}}` }
	const typeInvalid = `"field_type":["The selected field type is invalid."]`
	tests := []struct {
		name string
		body any
		want string
	}{
		{"nothing", nil, invalid(`"field_name":["The field name field is required."],"field_type":["The field type field is required."]`)},
		{"empty", multipartBody{"field_name": "", "field_type": ""},
			invalid(`"field_name":["The field name field is required."],"field_type":["The field type field is required."]`)},
		{"no type", url.Values{"field_name": {"score"}}, invalid(`"field_type":["The field type field is required."]`)},
		{"no name", jsonBody(`{"field_type":"text"}`), invalid(`"field_name":["The field name field is required."]`)},
		{"space in name", url.Values{"field_name": {"first name"}, "field_type": {"text"}},
			invalid(`"field_name":["The field name may only contain letters, numbers, and underscores."]`)},
		{"dash in name", jsonBody(`{"field_name":"zip-code","field_type":"text"}`),
			invalid(`"field_name":["The field name may only contain letters, numbers, and underscores."]`)},
		{"reserved name", multipartBody{"field_name": "EMAIL", "field_type": "text"},
			invalid(`"field_name":["The field name may not be a reserved field name."]`)},
		{"dynamic content name", url.Values{"field_name": {"full_name"}, "field_type": {"text"}},
			invalid(`"field_name":["The field name may not be a dynamic content name."]`)},
		{"long name", url.Values{"field_name": {strings.Repeat("a", 65)}, "field_type": {"text"}},
			invalid(`"field_name":["The field name may not be greater than 64 characters."]`)},
		{"unknown type", url.Values{"field_name": {"score"}, "field_type": {"date"}}, invalid(typeInvalid)},
		{"type in capitals", jsonBody(`{"field_name":"score","field_type":"TEXT"}`), invalid(typeInvalid)},
		{"both bad", url.Values{"field_name": {"a b"}, "field_type": {"bool"}},
			invalid(`"field_name":["The field name may only contain letters, numbers, and underscores."],` + typeInvalid)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.do(req{method: "POST", path: "/api/custom-fields/save", acct: &acct, body: tt.body}).expect(t, 422, tt.want)
		})
	}
	for path, want := range map[string]string{
		"/api/custom-fields/delete":             invalid(`"id":["The id field is required."]`),
		"/api/custom-fields/delete?id=abc":      invalid(`"id":["The id must be an integer."]`),
		"/api/custom-fields/delete?id=-4":       invalid(`"id":["The id must be an integer."]`),
		"/api/custom-fields?page=0":             invalid(`"page":["The page must be at least 1."]`),
		"/api/reserve-fields?per_page=1001":     invalid(`"per_page":["The per page may not be greater than 1000."]`),
		"/api/contacts-type?page=x&per_page=-1": invalid(`"page":["The page must be an integer."],"per_page":["The per page must be at least 1."]`),
	} {
		method := "GET"
		if strings.Contains(path, "delete") {
			method = "DELETE"
		}
		a.do(req{method: method, path: path, acct: &acct}).expect(t, 422, want)
	}
	a.do(req{method: "DELETE", path: "/api/custom-fields/delete?id=999999999", acct: &acct}).expect(t, 404, notFound)
	a.do(req{method: "GET", path: "/api/custom-fields", acct: &acct}).expect(t, 200, `{"status":"success","message":{"customFields":[]}}`)
}

func TestCustomFieldsAreTheAccounts(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acctA, acctB := a.account(), a.account()
	a.do(req{method: "POST", path: "/api/custom-fields/save", acct: &acctA,
		body: url.Values{"field_name": {"score"}, "field_type": {"number"}}}).expect(t, 200, addedOK)
	idA := listIDs(t, a.do(req{method: "GET", path: "/api/custom-fields", acct: &acctA}), "customFields")[0]

	a.do(req{method: "GET", path: "/api/custom-fields", acct: &acctB}).expect(t, 200, `{"status":"success","message":{"customFields":[]}}`)
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/custom-fields/delete?id=%d", idA), acct: &acctB}).expect(t, 404, notFound)
	// B may take A's name: names are unique per account.
	a.do(req{method: "POST", path: "/api/custom-fields/save", acct: &acctB,
		body: url.Values{"field_name": {"score"}, "field_type": {"text"}}}).expect(t, 200, addedOK)
	idB := listIDs(t, a.do(req{method: "GET", path: "/api/custom-fields", acct: &acctB}), "customFields")[0]

	a.do(req{method: "GET", path: "/api/custom-fields", acct: &acctA}).expectNormalized(t, 200, fmt.Sprintf(
		`{"status":"success","message":{"customFields":[{"id":%d,"user_id":%d,"field_name":"score","field_type":"number","is_reserved":0,"created_at":"<timestamp>","updated_at":"<timestamp>"}]}}`,
		idA, acctA.id))
	a.do(req{method: "GET", path: "/api/custom-fields", acct: &acctB}).expectNormalized(t, 200, fmt.Sprintf(
		`{"status":"success","message":{"customFields":[{"id":%d,"user_id":%d,"field_name":"score","field_type":"text","is_reserved":0,"created_at":"<timestamp>","updated_at":"<timestamp>"}]}}`,
		idB, acctB.id))
}

// The six dynamic-content names read from a custom field may be custom
// field names (creating one gives the placeholder a value); reserved names
// and the names the renderer computes may not, in any case.
func TestCustomFieldDynamicContentNames(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	save := func(name string) response {
		return a.do(req{method: "POST", path: "/api/custom-fields/save", acct: &acct,
			body: url.Values{"field_name": {name}, "field_type": {"text"}}})
	}
	allowed := []string{"father_name", "Designation", "AGE", "company_name", "birth_date", "Join_Date"}
	for _, name := range allowed {
		save(name).expect(t, 200, addedOK)
	}
	save("age").expect(t, 422, `{"status":"failed","errors":{"field_name":["The field name has already been taken."]}}`)
	var names []string
	r := a.do(req{method: "GET", path: "/api/custom-fields", acct: &acct})
	var got struct {
		Message struct {
			CustomFields []struct {
				FieldName string `json:"field_name"`
			}
		}
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	for _, f := range got.Message.CustomFields {
		names = append(names, f.FieldName)
	}
	if strings.Join(names, " ") != strings.Join(allowed, " ") {
		t.Fatalf("fields %v", names)
	}
	for _, name := range []string{"full_name", "Full_Name", "SENDER_NAME", "sender_address", "Unsubscribe_Preferences"} {
		save(name).expect(t, 422, `{"status":"failed","errors":{"field_name":["The field name may not be a dynamic content name."]}}`)
	}
	for _, name := range []string{"email", "First_Name", "ALT_EMAIL", "Country", "state_province_region", "POSTAL_CODE"} {
		save(name).expect(t, 422, `{"status":"failed","errors":{"field_name":["The field name may not be a reserved field name."]}}`)
	}
}

// A custom datetime value must fall in the years 0001-9999, on add and in
// a CSV import, and is stored as YYYY-MM-DDTHH:MM.
func TestCustomDatetimeValueRange(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "All")
	seedField(t, acct, "joined", "datetime-local")
	add := func(v string) response {
		return a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
			"contact_type_id": {fmt.Sprint(typ)}, "email": {"a@example.com"}, "country": {"276"}, "custom_field[joined]": {v}}})
	}
	const outOfRange = `{"status":"failed","errors":{"custom_field.joined":["The joined must be a date and time from year 0001 to 9999."]}}`
	add("0000-01-01T00:00").expect(t, 422, outOfRange)
	add("0000-12-31T23:59").expect(t, 422, outOfRange)
	add("2023-02-31T00:00").expect(t, 422, `{"status":"failed","errors":{"custom_field.joined":["The joined must be a date and time as YYYY-MM-DDTHH:MM."]}}`)
	upload(a, acct, typ, "email,joined\nb@example.com,0000-01-01T00:00\n").
		expect(t, 422, `{"status":"failed","errors":{"file":["Line 2: The joined must be a date and time from year 0001 to 9999."]}}`)

	add("0001-01-01T00:00").expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	if got := customValues(t, contactID(t, acct, "a@example.com")); got != `{"joined": "0001-01-01T00:00"}` {
		t.Fatalf("stored %s", got)
	}
	add("9999-12-31T9:05").expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	if got := customValues(t, contactID(t, acct, "a@example.com")); got != `{"joined": "9999-12-31T09:05"}` {
		t.Fatalf("stored %s", got)
	}
	upload(a, acct, typ, "email,joined\nb@example.com,2024-02-29T7:30\n").expect(t, 200, imported)
	if got := customValues(t, contactID(t, acct, "b@example.com")); got != `{"joined": "2024-02-29T07:30"}` {
		t.Fatalf("imported %s", got)
	}
}
