package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

const notificationList = "/api/notification-recipients"

func notificationRow(id, userID int64, email, owner string) string {
	return fmt.Sprintf(`{"id":%d,"user_id":%d,"email_address":%q,"email_owner":%q,"created_at":"<timestamp>","updated_at":"<timestamp>"}`,
		id, userID, email, owner)
}

func TestNotificationRecipients(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	list := req{method: "GET", path: notificationList, acct: &acct}
	a.do(list).expect(t, 200, `{"status":"success","message":{"notifications":[]}}`)

	save := func(body any) {
		t.Helper()
		a.do(req{method: "POST", path: "/api/notification-recipient/save", acct: &acct, body: body}).expect(t, 200, addedOK)
	}
	save(multipartBody{"email_address": " ops@example.com ", "email_owner": " Ops "})
	save(url.Values{"email_address": {"Ceo@Example.com"}, "email_owner": {"Chief"}})
	save(jsonBody(`{"email_address":"dev@example.com","email_owner":"Dev team"}`))
	ids := listIDs(t, a.do(list), "notifications")
	if len(ids) != 3 || ids[0] >= ids[1] || ids[1] >= ids[2] {
		t.Fatalf("ids %v", ids)
	}
	rows := []string{
		notificationRow(ids[0], acct.id, "ops@example.com", "Ops"),
		notificationRow(ids[1], acct.id, "Ceo@Example.com", "Chief"),
		notificationRow(ids[2], acct.id, "dev@example.com", "Dev team"),
	}
	a.do(list).expectNormalized(t, 200, listOf("notifications", "", rows...))

	// An address the account has already (any case) is not added twice:
	// that recipient takes the new spelling and owner.
	save(url.Values{"email_address": {"CEO@example.com"}, "email_owner": {"Chief Executive"}})
	rows[1] = notificationRow(ids[1], acct.id, "CEO@example.com", "Chief Executive")
	a.do(list).expectNormalized(t, 200, listOf("notifications", "", rows...))

	a.do(req{method: "GET", path: notificationList + "?page=1&per_page=2", acct: &acct}).expectNormalized(t, 200,
		listOf("notifications", `,"pagination":{"page":1,"per_page":2,"total":3}`, rows[0], rows[1]))

	del := req{method: "DELETE", path: fmt.Sprintf("/api/notification-recipient/delete?id=%d", ids[0]), acct: &acct}
	a.do(del).expect(t, 200, deletedOK)
	a.do(del).expect(t, 404, notFound)
	bulk := func(body any) response {
		return a.do(req{method: "POST", path: "/api/notification-recipient/bulk-delete", acct: &acct, body: body})
	}
	// All or nothing: the deleted id refuses the lot.
	bulk(url.Values{"strIds[0]": {fmt.Sprint(ids[1])}, "strIds[1]": {fmt.Sprint(ids[0])}}).expect(t, 404, notFound)
	a.do(list).expectNormalized(t, 200, listOf("notifications", "", rows[1:]...))
	bulk(multipartBody{"strIds[0]": fmt.Sprint(ids[1])}).expect(t, 200, deletedOK)
	bulk(jsonBody(fmt.Sprintf(`{"strIds":["%d"]}`, ids[2]))).expect(t, 200, deletedOK)
	a.do(list).expect(t, 200, `{"status":"success","message":{"notifications":[]}}`)
	save(url.Values{"email_address": {"ops@example.com"}, "email_owner": {"Ops"}})
	a.do(req{method: "POST", path: "/api/notification-recipient/bulk-delete", acct: &acct,
		body: url.Values{"strIds[]": {fmt.Sprint(listIDs(t, a.do(list), "notifications")[0])}}}).expect(t, 200, deletedOK)
}

func TestNotificationRecipientValidation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		code   int
		want   string
	}{
		{"save nothing", "POST", "/api/notification-recipient/save", url.Values{}, 422,
			`{"email_address":["The email address field is required."],"email_owner":["The name field is required"]}`},
		{"save without owner", "POST", "/api/notification-recipient/save", multipartBody{"email_address": "ops@example.com"}, 422,
			`{"email_owner":["The name field is required"]}`},
		{"save blank owner", "POST", "/api/notification-recipient/save", jsonBody(`{"email_address":"ops@example.com","email_owner":"  "}`), 422,
			`{"email_owner":["The name field is required"]}`},
		{"save without address", "POST", "/api/notification-recipient/save", url.Values{"email_owner": {"Ops"}}, 422,
			`{"email_address":["The email address field is required."]}`},
		{"save bad address", "POST", "/api/notification-recipient/save", url.Values{"email_address": {"ops"}, "email_owner": {"Ops"}}, 422,
			`{"email_address":["The email address must be a valid email address."]}`},
		{"save long owner", "POST", "/api/notification-recipient/save",
			url.Values{"email_address": {"ops@example.com"}, "email_owner": {strings.Repeat("o", 256)}}, 422,
			`{"email_owner":["The name may not be greater than 255 characters."]}`},
		{"delete without id", "DELETE", "/api/notification-recipient/delete", nil, 422,
			`{"id":["The id field is required."]}`},
		{"delete non-numeric id", "DELETE", "/api/notification-recipient/delete?id=-1", nil, 422,
			`{"id":["The id must be an integer."]}`},
		{"bulk without ids", "POST", "/api/notification-recipient/bulk-delete", multipartBody{}, 422,
			`{"strIds":["The str ids field is required."]}`},
		{"bulk non-numeric", "POST", "/api/notification-recipient/bulk-delete", jsonBody(`{"strIds":["x"]}`), 422,
			`{"strIds":["The str ids must be an array of integers."]}`},
		{"list bad page", "GET", notificationList + "?per_page=x", nil, 422,
			`{"per_page":["The per page must be an integer."]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.do(req{method: tt.method, path: tt.path, acct: &acct, body: tt.body}).
				expect(t, tt.code, `{"status":"failed","errors":`+tt.want+`}`)
		})
	}
	a.do(req{method: "DELETE", path: "/api/notification-recipient/delete?id=999999999", acct: &acct}).expect(t, 404, notFound)
	a.do(req{method: "POST", path: "/api/notification-recipient/bulk-delete", acct: &acct,
		body: url.Values{"strIds[0]": {"999999999"}}}).expect(t, 404, notFound)
	a.do(req{method: "GET", path: notificationList, acct: &acct}).expect(t, 200, `{"status":"success","message":{"notifications":[]}}`)
}

func TestNotificationRecipientIsolation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	owner, intruder := a.account(), a.account()
	a.do(req{method: "POST", path: "/api/notification-recipient/save", acct: &owner,
		body: url.Values{"email_address": {"ops@example.com"}, "email_owner": {"Ops"}}}).expect(t, 200, addedOK)
	id := listIDs(t, a.do(req{method: "GET", path: notificationList, acct: &owner}), "notifications")[0]

	a.do(req{method: "DELETE", path: fmt.Sprintf("/api/notification-recipient/delete?id=%d", id), acct: &intruder}).expect(t, 404, notFound)
	a.do(req{method: "POST", path: "/api/notification-recipient/bulk-delete", acct: &intruder,
		body: url.Values{"strIds[0]": {fmt.Sprint(id)}}}).expect(t, 404, notFound)
	a.do(req{method: "GET", path: notificationList, acct: &intruder}).expect(t, 200, `{"status":"success","message":{"notifications":[]}}`)

	// The same address is a separate recipient of B's; saving it leaves A's alone.
	a.do(req{method: "POST", path: "/api/notification-recipient/save", acct: &intruder,
		body: url.Values{"email_address": {"OPS@example.com"}, "email_owner": {"Mine"}}}).expect(t, 200, addedOK)
	mine := listIDs(t, a.do(req{method: "GET", path: notificationList, acct: &intruder}), "notifications")
	a.do(req{method: "GET", path: notificationList, acct: &intruder}).expectNormalized(t, 200,
		listOf("notifications", "", notificationRow(mine[0], intruder.id, "OPS@example.com", "Mine")))
	a.do(req{method: "GET", path: notificationList, acct: &owner}).expectNormalized(t, 200,
		listOf("notifications", "", notificationRow(id, owner.id, "ops@example.com", "Ops")))
}
