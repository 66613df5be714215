package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/internal/testdb"
)

// unsubRow is a global unsubscriber or group recipient as listed, times
// normalized; group 0 is null.
func unsubRow(id, userID, group int64, email string) string {
	g := "null"
	if group != 0 {
		g = fmt.Sprint(group)
	}
	return fmt.Sprintf(`{"id":%d,"user_id":%d,"unsubscribe_groups_id":%s,"email_address":%q,"created_at":"<timestamp>","updated_at":"<timestamp>"}`,
		id, userID, g, email)
}

// listOf is a success body holding message[key] = rows, then extra.
func listOf(key string, extra string, rows ...string) string {
	return `{"status":"success","message":{"` + key + `":[` + strings.Join(rows, ",") + `]` + extra + `}}`
}

// unsubEvents returns acct's events as "kind subject_type subject_id payload".
func unsubEvents(t *testing.T, acct account) []string {
	t.Helper()
	rows, err := testdb.New(t).Pool.Query(context.Background(),
		"SELECT kind || ' ' || subject_type || ' ' || subject_id || ' ' || payload::text FROM events WHERE user_id = $1 ORDER BY id", acct.id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func unsubEvent(id, group int64, email string) string {
	g := "null"
	if group != 0 {
		g = fmt.Sprint(group)
	}
	return fmt.Sprintf(`address.unsubscribed unsubscribe %d {"email_address": %q, "unsubscribe_groups_id": %s}`, id, email, g)
}

func sameStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

const globalList = "/api/global-unsubscribes"

func TestGlobalUnsubscribes(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	list := req{method: "GET", path: globalList, acct: &acct}
	a.do(list).expect(t, 200, `{"status":"success","message":{"unSubscribers":[]}}`)

	// Every encoding saves; addresses are trimmed and kept once each,
	// compared lower-cased; the first spelling stays.
	save := func(body any) {
		t.Helper()
		a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &acct, body: body}).expect(t, 200, addedOK)
	}
	save(multipartBody{"email_address": " Ann@Example.com , bob@example.com,ann@example.com"})
	save(url.Values{"email_address": {"BOB@example.com, cat@example.com"}})
	save(jsonBody(`{"email_address":"dan@example.com,ANN@EXAMPLE.COM"}`))
	save(jsonBody(`{"email_address":["eve@example.com","dan@example.com"]}`))

	ids := listIDs(t, a.do(list), "unSubscribers")
	if len(ids) != 5 {
		t.Fatalf("ids %v", ids)
	}
	emails := []string{"Ann@Example.com", "bob@example.com", "cat@example.com", "dan@example.com", "eve@example.com"}
	rows := make([]string, len(ids))
	var events []string
	for i, id := range ids {
		rows[i] = unsubRow(id, acct.id, 0, emails[i])
		events = append(events, unsubEvent(id, 0, emails[i]))
	}
	a.do(list).expectNormalized(t, 200, listOf("unSubscribers", "", rows...))
	// One event per address added, none for those already there.
	sameStrings(t, "events", unsubEvents(t, acct), events)

	// Paged.
	a.do(req{method: "GET", path: globalList + "?page=2&per_page=2", acct: &acct}).expectNormalized(t, 200,
		listOf("unSubscribers", `,"pagination":{"page":2,"per_page":2,"total":5}`, rows[2], rows[3]))
	a.do(req{method: "GET", path: globalList + "?page=9", acct: &acct}).expect(t, 200,
		listOf("unSubscribers", `,"pagination":{"page":9,"per_page":100,"total":5}`))

	// Delete one; it is gone, and a second delete finds nothing.
	del := req{method: "DELETE", path: fmt.Sprintf("/api/global-unsubscribes/delete?id=%d", ids[0]), acct: &acct}
	a.do(del).expect(t, 200, deletedOK)
	a.do(del).expect(t, 404, notFound)

	// Bulk delete is all or nothing: the deleted id refuses the lot.
	bulk := func(body any) response {
		return a.do(req{method: "POST", path: "/api/global-unsubscribes/bulk-delete", acct: &acct, body: body})
	}
	bulk(url.Values{"strIds[0]": {fmt.Sprint(ids[1])}, "strIds[1]": {fmt.Sprint(ids[0])}}).expect(t, 404, notFound)
	a.do(list).expectNormalized(t, 200, listOf("unSubscribers", "", rows[1:]...))
	bulk(url.Values{"strIds[0]": {fmt.Sprint(ids[1])}, "strIds[1]": {fmt.Sprint(ids[1])}}).expect(t, 200, deletedOK)
	bulk(multipartBody{"strIds[0]": fmt.Sprint(ids[2])}).expect(t, 200, deletedOK)
	bulk(jsonBody(fmt.Sprintf(`{"strIds":["%d",%d]}`, ids[3], ids[4]))).expect(t, 200, deletedOK)
	a.do(list).expect(t, 200, `{"status":"success","message":{"unSubscribers":[]}}`)

	// A deleted address can be added again, as a new entry.
	save(url.Values{"email_address": {"ann@example.com"}})
	again := listIDs(t, a.do(list), "unSubscribers")
	if len(again) != 1 || again[0] <= ids[4] {
		t.Fatalf("re-added: %v", again)
	}
	a.do(list).expectNormalized(t, 200, listOf("unSubscribers", "", unsubRow(again[0], acct.id, 0, "ann@example.com")))
}

func TestGlobalUnsubscribeValidation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &acct,
		body: url.Values{"email_address": {"kept@example.com"}}}).expect(t, 200, addedOK)
	const required = `{"status":"failed","errors":{"email_address":["The email address field is required."]}}`
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		code   int
		want   string
	}{
		{"save nothing", "POST", "/api/global-unsubscribes/save", nil, 422, required},
		{"save empty", "POST", "/api/global-unsubscribes/save", multipartBody{"email_address": ""}, 422, required},
		{"save only commas", "POST", "/api/global-unsubscribes/save", url.Values{"email_address": {" , ,"}}, 422, required},
		{"save null", "POST", "/api/global-unsubscribes/save", jsonBody(`{"email_address":null}`), 422, required},
		{"one bad address saves nothing", "POST", "/api/global-unsubscribes/save",
			url.Values{"email_address": {"new@example.com, not-an-address, other@example.com"}}, 422,
			`{"status":"failed","errors":{"email_address":["The email address \"not-an-address\" is not a valid email address."]}}`},
		{"each bad address named", "POST", "/api/global-unsubscribes/save",
			jsonBody(`{"email_address":"a@b, new@example.com ,x@example..com"}`), 422,
			`{"status":"failed","errors":{"email_address":["The email address \"a@b\" is not a valid email address.","The email address \"x@example..com\" is not a valid email address."]}}`},

		{"delete without id", "DELETE", "/api/global-unsubscribes/delete", nil, 422,
			`{"status":"failed","errors":{"id":["The id field is required."]}}`},
		{"delete non-numeric id", "DELETE", "/api/global-unsubscribes/delete?id=x", nil, 422,
			`{"status":"failed","errors":{"id":["The id must be an integer."]}}`},
		{"delete unknown id", "DELETE", "/api/global-unsubscribes/delete?id=999999999", nil, 404, notFound},

		{"bulk without ids", "POST", "/api/global-unsubscribes/bulk-delete", url.Values{}, 422,
			`{"status":"failed","errors":{"strIds":["The str ids field is required."]}}`},
		{"bulk non-numeric id", "POST", "/api/global-unsubscribes/bulk-delete", jsonBody(`{"strIds":["1","a"]}`), 422,
			`{"status":"failed","errors":{"strIds":["The str ids must be an array of integers."]}}`},
		{"bulk unknown id", "POST", "/api/global-unsubscribes/bulk-delete", multipartBody{"strIds[0]": "999999999"}, 404, notFound},

		{"list bad page", "GET", globalList + "?page=0", nil, 422,
			`{"status":"failed","errors":{"page":["The page must be at least 1."]}}`},
		{"list big page", "GET", globalList + "?per_page=1001", nil, 422,
			`{"status":"failed","errors":{"per_page":["The per page may not be greater than 1000."]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.do(req{method: tt.method, path: tt.path, acct: &acct, body: tt.body}).expect(t, tt.code, tt.want)
		})
	}
	// Nothing above changed the list or recorded an event.
	ids := listIDs(t, a.do(req{method: "GET", path: globalList, acct: &acct}), "unSubscribers")
	a.do(req{method: "GET", path: globalList, acct: &acct}).expectNormalized(t, 200,
		listOf("unSubscribers", "", unsubRow(ids[0], acct.id, 0, "kept@example.com")))
	sameStrings(t, "events", unsubEvents(t, acct), []string{unsubEvent(ids[0], 0, "kept@example.com")})
}

// group is an unsubscribe group as the list shows it.
type group struct {
	ID     int64  `json:"id"`
	RandID string `json:"rand_id"`
}

func groupsOf(t *testing.T, a *api, acct account) []group {
	t.Helper()
	r := a.do(req{method: "GET", path: "/api/unsubscribes-groups", acct: &acct})
	var v struct {
		Message struct {
			UnsubscribesGroups []group
		}
	}
	if r.code != 200 {
		t.Fatalf("groups: %d %s", r.code, r.body)
	}
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatal(err)
	}
	return v.Message.UnsubscribesGroups
}

// seedGroup saves a group through the API and returns it.
func seedGroup(t *testing.T, a *api, acct account, name string) group {
	t.Helper()
	a.do(req{method: "POST", path: "/api/unsubscribes-groups/save", acct: &acct,
		body: url.Values{"group_name": {name}, "description": {name + " mails"}, "is_display": {"1"}}}).
		expect(t, 200, `{"status":"success","message":"Saved Successfully"}`)
	gs := groupsOf(t, a, acct)
	return gs[len(gs)-1]
}

func groupRow(g group, userID int64, name, desc string, display int) string {
	return fmt.Sprintf(`{"id":%d,"user_id":%d,"rand_id":%q,"group_name":%q,"description":%q,"is_display":%d,"created_at":"<timestamp>","updated_at":"<timestamp>"`,
		g.ID, userID, g.RandID, name, desc, display)
}

var randIDRE = regexp.MustCompile(`^[1-9][0-9]{9}$`)

func TestUnsubscribeGroups(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	list := req{method: "GET", path: "/api/unsubscribes-groups", acct: &acct}
	a.do(list).expect(t, 200, `{"status":"success","message":{"unsubscribesGroups":[]}}`)

	const saved = `{"status":"success","message":"Saved Successfully"}`
	for _, body := range []any{
		multipartBody{"group_name": " Newsletter ", "description": " Weekly news ", "is_display": "1"},
		url.Values{"group_name": {"Offers"}, "description": {"Deals"}, "is_display": {"false"}},
		jsonBody(`{"group_name":"Product","description":"Release notes","is_display":true}`),
	} {
		a.do(req{method: "POST", path: "/api/unsubscribes-groups/save", acct: &acct, body: body}).expect(t, 200, saved)
	}
	gs := groupsOf(t, a, acct)
	if len(gs) != 3 || gs[0].ID >= gs[1].ID || gs[1].ID >= gs[2].ID {
		t.Fatalf("groups %+v", gs)
	}
	for _, g := range gs {
		if !randIDRE.MatchString(g.RandID) {
			t.Fatalf("rand_id %q", g.RandID)
		}
	}
	if gs[0].RandID == gs[1].RandID || gs[1].RandID == gs[2].RandID {
		t.Fatalf("rand_ids repeat: %+v", gs)
	}

	// The count is the group's addresses only.
	a.do(req{method: "POST", path: "/api/unsubscribes-groups/manually-add", acct: &acct, body: url.Values{
		"unsubscribe_groups_id": {fmt.Sprint(gs[0].ID)}, "email_address": {"a@example.com,b@example.com"}}}).expect(t, 200, addedOK)
	a.do(req{method: "POST", path: "/api/unsubscribes-groups/manually-add", acct: &acct, body: url.Values{
		"unsubscribe_groups_id": {fmt.Sprint(gs[2].ID)}, "email_address": {"a@example.com"}}}).expect(t, 200, addedOK)
	a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &acct,
		body: url.Values{"email_address": {"a@example.com,c@example.com"}}}).expect(t, 200, addedOK)
	rows := []string{
		groupRow(gs[0], acct.id, "Newsletter", "Weekly news", 1),
		groupRow(gs[1], acct.id, "Offers", "Deals", 0),
		groupRow(gs[2], acct.id, "Product", "Release notes", 1),
	}
	a.do(list).expectNormalized(t, 200, listOf("unsubscribesGroups", "",
		rows[0]+`,"unsubscribe_clients_count":2}`, rows[1]+`,"unsubscribe_clients_count":0}`, rows[2]+`,"unsubscribe_clients_count":1}`))
	a.do(req{method: "GET", path: "/api/unsubscribes-groups?page=2&per_page=2", acct: &acct}).expectNormalized(t, 200,
		listOf("unsubscribesGroups", `,"pagination":{"page":2,"per_page":2,"total":3}`, rows[2]+`,"unsubscribe_clients_count":1}`))

	// Details: one group, no count.
	details := func(id int64) req {
		return req{method: "GET", path: fmt.Sprintf("/api/unsubscribes-groups/details?id=%d", id), acct: &acct}
	}
	detailsBody := func(row string) string {
		return `{"status":"success","message":{"unsubscribesGroup":` + row + `}}}`
	}
	before := a.do(details(gs[1].ID))
	before.expectNormalized(t, 200, detailsBody(rows[1]))

	// Every encoding updates; the id comes in the query or the body;
	// rand_id and created_at stay, updated_at moves.
	updates := []struct {
		path string
		body any
		want string
	}{
		{fmt.Sprintf("/api/unsubscribes-groups/update?id=%d", gs[1].ID),
			multipartBody{"group_name": "Offers 2", "description": "Deals 2", "is_display": "true"},
			groupRow(gs[1], acct.id, "Offers 2", "Deals 2", 1)},
		{"/api/unsubscribes-groups/update",
			url.Values{"id": {fmt.Sprint(gs[1].ID)}, "group_name": {" Offers 3 "}, "description": {"Deals 3"}, "is_display": {"0"}},
			groupRow(gs[1], acct.id, "Offers 3", "Deals 3", 0)},
		{fmt.Sprintf("/api/unsubscribes-groups/update?id=%d", gs[1].ID),
			jsonBody(`{"group_name":"Offers 4","description":"Deals 4","is_display":1}`),
			groupRow(gs[1], acct.id, "Offers 4", "Deals 4", 1)},
	}
	for _, u := range updates {
		a.do(req{method: "POST", path: u.path, acct: &acct, body: u.body}).expect(t, 200, updatedOK)
		a.do(details(gs[1].ID)).expectNormalized(t, 200, detailsBody(u.want))
	}
	b, after := groupTimes(t, before), groupTimes(t, a.do(details(gs[1].ID)))
	if after.CreatedAt != b.CreatedAt || !after.UpdatedAt.After(b.UpdatedAt) {
		t.Fatalf("before %+v, after %+v", b, after)
	}
	// The other groups did not change.
	a.do(details(gs[0].ID)).expectNormalized(t, 200, detailsBody(rows[0]))
}

// groupTimes reads a group details answer's timestamps.
func groupTimes(t *testing.T, r response) stamps {
	t.Helper()
	var v struct {
		Message struct{ UnsubscribesGroup stamps }
	}
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatal(err)
	}
	return v.Message.UnsubscribesGroup
}

func TestUnsubscribeGroupValidation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	g := seedGroup(t, a, acct, "Existing")
	sid := fmt.Sprint(g.ID)
	const (
		both = `{"status":"failed","errors":{"group_name":["The group name field is required."],"description":["The description field is required."]}}`
		all  = `{"status":"failed","errors":{"group_name":["The group name field is required."],"description":["The description field is required."],"is_display":["The is display field is required."]}}`
	)
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		code   int
		want   string
	}{
		{"save without name and description", "POST", "/api/unsubscribes-groups/save", multipartBody{"is_display": "1"}, 422, both},
		{"save blank name and description", "POST", "/api/unsubscribes-groups/save",
			url.Values{"group_name": {"  "}, "description": {""}, "is_display": {"0"}}, 422, both},
		{"save nothing", "POST", "/api/unsubscribes-groups/save", jsonBody(`{}`), 422, all},
		{"save without description", "POST", "/api/unsubscribes-groups/save",
			jsonBody(`{"group_name":"N","is_display":0}`), 422,
			`{"status":"failed","errors":{"description":["The description field is required."]}}`},
		{"save bad display", "POST", "/api/unsubscribes-groups/save",
			url.Values{"group_name": {"N"}, "description": {"D"}, "is_display": {"2"}}, 422,
			`{"status":"failed","errors":{"is_display":["The is display field must be true or false."]}}`},
		{"save long name", "POST", "/api/unsubscribes-groups/save",
			url.Values{"group_name": {strings.Repeat("n", 256)}, "description": {"D"}, "is_display": {"1"}}, 422,
			`{"status":"failed","errors":{"group_name":["The group name may not be greater than 255 characters."]}}`},

		{"details without id", "GET", "/api/unsubscribes-groups/details", nil, 422,
			`{"status":"failed","errors":{"id":["The id field is required."]}}`},
		{"details non-numeric id", "GET", "/api/unsubscribes-groups/details?id=abc", nil, 422,
			`{"status":"failed","errors":{"id":["The id must be an integer."]}}`},
		{"details unknown id", "GET", "/api/unsubscribes-groups/details?id=999999999", nil, 404, notFound},

		{"update without anything", "POST", "/api/unsubscribes-groups/update", url.Values{}, 422,
			`{"status":"failed","errors":{"id":["The id field is required."],"group_name":["The group name field is required."],"description":["The description field is required."],"is_display":["The is display field is required."]}}`},
		{"update without name and description", "POST", "/api/unsubscribes-groups/update?id=" + sid,
			multipartBody{"is_display": "1"}, 422, both},
		{"update non-numeric id", "POST", "/api/unsubscribes-groups/update?id=x",
			url.Values{"group_name": {"N"}, "description": {"D"}, "is_display": {"1"}}, 422,
			`{"status":"failed","errors":{"id":["The id must be an integer."]}}`},
		{"update unknown id", "POST", "/api/unsubscribes-groups/update?id=999999999",
			url.Values{"group_name": {"N"}, "description": {"D"}, "is_display": {"1"}}, 404, notFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.do(req{method: tt.method, path: tt.path, acct: &acct, body: tt.body}).expect(t, tt.code, tt.want)
		})
	}
	// Nothing above changed the account's one group.
	a.do(req{method: "GET", path: "/api/unsubscribes-groups", acct: &acct}).expectNormalized(t, 200,
		listOf("unsubscribesGroups", "", groupRow(g, acct.id, "Existing", "Existing mails", 1)+`,"unsubscribe_clients_count":0}`))
}

func TestGroupRecipients(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	g, other := seedGroup(t, a, acct, "News"), seedGroup(t, a, acct, "Offers")
	gid := fmt.Sprint(g.ID)
	recipients := req{method: "GET", path: "/api/unsubscribes-groups/recipients-list?groupId=" + gid, acct: &acct}
	a.do(recipients).expect(t, 200, `{"status":"success","message":{"recipients":[]}}`)

	// The same address may be on the global list and in several groups.
	a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &acct,
		body: url.Values{"email_address": {"ann@example.com"}}}).expect(t, 200, addedOK)
	add := func(body any) {
		t.Helper()
		a.do(req{method: "POST", path: "/api/unsubscribes-groups/manually-add", acct: &acct, body: body}).expect(t, 200, addedOK)
	}
	add(multipartBody{"unsubscribe_groups_id": gid, "email_address": "ann@example.com, Bob@Example.com"})
	add(url.Values{"unsubscribe_groups_id": {gid}, "email_address": {"bob@example.com,cat@example.com,ANN@example.com"}})
	add(jsonBody(fmt.Sprintf(`{"unsubscribe_groups_id":%d,"email_address":"dan@example.com"}`, g.ID)))
	add(jsonBody(fmt.Sprintf(`{"unsubscribe_groups_id":"%d","email_address":"ann@example.com"}`, other.ID)))

	ids := listIDs(t, a.do(recipients), "recipients")
	emails := []string{"ann@example.com", "Bob@Example.com", "cat@example.com", "dan@example.com"}
	if len(ids) != len(emails) {
		t.Fatalf("ids %v", ids)
	}
	rows := make([]string, len(ids))
	for i, id := range ids {
		rows[i] = unsubRow(id, acct.id, g.ID, emails[i])
	}
	a.do(recipients).expectNormalized(t, 200, listOf("recipients", "", rows...))
	a.do(req{method: "GET", path: "/api/unsubscribes-groups/recipients-list?groupId=" + gid + "&per_page=3&page=2", acct: &acct}).
		expectNormalized(t, 200, listOf("recipients", `,"pagination":{"page":2,"per_page":3,"total":4}`, rows[3]))
	otherIDs := listIDs(t, a.do(req{method: "GET", path: fmt.Sprintf("/api/unsubscribes-groups/recipients-list?groupId=%d", other.ID), acct: &acct}), "recipients")
	globalIDs := listIDs(t, a.do(req{method: "GET", path: globalList, acct: &acct}), "unSubscribers")
	if len(otherIDs) != 1 || len(globalIDs) != 1 {
		t.Fatalf("other group %v, global %v", otherIDs, globalIDs)
	}

	// Events carry the group.
	sameStrings(t, "events", unsubEvents(t, acct), []string{
		unsubEvent(globalIDs[0], 0, "ann@example.com"),
		unsubEvent(ids[0], g.ID, "ann@example.com"),
		unsubEvent(ids[1], g.ID, "Bob@Example.com"),
		unsubEvent(ids[2], g.ID, "cat@example.com"),
		unsubEvent(ids[3], g.ID, "dan@example.com"),
		unsubEvent(otherIDs[0], other.ID, "ann@example.com"),
	})

	// Group deletes take group entries only; global deletes global ones only.
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/unsubscribes-groups/recipients-delete?id=%d", globalIDs[0]), acct: &acct}).expect(t, 404, notFound)
	a.do(req{method: "POST", path: "/api/unsubscribes-groups/recipients-bulk-delete", acct: &acct,
		body: url.Values{"strIds[0]": {fmt.Sprint(globalIDs[0])}}}).expect(t, 404, notFound)
	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/global-unsubscribes/delete?id=%d", ids[0]), acct: &acct}).expect(t, 404, notFound)
	a.do(req{method: "POST", path: "/api/global-unsubscribes/bulk-delete", acct: &acct,
		body: url.Values{"strIds[0]": {fmt.Sprint(ids[0])}}}).expect(t, 404, notFound)

	del := req{method: "DELETE", path: fmt.Sprintf("/api/unsubscribes-groups/recipients-delete?id=%d", ids[0]), acct: &acct}
	a.do(del).expect(t, 200, deletedOK)
	a.do(del).expect(t, 404, notFound)
	bulk := func(body any) response {
		return a.do(req{method: "POST", path: "/api/unsubscribes-groups/recipients-bulk-delete", acct: &acct, body: body})
	}
	// All or nothing: the deleted id refuses the lot.
	bulk(url.Values{"strIds[0]": {fmt.Sprint(ids[1])}, "strIds[1]": {fmt.Sprint(ids[0])}}).expect(t, 404, notFound)
	a.do(recipients).expectNormalized(t, 200, listOf("recipients", "", rows[1:]...))
	bulk(multipartBody{"strIds[0]": fmt.Sprint(ids[1])}).expect(t, 200, deletedOK)
	bulk(jsonBody(fmt.Sprintf(`{"strIds":[%d,"%d"]}`, ids[2], otherIDs[0]))).expect(t, 200, deletedOK)
	bulk(url.Values{"strIds[]": {fmt.Sprint(ids[3])}}).expect(t, 200, deletedOK)
	a.do(recipients).expect(t, 200, `{"status":"success","message":{"recipients":[]}}`)
	// The global entry is untouched.
	a.do(req{method: "GET", path: globalList, acct: &acct}).expectNormalized(t, 200,
		listOf("unSubscribers", "", unsubRow(globalIDs[0], acct.id, 0, "ann@example.com")))
}

func TestGroupRecipientValidation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	g := seedGroup(t, a, acct, "News")
	gid := fmt.Sprint(g.ID)
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		code   int
		want   string
	}{
		{"add nothing", "POST", "/api/unsubscribes-groups/manually-add", url.Values{}, 422,
			`{"status":"failed","errors":{"unsubscribe_groups_id":["The unsubscribe groups id field is required."],"email_address":["The email address field is required."]}}`},
		{"add without address", "POST", "/api/unsubscribes-groups/manually-add", multipartBody{"unsubscribe_groups_id": gid}, 422,
			`{"status":"failed","errors":{"email_address":["The email address field is required."]}}`},
		{"add bad address saves nothing", "POST", "/api/unsubscribes-groups/manually-add",
			jsonBody(`{"unsubscribe_groups_id":` + gid + `,"email_address":"new@example.com,@example.com"}`), 422,
			`{"status":"failed","errors":{"email_address":["The email address \"@example.com\" is not a valid email address."]}}`},
		{"add non-numeric group", "POST", "/api/unsubscribes-groups/manually-add",
			url.Values{"unsubscribe_groups_id": {"news"}, "email_address": {"new@example.com"}}, 422,
			`{"status":"failed","errors":{"unsubscribe_groups_id":["The unsubscribe groups id must be an integer."]}}`},
		{"add unknown group", "POST", "/api/unsubscribes-groups/manually-add",
			url.Values{"unsubscribe_groups_id": {"999999999"}, "email_address": {"new@example.com"}}, 404, notFound},

		{"list without group", "GET", "/api/unsubscribes-groups/recipients-list", nil, 422,
			`{"status":"failed","errors":{"groupId":["The group id field is required."]}}`},
		{"list non-numeric group", "GET", "/api/unsubscribes-groups/recipients-list?groupId=x", nil, 422,
			`{"status":"failed","errors":{"groupId":["The group id must be an integer."]}}`},
		{"list unknown group", "GET", "/api/unsubscribes-groups/recipients-list?groupId=999999999", nil, 404, notFound},
		{"list bad page", "GET", "/api/unsubscribes-groups/recipients-list?groupId=" + gid + "&page=x", nil, 422,
			`{"status":"failed","errors":{"page":["The page must be an integer."]}}`},

		{"delete without id", "DELETE", "/api/unsubscribes-groups/recipients-delete", nil, 422,
			`{"status":"failed","errors":{"id":["The id field is required."]}}`},
		{"delete unknown id", "DELETE", "/api/unsubscribes-groups/recipients-delete?id=999999999", nil, 404, notFound},
		{"bulk without ids", "POST", "/api/unsubscribes-groups/recipients-bulk-delete", jsonBody(`{"strIds":[]}`), 422,
			`{"status":"failed","errors":{"strIds":["The str ids field is required."]}}`},
		{"bulk non-numeric", "POST", "/api/unsubscribes-groups/recipients-bulk-delete", url.Values{"strIds[0]": {"0"}}, 422,
			`{"status":"failed","errors":{"strIds":["The str ids must be an array of integers."]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.do(req{method: tt.method, path: tt.path, acct: &acct, body: tt.body}).expect(t, tt.code, tt.want)
		})
	}
	a.do(req{method: "GET", path: "/api/unsubscribes-groups/recipients-list?groupId=" + gid, acct: &acct}).
		expect(t, 200, `{"status":"success","message":{"recipients":[]}}`)
	a.do(req{method: "GET", path: globalList, acct: &acct}).expect(t, 200, `{"status":"success","message":{"unSubscribers":[]}}`)
	sameStrings(t, "events", unsubEvents(t, acct), nil)
}

// Account B gets the not-found answer for A's ids on every route, never
// sees A's rows, and keeps lists of its own.
func TestSuppressionIsolation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	owner, intruder := a.account(), a.account()
	g := seedGroup(t, a, owner, "News")
	gid := fmt.Sprint(g.ID)
	a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &owner,
		body: url.Values{"email_address": {"ann@example.com"}}}).expect(t, 200, addedOK)
	a.do(req{method: "POST", path: "/api/unsubscribes-groups/manually-add", acct: &owner,
		body: url.Values{"unsubscribe_groups_id": {gid}, "email_address": {"bob@example.com"}}}).expect(t, 200, addedOK)
	global := listIDs(t, a.do(req{method: "GET", path: globalList, acct: &owner}), "unSubscribers")[0]
	member := listIDs(t, a.do(req{method: "GET", path: "/api/unsubscribes-groups/recipients-list?groupId=" + gid, acct: &owner}), "recipients")[0]
	ownerBodies := func() []string {
		var out []string
		for _, p := range []string{globalList, "/api/unsubscribes-groups", "/api/unsubscribes-groups/details?id=" + gid,
			"/api/unsubscribes-groups/recipients-list?groupId=" + gid} {
			out = append(out, a.do(req{method: "GET", path: p, acct: &owner}).body)
		}
		return out
	}
	before := ownerBodies()

	for _, r := range []req{
		{method: "DELETE", path: fmt.Sprintf("/api/global-unsubscribes/delete?id=%d", global)},
		{method: "POST", path: "/api/global-unsubscribes/bulk-delete", body: url.Values{"strIds[0]": {fmt.Sprint(global)}}},
		{method: "GET", path: "/api/unsubscribes-groups/details?id=" + gid},
		{method: "POST", path: "/api/unsubscribes-groups/update?id=" + gid,
			body: url.Values{"group_name": {"Stolen"}, "description": {"D"}, "is_display": {"0"}}},
		{method: "POST", path: "/api/unsubscribes-groups/manually-add",
			body: url.Values{"unsubscribe_groups_id": {gid}, "email_address": {"eve@example.com"}}},
		{method: "GET", path: "/api/unsubscribes-groups/recipients-list?groupId=" + gid},
		{method: "DELETE", path: fmt.Sprintf("/api/unsubscribes-groups/recipients-delete?id=%d", member)},
		{method: "POST", path: "/api/unsubscribes-groups/recipients-bulk-delete", body: url.Values{"strIds[0]": {fmt.Sprint(member)}}},
	} {
		r.acct = &intruder
		a.do(r).expect(t, 404, notFound)
	}
	a.do(req{method: "GET", path: globalList, acct: &intruder}).expect(t, 200, `{"status":"success","message":{"unSubscribers":[]}}`)
	a.do(req{method: "GET", path: "/api/unsubscribes-groups", acct: &intruder}).expect(t, 200, `{"status":"success","message":{"unsubscribesGroups":[]}}`)

	// B's own entry for the same address is B's alone.
	a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &intruder,
		body: url.Values{"email_address": {"ANN@example.com"}}}).expect(t, 200, addedOK)
	mine := listIDs(t, a.do(req{method: "GET", path: globalList, acct: &intruder}), "unSubscribers")
	a.do(req{method: "GET", path: globalList, acct: &intruder}).expectNormalized(t, 200,
		listOf("unSubscribers", "", unsubRow(mine[0], intruder.id, 0, "ANN@example.com")))
	sameStrings(t, "intruder events", unsubEvents(t, intruder), []string{unsubEvent(mine[0], 0, "ANN@example.com")})
	sameStrings(t, "owner's lists", ownerBodies(), before)
}

// Concurrent saves of the same addresses, in any order, add each once with
// one event, and never deadlock.
func TestConcurrentUnsubscribes(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	const rounds, n = 5, 200
	for round := 0; round < rounds; round++ {
		fwd, rev := make([]string, n), make([]string, n)
		for i := range n {
			fwd[i] = fmt.Sprintf("r%d-u%03d@example.com", round, i)
			rev[n-1-i] = fwd[i]
		}
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			list := fwd
			if w%2 == 1 {
				list = rev
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &acct,
					body: url.Values{"email_address": {strings.Join(list, ",")}}})
				if r.code != 200 {
					t.Errorf("%d %s", r.code, r.body)
				}
			}()
		}
		wg.Wait()
	}
	var rows, events int
	err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM unsubscribes WHERE user_id = $1),
		(SELECT count(*) FROM events WHERE user_id = $1 AND kind = 'address.unsubscribed')`, acct.id).Scan(&rows, &events)
	if err != nil || rows != rounds*n || events != rounds*n {
		t.Fatalf("%v: %d rows, %d events", err, rows, events)
	}
}

// An unpaged list streams every row as one valid body.
func TestUnsubscribeListStreams(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	g := seedGroup(t, a, acct, "Big")
	_, err := testdb.New(t).Pool.Exec(context.Background(), `INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address)
		SELECT $1, CASE WHEN n % 2 = 0 THEN $2::bigint END, 'u' || n || '@example.com' FROM generate_series(1, 6000) n`, acct.id, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		path, key, first string
	}{
		{globalList, "unSubscribers", "u1@example.com"},
		{fmt.Sprintf("/api/unsubscribes-groups/recipients-list?groupId=%d", g.ID), "recipients", "u2@example.com"},
	} {
		r := a.do(req{method: "GET", path: p.path, acct: &acct})
		var v struct {
			Status  string
			Message map[string][]struct {
				EmailAddress string `json:"email_address"`
			}
		}
		if err := json.Unmarshal([]byte(r.body), &v); err != nil || r.code != 200 {
			t.Fatalf("%s: %d %v %.200s", p.path, r.code, err, r.body)
		}
		if got := v.Message[p.key]; len(got) != 3000 || got[0].EmailAddress != p.first {
			t.Fatalf("%s: %d rows, first %+v", p.path, len(got), got[:min(1, len(got))])
		}
	}
}
