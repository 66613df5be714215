package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/testdb"
)

// expectNormalized asserts the status and the body with its timestamps
// normalized.
func (r response) expectNormalized(t *testing.T, code int, body string) {
	t.Helper()
	if r.code != code || normalize(r.body) != body {
		t.Fatalf("got %d %s\nwant %d %s", r.code, normalize(r.body), code, body)
	}
}

// listIDs returns the ids of the records in message[key] of a success body.
func listIDs(t *testing.T, r response, key string) []int64 {
	t.Helper()
	var got struct {
		Message map[string][]struct{ ID int64 }
	}
	if r.code != 200 {
		t.Fatalf("got %d %s", r.code, r.body)
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	ids := make([]int64, len(got.Message[key]))
	for i, x := range got.Message[key] {
		ids[i] = x.ID
	}
	return ids
}

// sqlContact inserts a contact directly (the contact endpoints live
// elsewhere) and returns its id; custom is its custom jsonb. The account's
// kept counts are rebuilt after, as for any row written around storage.
func sqlContact(t *testing.T, userID, typeID int64, email, custom string, deleted bool) int64 {
	t.Helper()
	var id int64
	d := testdb.New(t)
	err := d.Pool.QueryRow(context.Background(),
		`INSERT INTO contacts (user_id, contact_type_id, email, custom, deleted_at)
		 VALUES ($1, $2, $3, $4::jsonb, CASE WHEN $5::bool THEN now() END) RETURNING id`,
		userID, typeID, email, custom, deleted).Scan(&id)
	if err == nil {
		err = d.Recount(context.Background(), userID)
	}
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// contactDeleted reports whether the contact is soft-deleted.
func contactDeleted(t *testing.T, id int64) bool {
	t.Helper()
	var deleted bool
	if err := testdb.New(t).Pool.QueryRow(context.Background(),
		"SELECT deleted_at IS NOT NULL FROM contacts WHERE id = $1", id).Scan(&deleted); err != nil {
		t.Fatal(err)
	}
	return deleted
}

const (
	addedOK   = `{"status":"success","message":"Added Successfully"}`
	updatedOK = `{"status":"success","message":"Updated Successfully"}`
	deletedOK = `{"status":"success","message":"Deleted Successfully"}`
	notFound  = `{"status":"failed","errors":"Record Not Found"}`
)

func TestContactTypes(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	list := req{method: "GET", path: "/api/contacts-type", acct: &acct}
	a.do(list).expect(t, 200, `{"status":"success","message":{"contactTypes":[]}}`)

	// Every encoding adds; names are trimmed.
	for _, body := range []any{
		multipartBody{"name": "Customers"},
		url.Values{"name": {"Leads"}},
		jsonBody(`{"name":"  VIPs  "}`),
	} {
		a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: body}).expect(t, 200, addedOK)
	}
	ids := listIDs(t, a.do(list), "contactTypes")
	if len(ids) != 3 || ids[0] >= ids[1] || ids[1] >= ids[2] {
		t.Fatalf("ids %v", ids)
	}

	// contacts_count counts live contacts of the type only.
	sqlContact(t, acct.id, ids[0], "a@example.com", "{}", false)
	sqlContact(t, acct.id, ids[0], "b@example.com", "{}", false)
	sqlContact(t, acct.id, ids[0], "c@example.com", "{}", true)
	sqlContact(t, acct.id, ids[2], "a@example.com", "{}", false)
	row := func(id int64, name string, count int) string {
		return fmt.Sprintf(`{"id":%d,"user_id":%d,"name":%q,"deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>","contacts_count":%d}`,
			id, acct.id, name, count)
	}
	a.do(list).expectNormalized(t, 200, `{"status":"success","message":{"contactTypes":[`+
		row(ids[0], "Customers", 2)+","+row(ids[1], "Leads", 0)+","+row(ids[2], "VIPs", 1)+`]}}`)

	// Paged: the page's rows and the total.
	a.do(req{method: "GET", path: "/api/contacts-type?page=2&per_page=2", acct: &acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"contactTypes":[`+row(ids[2], "VIPs", 1)+`],"pagination":{"page":2,"per_page":2,"total":3}}}`)
	a.do(req{method: "GET", path: "/api/contacts-type?page=3&per_page=2", acct: &acct}).expect(t, 200,
		`{"status":"success","message":{"contactTypes":[],"pagination":{"page":3,"per_page":2,"total":3}}}`)

	view := func(id int64) req {
		return req{method: "GET", path: fmt.Sprintf("/api/contacts-type/view?contact_type_id=%d", id), acct: &acct}
	}
	viewBody := func(id int64, name string) string {
		return fmt.Sprintf(`{"status":"success","message":{"contactType":{"id":%d,"user_id":%d,"name":%q,"deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>"}}}`,
			id, acct.id, name)
	}
	before := a.do(view(ids[1]))
	before.expectNormalized(t, 200, viewBody(ids[1], "Leads"))

	// Every encoding updates; updated_at moves, created_at stays.
	for i, body := range []any{
		multipartBody{"id": fmt.Sprint(ids[1]), "name": "Prospects"},
		url.Values{"id": {fmt.Sprint(ids[1])}, "name": {"Prospects 2"}},
		jsonBody(fmt.Sprintf(`{"id":%d,"name":" Prospects 3 "}`, ids[1])),
	} {
		a.do(req{method: "POST", path: "/api/contacts-type/update", acct: &acct, body: body}).expect(t, 200, updatedOK)
		want := []string{"Prospects", "Prospects 2", "Prospects 3"}[i]
		a.do(view(ids[1])).expectNormalized(t, 200, viewBody(ids[1], want))
	}
	b, after := times(t, before), times(t, a.do(view(ids[1])))
	if after.CreatedAt != b.CreatedAt || !after.UpdatedAt.After(b.UpdatedAt) {
		t.Fatalf("before %+v, after %+v", b, after)
	}

	// Delete answers under "errors"; the type is gone everywhere after.
	del := req{method: "DELETE", path: fmt.Sprintf("/api/contacts-type/delete?contact_type_id=%d", ids[1]), acct: &acct}
	a.do(del).expect(t, 200, `{"status":"success","errors":"Deleted Successfully"}`)
	a.do(del).expect(t, 404, notFound)
	a.do(view(ids[1])).expect(t, 404, notFound)
	a.do(req{method: "POST", path: "/api/contacts-type/update", acct: &acct,
		body: url.Values{"id": {fmt.Sprint(ids[1])}, "name": {"Back"}}}).expect(t, 404, notFound)
	a.do(list).expectNormalized(t, 200, `{"status":"success","message":{"contactTypes":[`+
		row(ids[0], "Customers", 2)+","+row(ids[2], "VIPs", 1)+`]}}`)
}

type stamps struct {
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// times reads a contact type view's timestamps.
func times(t *testing.T, r response) stamps {
	t.Helper()
	var v struct {
		Message struct{ ContactType stamps }
	}
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatal(err)
	}
	return v.Message.ContactType
}

func TestContactTypeValidation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: url.Values{"name": {"Existing"}}}).expect(t, 200, addedOK)
	id := listIDs(t, a.do(req{method: "GET", path: "/api/contacts-type", acct: &acct}), "contactTypes")[0]
	const (
		required = `{"status":"failed","errors":{"name":["The name field is required."]}}`
		short    = `{"status":"failed","errors":{"name":["The name must be at least 2 characters."]}}`
		long     = `{"status":"failed","errors":{"name":["The name may not be greater than 255 characters."]}}`
	)
	sid := fmt.Sprint(id)
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		code   int
		want   string
	}{
		{"add without name", "POST", "/api/contacts-type/add", nil, 422, required},
		{"add empty name", "POST", "/api/contacts-type/add", multipartBody{"name": ""}, 422, required},
		{"add blank name", "POST", "/api/contacts-type/add", url.Values{"name": {"   "}}, 422, required},
		{"add null name", "POST", "/api/contacts-type/add", jsonBody(`{"name":null}`), 422, required},
		{"add one character", "POST", "/api/contacts-type/add", url.Values{"name": {"a"}}, 422, short},
		{"add one character padded", "POST", "/api/contacts-type/add", jsonBody(`{"name":" a "}`), 422, short},
		{"add one rune of two bytes", "POST", "/api/contacts-type/add", multipartBody{"name": "é"}, 422, short},
		{"add too long", "POST", "/api/contacts-type/add", url.Values{"name": {strings.Repeat("x", 256)}}, 422, long},
		{"add bad json", "POST", "/api/contacts-type/add", jsonBody(`{"name":`), 422,
			`{"status":"failed","errors":{"body":["The request body is not valid JSON."]}}`},

		{"view without id", "GET", "/api/contacts-type/view", nil, 422,
			`{"status":"failed","errors":{"contact_type_id":["The contact type id field is required."]}}`},
		{"view non-numeric id", "GET", "/api/contacts-type/view?contact_type_id=abc", nil, 422,
			`{"status":"failed","errors":{"contact_type_id":["The contact type id must be an integer."]}}`},
		{"view zero id", "GET", "/api/contacts-type/view?contact_type_id=0", nil, 422,
			`{"status":"failed","errors":{"contact_type_id":["The contact type id must be an integer."]}}`},
		{"view unknown id", "GET", "/api/contacts-type/view?contact_type_id=999999999", nil, 404, notFound},

		{"update without anything", "POST", "/api/contacts-type/update", url.Values{}, 422,
			`{"status":"failed","errors":{"id":["The id field is required."],"name":["The name field is required."]}}`},
		{"update without id", "POST", "/api/contacts-type/update", multipartBody{"name": "Fine"}, 422,
			`{"status":"failed","errors":{"id":["The id field is required."]}}`},
		{"update non-numeric id", "POST", "/api/contacts-type/update", jsonBody(`{"id":"x","name":"a"}`), 422,
			`{"status":"failed","errors":{"id":["The id must be an integer."],"name":["The name must be at least 2 characters."]}}`},
		{"update without name", "POST", "/api/contacts-type/update", url.Values{"id": {sid}}, 422, required},
		{"update short name", "POST", "/api/contacts-type/update", jsonBody(`{"id":` + sid + `,"name":"z"}`), 422, short},
		{"update unknown id", "POST", "/api/contacts-type/update", url.Values{"id": {"999999999"}, "name": {"Fine"}}, 404, notFound},

		{"delete without id", "DELETE", "/api/contacts-type/delete", nil, 422,
			`{"status":"failed","errors":{"contact_type_id":["The contact type id field is required."]}}`},
		{"delete non-numeric id", "DELETE", "/api/contacts-type/delete?contact_type_id=1x", nil, 422,
			`{"status":"failed","errors":{"contact_type_id":["The contact type id must be an integer."]}}`},
		{"delete unknown id", "DELETE", "/api/contacts-type/delete?contact_type_id=999999999", nil, 404, notFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.do(req{method: tt.method, path: tt.path, acct: &acct, body: tt.body}).expect(t, tt.code, tt.want)
		})
	}
	// Nothing above changed the account's one type.
	a.do(req{method: "GET", path: "/api/contacts-type/view?contact_type_id=" + sid, acct: &acct}).expectNormalized(t, 200,
		fmt.Sprintf(`{"status":"success","message":{"contactType":{"id":%d,"user_id":%d,"name":"Existing","deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>"}}}`, id, acct.id))
}

func TestContactTypesAreTheAccounts(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acctA, acctB := a.account(), a.account()
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acctA, body: url.Values{"name": {"Mine"}}}).expect(t, 200, addedOK)
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acctB, body: url.Values{"name": {"Theirs"}}}).expect(t, 200, addedOK)
	idA := listIDs(t, a.do(req{method: "GET", path: "/api/contacts-type", acct: &acctA}), "contactTypes")
	idB := listIDs(t, a.do(req{method: "GET", path: "/api/contacts-type", acct: &acctB}), "contactTypes")
	if len(idA) != 1 || len(idB) != 1 || idA[0] == idB[0] {
		t.Fatalf("A %v, B %v", idA, idB)
	}
	contact := sqlContact(t, acctA.id, idA[0], "a@example.com", "{}", false)
	sid := fmt.Sprint(idA[0])

	a.do(req{method: "GET", path: "/api/contacts-type/view?contact_type_id=" + sid, acct: &acctB}).expect(t, 404, notFound)
	a.do(req{method: "POST", path: "/api/contacts-type/update", acct: &acctB,
		body: url.Values{"id": {sid}, "name": {"Stolen"}}}).expect(t, 404, notFound)
	a.do(req{method: "DELETE", path: "/api/contacts-type/delete?contact_type_id=" + sid, acct: &acctB}).expect(t, 404, notFound)

	a.do(req{method: "GET", path: "/api/contacts-type", acct: &acctB}).expectNormalized(t, 200, fmt.Sprintf(
		`{"status":"success","message":{"contactTypes":[{"id":%d,"user_id":%d,"name":"Theirs","deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>","contacts_count":0}]}}`,
		idB[0], acctB.id))
	a.do(req{method: "GET", path: "/api/contacts-type", acct: &acctA}).expectNormalized(t, 200, fmt.Sprintf(
		`{"status":"success","message":{"contactTypes":[{"id":%d,"user_id":%d,"name":"Mine","deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>","contacts_count":1}]}}`,
		idA[0], acctA.id))
	if contactDeleted(t, contact) {
		t.Fatal("B's delete reached A's contact")
	}
}

func TestDeleteContactTypeDeletesItsContacts(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	for _, name := range []string{"Gone", "Kept"} {
		a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: url.Values{"name": {name}}}).expect(t, 200, addedOK)
	}
	ids := listIDs(t, a.do(req{method: "GET", path: "/api/contacts-type", acct: &acct}), "contactTypes")
	gone := []int64{
		sqlContact(t, acct.id, ids[0], "a@example.com", "{}", false),
		sqlContact(t, acct.id, ids[0], "b@example.com", "{}", false),
	}
	kept := sqlContact(t, acct.id, ids[1], "a@example.com", "{}", false)

	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/contacts-type/delete?contact_type_id=%d", ids[0]), acct: &acct}).
		expect(t, 200, `{"status":"success","errors":"Deleted Successfully"}`)
	for _, id := range gone {
		if !contactDeleted(t, id) {
			t.Errorf("contact %d of the deleted type is live", id)
		}
	}
	if contactDeleted(t, kept) {
		t.Error("a contact of another type was deleted")
	}
	a.do(req{method: "GET", path: "/api/contacts-type", acct: &acct}).expectNormalized(t, 200, fmt.Sprintf(
		`{"status":"success","message":{"contactTypes":[{"id":%d,"user_id":%d,"name":"Kept","deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>","contacts_count":1}]}}`,
		ids[1], acct.id))

}

// A contact inserted into a type by a transaction still open when the type
// is deleted is deleted with it: the delete waits for that transaction.
func TestDeleteContactTypeWaitsForInsert(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: url.Values{"name": {"Busy"}}}).expect(t, 200, addedOK)
	typeID := listIDs(t, a.do(req{method: "GET", path: "/api/contacts-type", acct: &acct}), "contactTypes")[0]

	ctx := context.Background()
	pool := testdb.New(t).Pool
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var inserter int32
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&inserter); err != nil {
		t.Fatal(err)
	}
	// A contact writer: it locks its type FOR SHARE, as every writer in
	// internal/postgres does, then inserts.
	var contact int64
	if err := tx.QueryRow(ctx, `INSERT INTO contacts (user_id, contact_type_id, email)
		SELECT user_id, id, 'late@example.com' FROM contact_types WHERE id = $2 AND user_id = $1 FOR SHARE RETURNING id`,
		acct.id, typeID).Scan(&contact); err != nil {
		t.Fatal(err)
	}

	done := make(chan response, 1)
	go func() {
		done <- a.do(req{method: "DELETE", path: fmt.Sprintf("/api/contacts-type/delete?contact_type_id=%d", typeID), acct: &acct})
	}()
	// The delete must block on the insert's transaction; one that finishes
	// first has not waited, which is the failure.
	waitBlocked(t, inserter, "%name: DeleteContactType %", done)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	(<-done).expect(t, 200, `{"status":"success","errors":"Deleted Successfully"}`)
	if !contactDeleted(t, contact) {
		t.Fatal("the contact inserted during the delete is live")
	}
}
