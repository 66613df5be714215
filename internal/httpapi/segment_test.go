package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/testdb"
)

// segmentFixture is an account with a contact type of varied contacts.
type segmentFixture struct {
	a                 *api
	acct              account
	typ               int64
	age, joined, plan int64 // custom field ids
}

func newSegmentFixture(t *testing.T) *segmentFixture {
	t.Helper()
	a := newAPI(t)
	f := &segmentFixture{a: a, acct: a.account()}
	f.typ = seedType(t, f.acct, "Everyone")
	f.age = seedField(t, f.acct, "age", "number")
	f.joined = seedField(t, f.acct, "joined", "datetime-local")
	f.plan = seedField(t, f.acct, "plan", "text")
	for _, c := range []url.Values{
		{"email": {"ann@example.com"}, "first_name": {"Ann"}, "last_name": {"Lee"}, "country": {"276"}, "city": {"Berlin"},
			"custom_field[age]": {"34"}, "custom_field[joined]": {"2026-03-10T09:00"}, "custom_field[plan]": {"Gold 100%"}},
		{"email": {"bob@test.org"}, "first_name": {"Bob"}, "last_name": {"O'Neil"}, "country": {"840"}, "city": {""},
			"custom_field[age]": {"51.5"}, "custom_field[joined]": {"2025-12-31T23:59"}, "custom_field[plan]": {"silver_plan"}},
		{"email": {"cy@example.com"}, "first_name": {"Cy"}, "country": {"40"}, "city": {"Wien"}},
		{"email": {"di@sample.net"}, "first_name": {"Di"}, "last_name": {"Lee"}, "country": {"276"}, "city": {"Bonn"},
			"custom_field[age]": {"18"}, "custom_field[joined]": {"2026-03-11T00:00"}, "custom_field[plan]": {`back\slash`}},
	} {
		c.Set("contact_type_id", fmt.Sprint(f.typ))
		a.do(req{method: "POST", path: "/api/contacts/add", acct: &f.acct, body: c}).
			expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	}
	// created_at: ann 40 days ago, bob 3 days ago, cy and di on fixed dates.
	_, err := testdb.New(t).Pool.Exec(context.Background(), `UPDATE contacts SET created_at = CASE email
		WHEN 'ann@example.com' THEN now() - interval '40 days'
		WHEN 'bob@test.org' THEN now() - interval '3 days'
		WHEN 'cy@example.com' THEN '2024-06-15 12:00:00+00'
		ELSE '2024-06-16 08:00:00+00' END WHERE user_id = $1`, f.acct.id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// save creates a segment and returns its id.
func (f *segmentFixture) save(t *testing.T, body any) int64 {
	t.Helper()
	return saveSegment(t, f.a, f.acct, body)
}

// members lists a segment's recipients' addresses, sorted.
func (f *segmentFixture) members(t *testing.T, segment int64) []string {
	t.Helper()
	r := f.a.do(req{method: "GET", path: fmt.Sprintf("/api/segment/email/list?segment_id=%d", segment), acct: &f.acct})
	var got struct {
		Message struct {
			ContactEmails []struct{ Email string }
		}
	}
	if r.code != 200 || json.Unmarshal([]byte(r.body), &got) != nil {
		t.Fatalf("recipients: %d %s", r.code, r.body)
	}
	out := []string{}
	for _, e := range got.Message.ContactEmails {
		out = append(out, strings.SplitN(e.Email, "@", 2)[0])
	}
	sort.Strings(out)
	return out
}

func cond(typ int64, field any, op string, values ...string) url.Values {
	v := url.Values{"contact_type_id": {fmt.Sprint(typ)}, "segment_name": {"s"},
		"select_field[0]": {fmt.Sprint(field)}, "select_operator[0]": {op}}
	switch len(values) {
	case 1:
		v.Set("value[0]", values[0])
	case 2:
		v.Set("value[0][0]", values[0])
		v.Set("value[0][1]", values[1])
	}
	return v
}

// Every operator on every kind of field, including custom fields.
func TestSegmentOperators(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	tests := []struct {
		name  string
		field any
		op    string
		vals  []string
		want  string
	}{
		{"email is (any case)", 1, "is", []string{"ANN@example.com"}, "ann"},
		{"email is not", 1, "is not", []string{"ann@example.com"}, "bob cy di"},
		{"email contains", 1, "contains", []string{"example"}, "ann cy"},
		{"email does not contain", 1, "does not contain", []string{"example"}, "bob di"},
		{"email starts with", 1, "starts with", []string{"B"}, "bob"},
		{"email ends with", 1, "ends with", []string{".net"}, "di"},
		{"last name is empty", 3, "is empty", nil, "cy"},
		{"last name is not empty", 3, "is not empty", nil, "ann bob di"},
		{"last name with a quote", 3, "is", []string{"o'neil"}, "bob"},
		{"city is empty", 7, "is empty", nil, "bob"},
		{"alt email is empty", 4, "is empty", nil, "ann bob cy di"},
		{"country is by id", 5, "is", []string{"276"}, "ann di"},
		{"country is by code", 5, "is", []string{"us"}, "bob"},
		{"country is by name", 5, "is", []string{"Austria"}, "cy"},
		{"country is not", 5, "is not", []string{"DE"}, "bob cy"},
		{"country contains (name)", 5, "contains", []string{"states"}, "bob"},
		{"number is", f.age, "is", []string{"34"}, "ann"},
		{"number is not (absent counts)", f.age, "is not", []string{"34"}, "bob cy di"},
		{"number greater (decimal)", f.age, "is greater than", []string{"51"}, "bob"},
		{"number less", f.age, "is less than", []string{"34"}, "di"},
		{"number between", f.age, "is between", []string{"18", "34"}, "ann di"},
		{"number between reversed", f.age, "is between", []string{"34", "18"}, "ann di"},
		{"number is empty", f.age, "is empty", nil, "cy"},
		{"number is not empty", f.age, "is not empty", nil, "ann bob di"},
		{"datetime is (a day)", f.joined, "is", []string{"2026-03-10"}, "ann"},
		{"datetime is (a minute)", f.joined, "is", []string{"2025-12-31T23:59"}, "bob"},
		{"datetime is not", f.joined, "is not", []string{"2026-03-10"}, "bob cy di"},
		{"datetime before", f.joined, "is before", []string{"2026-01-01"}, "bob"},
		{"datetime after (a day)", f.joined, "is after", []string{"2026-03-10"}, "di"},
		{"datetime after (a time)", f.joined, "is after", []string{"2026-03-10T08:59"}, "ann di"},
		{"datetime between (days, inclusive)", f.joined, "is between", []string{"2025-12-31", "2026-03-10"}, "ann bob"},
		{"datetime is empty", f.joined, "is empty", nil, "cy"},
		{"text custom is", f.plan, "is", []string{"GOLD 100%"}, "ann"},
		{"text custom contains %", f.plan, "contains", []string{"%"}, "ann"},
		{"text custom contains _ (no wildcard)", f.plan, "contains", []string{"_"}, "bob"},
		{"text custom starts with _ (literal)", f.plan, "starts with", []string{"_"}, ""},
		{"text custom contains backslash", f.plan, "contains", []string{`\`}, "di"},
		{"text custom does not contain", f.plan, "does not contain", []string{"plan"}, "ann cy di"},
		{"text custom ends with", f.plan, "ends with", []string{"PLAN"}, "bob"},
		{"text custom is empty", f.plan, "is empty", nil, "cy"},
		{"created_at within the last", 0, "is within the last", []string{"7"}, "bob"},
		{"created_at within the last 60", 0, "is within the last", []string{"60"}, "ann bob"},
		{"created_at before", 0, "is before", []string{"2024-06-16"}, "cy"},
		{"created_at is (a day)", 0, "is", []string{"2024-06-16"}, "di"},
		{"created_at between", 0, "is between", []string{"2024-06-01", "2024-06-30"}, "cy di"},
		{"created_at after", 0, "is after", []string{"2024-06-16"}, "ann bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := f.save(t, cond(f.typ, tt.field, tt.op, tt.vals...))
			if got := strings.Join(f.members(t, id), " "); got != tt.want {
				t.Errorf("%v %s %q: got %q, want %q", tt.field, tt.op, tt.vals, got, tt.want)
			}
		})
	}
}

// and / or, and the three ways to send a between.
func TestSegmentCombinations(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	and := f.save(t, jsonBody(fmt.Sprintf(`{"contact_type_id":%d,"segment_name":"and","select_field":["5","%d"],
		"select_operator":["is","is between"],"value":["DE",["30","40"]]}`, f.typ, f.age)))
	if got := f.members(t, and); strings.Join(got, " ") != "ann" {
		t.Errorf("and: %v", got)
	}
	or := f.save(t, url.Values{"contact_type_id": {fmt.Sprint(f.typ)}, "segment_name": {"or"}, "query_type": {"or"},
		"select_field[]": {"7", fmt.Sprint(f.age)}, "select_operator[]": {"is", "is between"}, "value[]": {"wien", "50,60"}})
	if got := f.members(t, or); strings.Join(got, " ") != "bob cy" {
		t.Errorf("or: %v", got)
	}
	mp := f.save(t, multipartBody{"contact_type_id": fmt.Sprint(f.typ), "segment_name": "mp", "select_field[0]": "3",
		"select_operator[0]": "is empty", "select_field[1]": "2", "select_operator[1]": "starts with", "value[1]": "c"})
	if got := f.members(t, mp); strings.Join(got, " ") != "cy" {
		t.Errorf("multipart: %v", got)
	}
	r := f.a.do(req{method: "GET", path: fmt.Sprintf("/api/segment/details?segment_id=%d", or), acct: &f.acct})
	want := withIDs(`{"status":"success","message":{"segment":{"id":<id>,"user_id":<id>,"contact_type_id":<id>,"segment_name":"or",`+
		`"select_field":["7","<id>"],"select_operator":["is","is between"],"value":["wien","50","60"],"query_type":"or",`+
		`"deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>"}}}`, or, f.acct.id, f.typ, f.age)
	if got := normalize(r.body); r.code != 200 || got != want {
		t.Fatalf("details:\n got %s\nwant %s", got, want)
	}
}

// Membership follows contact adds, updates, deletes, imports and moves,
// and custom field deletes.
func TestSegmentMembershipFollowsContacts(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	leeOrYoung := f.save(t, url.Values{"contact_type_id": {fmt.Sprint(f.typ)}, "segment_name": {"lee"}, "query_type": {"or"},
		"select_field[0]": {"3"}, "select_operator[0]": {"is"}, "value[0]": {"lee"},
		"select_field[1]": {fmt.Sprint(f.age)}, "select_operator[1]": {"is less than"}, "value[1]": {"20"}})
	check := func(step, want string) {
		t.Helper()
		if got := strings.Join(f.members(t, leeOrYoung), " "); got != want {
			t.Fatalf("%s: members %q, want %q", step, got, want)
		}
	}
	check("created", "ann di")
	add := func(v url.Values) {
		t.Helper()
		v.Set("contact_type_id", fmt.Sprint(f.typ))
		v.Set("country", "276")
		f.a.do(req{method: "POST", path: "/api/contacts/add", acct: &f.acct, body: v}).
			expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	}
	add(url.Values{"email": {"eve@example.com"}, "last_name": {"LEE"}})
	check("matching contact added", "ann di eve")
	add(url.Values{"email": {"EVE@example.com"}, "last_name": {"Stone"}})
	check("re-add changes the name", "ann di")
	add(url.Values{"email": {"eve@example.com"}, "custom_field[age]": {"12"}})
	check("custom value now matches", "ann di eve")

	eve := contactID(t, f.acct, "eve@example.com")
	other := seedType(t, f.acct, "Elsewhere")
	f.a.do(req{method: "POST", path: "/api/contacts/update", acct: &f.acct, body: url.Values{"contact_id": {fmt.Sprint(eve)},
		"contact_type_id": {fmt.Sprint(other)}, "email": {"eve@example.com"}, "country": {"276"}}}).
		expect(t, 200, `{"status":"success","message":"Contact Updated Successfully"}`)
	check("moved to another type", "ann di")

	ann := contactID(t, f.acct, "ann@example.com")
	f.a.do(req{method: "POST", path: "/api/contacts/update", acct: &f.acct, body: url.Values{"contact_id": {fmt.Sprint(ann)},
		"contact_type_id": {fmt.Sprint(f.typ)}, "email": {"ann@example.com"}, "country": {"276"}, "last_name": {"Park"}}}).
		expect(t, 200, `{"status":"success","message":"Contact Updated Successfully"}`)
	check("updated out", "di")

	upload(f.a, f.acct, f.typ, "email,last_name,age\nann@example.com,Lee,\nnew@example.com,x,5\ndi@sample.net,Smith,30\n").expect(t, 200, imported)
	check("after import", "ann new")

	f.a.do(req{method: "DELETE", path: fmt.Sprintf("/api/contacts/delete?contact_id=%d", ann), acct: &f.acct}).
		expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	check("deleted", "new")

	f.a.do(req{method: "DELETE", path: fmt.Sprintf("/api/custom-fields/delete?id=%d", f.age), acct: &f.acct}).
		expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	check("custom field deleted", "")

	f.a.do(req{method: "DELETE", path: fmt.Sprintf("/api/contacts-type/delete?contact_type_id=%d", f.typ), acct: &f.acct}).
		expect(t, 200, `{"status":"success","errors":"Deleted Successfully"}`)
	var n int
	testdb.New(t).Pool.QueryRow(context.Background(), "SELECT count(*) FROM segment_entries WHERE segment_id = $1", leeOrYoung).Scan(&n)
	if n != 0 {
		t.Fatalf("%d members after the type was deleted", n)
	}
}

func TestSegmentUpdateRebuilds(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	id := f.save(t, cond(f.typ, 7, "is", "berlin"))
	f.a.do(req{method: "POST", path: "/api/segment/email/store", acct: &f.acct, body: url.Values{
		"segment_id": {fmt.Sprint(id)}, "first_name": {"Hand"}, "last_name": {"Made"}, "email": {"hand@example.com"}}}).
		expect(t, 200, `{"status":"success","message":"Added Successfully"}`)
	if got := strings.Join(f.members(t, id), " "); got != "ann hand" {
		t.Fatalf("before: %s", got)
	}
	upd := cond(f.typ, 7, "starts with", "b")
	f.a.do(req{method: "POST", path: fmt.Sprintf("/api/segment/update?segment_id=%d", id), acct: &f.acct, body: upd}).
		expect(t, 200, `{"status":"success","message":"Updated Successfully"}`)
	if got := strings.Join(f.members(t, id), " "); got != "ann di hand" {
		t.Fatalf("after: %s", got)
	}
	f.a.do(req{method: "POST", path: "/api/segment/update?segment_id=999999", acct: &f.acct, body: upd}).
		expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
}

func TestSegmentResources(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	a, acct := f.a, f.acct
	id := f.save(t, cond(f.typ, 2, "is", "Cy"))
	a.do(req{method: "POST", path: "/api/segment/email/store", acct: &acct, body: jsonBody(fmt.Sprintf(
		`{"segment_id":%d,"first_name":"Hand","last_name":"Made","email":"Hand@Example.com"}`, id))}).
		expect(t, 200, `{"status":"success","message":"Added Successfully"}`)

	r := a.do(req{method: "GET", path: "/api/segment/list", acct: &acct})
	want := withIDs(`{"status":"success","message":{"segments":[{"id":<id>,"user_id":<id>,"contact_type_id":<id>,"segment_name":"s",`+
		`"select_field":["2"],"select_operator":["is"],"value":["Cy"],"query_type":null,"deleted_at":null,`+
		`"created_at":"<timestamp>","updated_at":"<timestamp>","segment_emails_count":2}]}}`, id, acct.id, f.typ)
	if got := normalize(r.body); got != want {
		t.Fatalf("list:\n got %s\nwant %s", got, want)
	}

	cy := contactID(t, acct, "cy@example.com")
	var hand int64
	testdb.New(t).Pool.QueryRow(context.Background(), "SELECT id FROM segment_recipients WHERE segment_id = $1", id).Scan(&hand)
	var member int64
	testdb.New(t).Pool.QueryRow(context.Background(), "SELECT id FROM segment_members WHERE segment_id = $1 AND contact_id = $2", id, cy).Scan(&member)
	r = a.do(req{method: "GET", path: fmt.Sprintf("/api/segment/email/list?segment_id=%d", id), acct: &acct})
	want = withIDs(`{"status":"success","message":{"contactEmails":[`+
		`{"id":<id>,"user_id":<id>,"segment_id":<id>,"contact_id":<id>,"first_name":"Cy","last_name":"","email":"cy@example.com","country":"Austria","state":"","city":"Wien","address_line1":"","created_at":"<timestamp>","updated_at":"<timestamp>","fullname":"Cy"},`+
		`{"id":<id>,"user_id":<id>,"segment_id":<id>,"contact_id":null,"first_name":"Hand","last_name":"Made","email":"Hand@Example.com","country":null,"state":null,"city":null,"address_line1":null,"created_at":"<timestamp>","updated_at":"<timestamp>","fullname":"Hand Made"}]}}`,
		member, acct.id, id, cy, hand, acct.id, id)
	if got := normalize(r.body); got != want {
		t.Fatalf("recipients:\n got %s\nwant %s", got, want)
	}
	r = a.do(req{method: "GET", path: fmt.Sprintf("/api/segment/email/list?segment_id=%d&page=2&per_page=1", id), acct: &acct})
	if !strings.Contains(r.body, `"email":"Hand@Example.com"`) || !strings.HasSuffix(r.body, `"pagination":{"page":2,"per_page":1,"total":2}}}`) {
		t.Fatalf("paged recipients: %s", r.body)
	}

	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/segment/email/delete?segment_recipient_id=%d", hand), acct: &acct}).
		expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/segment/email/delete?segment_recipient_id=%d", hand), acct: &acct}).
		expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/segment/delete?segment_id=%d", id), acct: &acct}).
		expect(t, 200, `{"status":"success","errors":"Deleted Successfully"}`)
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/segment/delete?segment_id=%d", id), acct: &acct}).
		expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	a.do(req{method: "GET", path: fmt.Sprintf("/api/segment/email/list?segment_id=%d", id), acct: &acct}).
		expect(t, 404, `{"status":"failed","errors":"Record not found"}`)
	a.do(req{method: "GET", path: fmt.Sprintf("/api/segment/details?segment_id=%d", id), acct: &acct}).
		expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	a.do(req{method: "GET", path: "/api/segment/list", acct: &acct}).expect(t, 200, `{"status":"success","message":{"segments":[]}}`)
}

func TestSegmentValidation(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	other := f.a.account()
	theirType := seedType(t, other, "Theirs")
	theirField := seedField(t, other, "score", "number")
	typ := fmt.Sprint(f.typ)
	tests := []struct {
		name string
		body url.Values
		want string
	}{
		{"nothing", url.Values{}, `{"contact_type_id":["The contact type id field is required."],"segment_name":["The segment name field is required."],"select_field":["The select field field is required."],"select_operator":["The select operator field is required."]}`},
		{"no values", url.Values{"contact_type_id": {typ}, "segment_name": {"x"}, "select_field[0]": {"1"}, "select_operator[0]": {"is"}}, `{"value":["The value field is required."]}`},
		{"unknown field", cond(f.typ, 12, "is", "x"), `{"select_field.0":["The selected field is invalid."]}`},
		{"another account's field", cond(f.typ, theirField, "is", "1"), `{"select_field.0":["The selected field is invalid."]}`},
		{"not a field id", cond(f.typ, "email", "is", "x"), `{"select_field.0":["The selected field is invalid."]}`},
		{"unknown operator", cond(f.typ, 1, "sounds like", "x"), `{"select_operator.0":["The operator \"sounds like\" does not apply to this field."]}`},
		{"operator for another kind", cond(f.typ, 1, "is greater than", "x"), `{"select_operator.0":["The operator \"is greater than\" does not apply to this field."]}`},
		{"not a number", cond(f.typ, f.age, "is", "old"), `{"value.0":["The value must be a number."]}`},
		{"not a date", cond(f.typ, 0, "is before", "yesterday"), `{"value.0":["The value must be a date (YYYY-MM-DD) or a date and time (YYYY-MM-DDTHH:MM)."]}`},
		{"between with one value", cond(f.typ, f.age, "is between", "1"), `{"value.0":["The value must hold two values for \"is between\"."]}`},
		{"days not a number", cond(f.typ, 0, "is within the last", "week"), `{"value.0":["The value must be a number of days."]}`},
		{"counts differ", url.Values{"contact_type_id": {typ}, "segment_name": {"x"}, "select_field[0]": {"1"}, "select_field[1]": {"2"}, "select_operator[0]": {"is"}, "value[0]": {"a"}}, `{"select_operator":["The select operator must have as many items as the select field."]}`},
		{"bad query type", func() url.Values { v := cond(f.typ, 1, "is", "a"); v.Set("query_type", "xor"); return v }(), `{"query_type":["The selected query type is invalid."]}`},
		{"another account's type", cond(theirType, 1, "is", "a"), `{"contact_type_id":["The selected contact type id is invalid."]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.a.do(req{method: "POST", path: "/api/segment/save", acct: &f.acct, body: tt.body}).
				expect(t, 422, `{"status":"failed","errors":`+tt.want+`}`)
		})
	}
	f.a.do(req{method: "POST", path: "/api/segment/email/store", acct: &f.acct, body: url.Values{}}).
		expect(t, 422, `{"status":"failed","errors":{"segment_id":["The segment id field is required."],"first_name":["The first name field is required."],"last_name":["The last name field is required."],"email":["The email field is required."]}}`)
	f.a.do(req{method: "GET", path: "/api/segment/email/list?segment_id=x", acct: &f.acct}).
		expect(t, 422, `{"status":"failed","errors":{"segment_id":["The segment id must be an integer."]}}`)
	var n int
	testdb.New(t).Pool.QueryRow(context.Background(), "SELECT count(*) FROM segments WHERE user_id = $1", f.acct.id).Scan(&n)
	if n != 0 {
		t.Fatalf("%d segments saved by refused requests", n)
	}
}

// Account B gets not-found answers for A's segments and recipients.
func TestSegmentIsolation(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	id := f.save(t, cond(f.typ, 1, "contains", "@"))
	intruder := f.a.account()
	theirType := seedType(t, intruder, "Mine")
	var member int64
	testdb.New(t).Pool.QueryRow(context.Background(), "SELECT min(id) FROM segment_entries WHERE segment_id = $1", id).Scan(&member)
	nf := `{"status":"failed","errors":"Record Not Found"}`
	a := f.a
	a.do(req{method: "GET", path: fmt.Sprintf("/api/segment/details?segment_id=%d", id), acct: &intruder}).expect(t, 404, nf)
	a.do(req{method: "GET", path: fmt.Sprintf("/api/segment/email/list?segment_id=%d", id), acct: &intruder}).expect(t, 404, `{"status":"failed","errors":"Record not found"}`)
	a.do(req{method: "POST", path: fmt.Sprintf("/api/segment/update?segment_id=%d", id), acct: &intruder, body: cond(theirType, 1, "is", "x")}).expect(t, 404, nf)
	a.do(req{method: "POST", path: "/api/segment/email/store", acct: &intruder, body: url.Values{
		"segment_id": {fmt.Sprint(id)}, "first_name": {"a"}, "last_name": {"b"}, "email": {"x@example.com"}}}).expect(t, 404, nf)
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/segment/email/delete?segment_recipient_id=%d", member), acct: &intruder}).expect(t, 404, nf)
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/segment/delete?segment_id=%d", id), acct: &intruder}).expect(t, 404, nf)
	a.do(req{method: "GET", path: "/api/segment/list", acct: &intruder}).expect(t, 200, `{"status":"success","message":{"segments":[]}}`)
	if got := strings.Join(f.members(t, id), " "); got != "ann bob cy di" {
		t.Fatalf("owner's segment changed: %s", got)
	}
}

// A segment save's rebuild waits for a contact write in flight and
// includes it.
func TestSegmentSaveWaitsForWriters(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	tx, pid := openWriter(t, f.acct, f.typ, "late@example.com")
	done := make(chan response, 1)
	go func() {
		done <- f.a.do(req{method: "POST", path: "/api/segment/save", acct: &f.acct, body: cond(f.typ, 2, "is", "writer")})
	}()
	waitBlocked(t, pid, "%name: LockTypeForRebuild %", done)
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	(<-done).expect(t, 200, `{"status":"success","message":"Saved Successfully"}`)
	var id int64
	testdb.New(t).Pool.QueryRow(context.Background(), "SELECT max(id) FROM segments WHERE user_id = $1", f.acct.id).Scan(&id)
	if got := strings.Join(f.members(t, id), " "); got != "late" {
		t.Fatalf("members %q", got)
	}
}

// An import waits for a contact write in flight, and then updates that
// contact instead of adding the address twice.
func TestCSVImportWaitsForWriters(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	empty := seedType(t, f.acct, "Empty")
	tx, pid := openWriter(t, f.acct, empty, "x@example.com")
	done := make(chan response, 1)
	go func() { done <- upload(f.a, f.acct, empty, "email,first_name\nX@example.com,Imported\n") }()
	waitBlocked(t, pid, "%INSERT INTO contacts%", done)
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	(<-done).expect(t, 200, imported)
	got := storedContacts(t, f.acct, empty)
	if len(got) != 1 || got["x@example.com"].first != "Imported" {
		t.Fatalf("%+v", got)
	}
}

// The same into a type that has contacts: the file's row for the address
// the writer added is applied, not dropped, and the import counts it as
// an update.
func TestCSVImportWaitsForWritersNonEmptyType(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	tx, pid := openWriter(t, f.acct, f.typ, "raced@example.com")
	done := make(chan response, 1)
	go func() {
		done <- upload(f.a, f.acct, f.typ, "email,first_name\nann@example.com,Annie\nRACED@example.com,Imported\nnew@example.com,New\n")
	}()
	waitBlocked(t, pid, "%INSERT INTO contacts%", done)
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	(<-done).expect(t, 200, imported)
	got := storedContacts(t, f.acct, f.typ)
	if got["raced@example.com"].first != "Imported" || got["ann@example.com"].first != "Annie" || got["new@example.com"].first != "New" {
		t.Fatalf("%+v", got)
	}
	var payload string
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT payload::text FROM events
		WHERE user_id = $1 AND kind = 'contacts.imported' ORDER BY id DESC LIMIT 1`, f.acct.id).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if payload != `{"rows": 3, "added": 1, "skipped": 0, "updated": 2}` {
		t.Fatalf("import counted %s", payload)
	}
}

// An import does not wait for a writer in flight to another address of
// the type, and a writer does not wait for an import's hold on the type
// (issue 13: adds waited up to 23.6 s behind imports).
func TestCSVImportAndWritersGoOnTogether(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	typ := seedType(t, f.acct, "Busy")
	tx, _ := openWriter(t, f.acct, typ, "writer@example.com")
	upload(f.a, f.acct, typ, "email,first_name\nother@example.com,Imported\n").expect(t, 200, imported)
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	// What an import's merge holds, left open: the type's import lock and
	// the type FOR SHARE, with a contact of its own written.
	ctx := context.Background()
	imp, err := testdb.New(t).Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Rollback(ctx)
	if _, err := imp.Exec(ctx, `SELECT pg_advisory_xact_lock(x'696d706f'::int, $1::int)`, typ); err != nil {
		t.Fatal(err)
	}
	if _, err := imp.Exec(ctx, `INSERT INTO contacts (user_id, contact_type_id, email)
		SELECT user_id, id, 'merging@example.com' FROM contact_types WHERE id = $1 FOR SHARE`, typ); err != nil {
		t.Fatal(err)
	}
	f.a.do(req{method: "POST", path: "/api/contacts/add", acct: &f.acct, body: url.Values{
		"contact_type_id": {fmt.Sprint(typ)}, "email": {"single@example.com"}, "country": {"276"}}}).
		expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	got := storedContacts(t, f.acct, typ)
	if len(got) != 3 || got["other@example.com"].first != "Imported" {
		t.Fatalf("%+v", got)
	}
}

// A date-time value on created_at: "is" to the minute binds no parameter
// for the custom-value index (issue 13: it was a 500, "expected 4
// arguments, got 5"). Every datetime operator, with days and minutes, on
// created_at and on a custom field.
func TestSegmentDatetimeValuesOnEveryField(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	tests := []struct {
		field any
		op    string
		vals  []string
		want  string
	}{
		{0, "is", []string{"2024-06-15T12:00"}, "cy"},
		{0, "is", []string{"2026-11-23T08:00"}, ""},
		{0, "is", []string{"2024-06-15 12:00:00"}, "cy"},
		{0, "is", []string{"2024-06-15T14:00:00+02:00"}, "cy"},
		{0, "is not", []string{"2024-06-15T12:00"}, "ann bob di"},
		{0, "is before", []string{"2024-06-15T12:01"}, "cy"},
		{0, "is after", []string{"2024-06-15T12:00"}, "ann bob di"},
		{0, "is between", []string{"2024-06-16T08:00", "2024-06-15T12:00"}, "cy di"},
		{0, "is between", []string{"0001-01-01", "9999-12-31"}, "ann bob cy di"},
		{f.joined, "is", []string{"2026-03-10T09:00"}, "ann"},
		{f.joined, "is", []string{"2026-03-10T09:00:00Z"}, "ann"},
		{f.joined, "is not", []string{"2026-03-10T09:00"}, "bob cy di"},
		{f.joined, "is before", []string{"2026-03-10T09:00"}, "bob"},
		{f.joined, "is after", []string{"2026-03-10T09:00"}, "di"},
		{f.joined, "is between", []string{"2026-03-11T00:00", "2025-12-31T23:59"}, "ann bob di"},
		{f.joined, "is between", []string{"0001-01-01T00:00:00Z", "9999-12-31T23:59"}, "ann bob di"},
		{f.joined, "is within the last", []string{"36500"}, "ann bob di"},
		{f.joined, "is not empty", nil, "ann bob di"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v %s %v", tt.field, tt.op, tt.vals), func(t *testing.T) {
			id := f.save(t, cond(f.typ, tt.field, tt.op, tt.vals...))
			if got := strings.Join(f.members(t, id), " "); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// Dates outside the years 1-9999 in UTC are refused with a 422 (issue 13:
// PostgreSQL refused them, SQLSTATE 22008, and the answer was a 500).
func TestSegmentDatesOutOfRange(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	const msg = `{"value.0":["The value must be a date from year 0001 to 9999 (UTC)."]}`
	for _, field := range []int64{0, f.joined} {
		for _, tt := range []struct {
			op   string
			vals []string
		}{
			{"is", []string{"0000-01-01"}},
			{"is", []string{"0000-01-01T00:00"}},
			{"is before", []string{"0000-12-31 23:59:59"}},
			{"is after", []string{"0001-01-01T00:00:00+01:00"}}, // year 0 in UTC
			{"is not", []string{"9999-12-31T23:30:00-01:00"}},   // year 10000 in UTC
			{"is between", []string{"2026-01-01", "0000-01-01"}},
			{"is between", []string{"0000-06-01T00:00", "2026-01-01"}},
		} {
			t.Run(fmt.Sprintf("%d %s %v", field, tt.op, tt.vals), func(t *testing.T) {
				f.a.do(req{method: "POST", path: "/api/segment/save", acct: &f.acct, body: cond(f.typ, field, tt.op, tt.vals...)}).
					expect(t, 422, `{"status":"failed","errors":`+msg+`}`)
			})
		}
	}
	// The first and last instants are fine, on both sides of UTC.
	f.save(t, cond(f.typ, 0, "is after", "0001-01-01T00:00:00Z"))
	f.save(t, cond(f.typ, 0, "is before", "0001-01-01T01:00:00+01:00"))
	f.save(t, cond(f.typ, f.joined, "is", "9999-12-31"))
	f.save(t, cond(f.typ, f.joined, "is", "9999-12-31T23:59"))
	f.save(t, cond(f.typ, f.joined, "is before", "9999-12-31T22:59:00-01:00"))
}

// Custom datetime values stored before they were checked (year 0000, days
// a month lacks, hours past 23, one-digit hours, non-strings) read as
// absent: no segment condition on the field can fail, for any operator,
// and the segments that hold them keep working as contacts change.
func TestSegmentIgnoresUnreadableStoredDatetimes(t *testing.T) {
	t.Parallel()
	f := newSegmentFixture(t)
	typ := seedType(t, f.acct, "Raw")
	for i, v := range []string{
		`"0000-01-01T00:00"`, `"0000-02-29T00:00"`, `"2023-02-31T00:00"`, `"2023-02-29T00:00"`, `"1900-02-29T12:00"`,
		`"2026-04-31T00:00"`, `"2026-13-01T00:00"`, `"2026-00-10T00:00"`, `"2026-03-10T24:00"`, `"2026-03-10T23:60"`,
		`"2026-03-10T9:00"`, `"2026-03-10"`, `"2026-03-10T09:00:00"`, `"-001-01-01T00:00"`, `"20260-03-10T09:00"`,
		`"２０２６-03-10T09:00"`, `"garbage"`, `""`, `20260310`, `true`, `null`, `{"a":1}`, `["2026-03-10T09:00"]`,
	} {
		sqlContact(t, f.acct.id, typ, fmt.Sprintf("bad%02d@example.com", i), fmt.Sprintf(`{"joined": %s}`, v), false)
	}
	for _, v := range []string{"0001-01-01T00:00", "2024-02-29T00:00", "2000-02-29T23:59", "2026-03-10T09:00", "9999-12-31T23:59"} {
		sqlContact(t, f.acct.id, typ, "good"+strings.NewReplacer("-", "", ":", "").Replace(v)+"@example.com", fmt.Sprintf(`{"joined": %q}`, v), false)
	}
	for _, tt := range []struct {
		op   string
		vals []string
		want string
	}{
		{"is", []string{"2026-03-10T09:00"}, "good20260310T0900"},
		{"is", []string{"2024-02-29"}, "good20240229T0000"},
		{"is not", []string{"2026-03-10"}, "bad00 bad01 bad02 bad03 bad04 bad05 bad06 bad07 bad08 bad09 bad10 bad11 bad12 bad13 bad14 bad15 bad16 bad17 bad18 bad19 bad20 bad21 bad22 good00010101T0000 good20000229T2359 good20240229T0000 good99991231T2359"},
		{"is before", []string{"2000-03-01"}, "good00010101T0000 good20000229T2359"},
		{"is after", []string{"2026-03-10T08:59"}, "good20260310T0900 good99991231T2359"},
		{"is between", []string{"9999-12-31", "0001-01-01"}, "good00010101T0000 good20000229T2359 good20240229T0000 good20260310T0900 good99991231T2359"},
		{"is within the last", []string{"36500"}, "good20000229T2359 good20240229T0000 good20260310T0900"},
		{"is empty", nil, "bad00 bad01 bad02 bad03 bad04 bad05 bad06 bad07 bad08 bad09 bad10 bad11 bad12 bad13 bad14 bad15 bad16 bad17 bad18 bad19 bad20 bad21 bad22"},
		{"is not empty", nil, "good00010101T0000 good20000229T2359 good20240229T0000 good20260310T0900 good99991231T2359"},
	} {
		t.Run(tt.op+" "+strings.Join(tt.vals, ","), func(t *testing.T) {
			id := f.save(t, cond(typ, f.joined, tt.op, tt.vals...))
			if got := strings.Join(f.members(t, id), " "); got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
	// Contact writes re-evaluate those segments for the written contacts.
	f.a.do(req{method: "POST", path: "/api/contacts/add", acct: &f.acct, body: url.Values{"contact_type_id": {fmt.Sprint(typ)},
		"email": {"bad00@example.com"}, "country": {"276"}, "first_name": {"Fixed"}}}).
		expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	upload(f.a, f.acct, typ, "email,first_name\nbad01@example.com,Imported\n").expect(t, 200, imported)
}
