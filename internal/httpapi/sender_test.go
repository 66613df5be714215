package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/mailroom/mailroom/internal/testdb"
)

// senderPlace picks a state and one of its cities in Germany, and a state
// of France, from the geography data set.
func senderPlace(t testing.TB) (deState, deCity, frState int32) {
	t.Helper()
	g := testdb.Geo(t)
	_, _, cities := g.Filter(276, 0)
	for _, c := range cities {
		if c.StateID != 0 {
			deState, deCity = c.StateID, c.ID
			break
		}
	}
	_, states, _ := g.Filter(250, 0)
	if deCity == 0 || len(states) == 0 {
		t.Fatal("no places in the data set")
	}
	return deState, deCity, states[0].ID
}

func senderForm(state, city int32) url.Values {
	return url.Values{"from_name": {"Acme News"}, "from_email": {"news@acme.example"}, "reply_to_email": {"help@acme.example"},
		"country_id": {"276"}, "state_id": {fmt.Sprint(state)}, "city_id": {fmt.Sprint(city)}, "zip_code": {"80331"},
		"company_address": {"Marienplatz 1"}, "nickname": {"news"}}
}

func TestSenders(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	deState, deCity, frState := senderPlace(t)

	a.do(req{method: "POST", path: "/api/sender/save", acct: &acct, body: url.Values{}}).expect(t, 422,
		`{"status":"failed","errors":{"from_name":["The from name field is required."],"from_email":["The from email field is required."],`+
			`"reply_to_email":["The reply to email field is required."],"country_id":["The country id field is required."],`+
			`"company_address":["The company address field is required."],"nickname":["The nickname field is required."]}}`)
	bad := senderForm(frState, deCity)
	bad.Set("from_email", "not-an-address")
	bad.Set("company_address", "Line one\nBcc: x@example.com")
	a.do(req{method: "POST", path: "/api/sender/save", acct: &acct, body: bad}).expect(t, 422,
		`{"status":"failed","errors":{"from_email":["The from email must be a valid email address."],"state_id":["The selected state id is invalid."],`+
			`"city_id":["The selected city id is invalid."],"company_address":["The company address may not contain line breaks or control characters."]}}`)
	long := senderForm(deState, deCity)
	long.Set("company_address2", fmt.Sprintf("%0256d", 0))
	long.Set("country_id", "9999")
	a.do(req{method: "POST", path: "/api/sender/save", acct: &acct, body: long}).expect(t, 422,
		`{"status":"failed","errors":{"country_id":["The selected country id is invalid."],"company_address2":["The company address2 may not be greater than 255 characters."]}}`)

	a.do(req{method: "POST", path: "/api/sender/save", acct: &acct, body: senderForm(deState, deCity)}).
		expect(t, 200, `{"status":"success","message":"Added Successfully"}`)
	var id int64
	var utr string
	pool := testdb.New(t).Pool
	if err := pool.QueryRow(context.Background(), "SELECT id, utr FROM senders WHERE user_id = $1", acct.id).Scan(&id, &utr); err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`{"id":%d,"user_id":%d,"from_name":"Acme News","from_email":"%%s","reply_to_email":"help@acme.example",`+
		`"country_id":276,"state_id":%d,"city_id":%d,"zip_code":"80331","company_address":"Marienplatz 1","company_address2":"",`+
		`"nickname":"news","is_verified":%%d,"utr":%q,"send_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>","deleted_at":null}`,
		id, acct.id, deState, deCity, utr)
	a.do(req{method: "GET", path: fmt.Sprintf("/api/sender/details?sender_id=%d", id), acct: &acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"sender":`+fmt.Sprintf(row, "news@acme.example", 0)+`}}`)
	for _, m := range []string{"GET", "POST"} {
		a.do(req{method: m, path: "/api/senders", acct: &acct}).expectNormalized(t, 200,
			`{"status":"success","message":{"senders":[`+fmt.Sprintf(row, "news@acme.example", 0)+`]}}`)
	}
	var events int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE user_id = $1 AND kind = 'sender.added' AND subject_id = $2",
		acct.id, id).Scan(&events); err != nil || events != 1 {
		t.Fatalf("sender.added events: %d %v", events, err)
	}

	// An update keeps the verification unless from_email changes.
	if _, err := pool.Exec(context.Background(), "UPDATE senders SET is_verified = 1 WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	up := senderForm(deState, deCity)
	up.Set("sender_id", fmt.Sprint(id))
	up.Set("from_email", "NEWS@acme.example")
	a.do(req{method: "POST", path: "/api/sender/update", acct: &acct, body: up}).expect(t, 200, `{"status":"success","message":"Updated Successfully"}`)
	a.do(req{method: "GET", path: fmt.Sprintf("/api/sender/details?sender_id=%d", id), acct: &acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"sender":`+fmt.Sprintf(row, "NEWS@acme.example", 1)+`}}`)
	up.Set("from_email", "other@acme.example")
	a.do(req{method: "POST", path: "/api/sender/update", acct: &acct, body: up}).expect(t, 200, `{"status":"success","message":"Updated Successfully"}`)
	a.do(req{method: "GET", path: fmt.Sprintf("/api/sender/details?sender_id=%d", id), acct: &acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"sender":`+fmt.Sprintf(row, "other@acme.example", 0)+`}}`)
	up.Del("sender_id")
	a.do(req{method: "POST", path: "/api/sender/update", acct: &acct, body: up}).expect(t, 422,
		`{"status":"failed","errors":{"sender_id":["The sender id field is required."]}}`)

	// Another account sees none of it.
	intruder := a.account()
	nf := `{"status":"failed","errors":"Record Not Found"}`
	a.do(req{method: "GET", path: fmt.Sprintf("/api/sender/details?sender_id=%d", id), acct: &intruder}).expect(t, 404, nf)
	up.Set("sender_id", fmt.Sprint(id))
	a.do(req{method: "POST", path: "/api/sender/update", acct: &intruder, body: up}).expect(t, 404, nf)
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/sender/delete?sender_id=%d", id), acct: &intruder}).expect(t, 404, nf)
	a.do(req{method: "GET", path: "/api/senders", acct: &intruder}).expect(t, 200, `{"status":"success","message":{"senders":[]}}`)

	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/sender/delete?sender_id=%d", id), acct: &acct}).
		expect(t, 200, `{"status":"success","errors":"Deleted Successfully"}`)
	a.do(req{method: "GET", path: fmt.Sprintf("/api/sender/details?sender_id=%d", id), acct: &acct}).expect(t, 404, nf)
	a.do(req{method: "GET", path: "/api/senders", acct: &acct}).expect(t, 200, `{"status":"success","message":{"senders":[]}}`)
}
