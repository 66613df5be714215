package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/testdb"
)

// A scalar field sent as an array or an object, in JSON ({"k":[1]},
// {"k":{…}}, even empty) or as k[] / k[0] / k[a] in a url-encoded or
// multipart form, is refused on that field rather than dropped: it was
// read as absent, so {"unsubscribe_group_id":[1]} made an automation
// without a group and {"template_html":{"a":"b"}} a schedule of the blank
// design. The message takes the place of whatever the parser said of the
// field; the other fields' problems stay.
func TestScalarFieldSentAsArray(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	utr, _ := f.createAutomation(t, f.automationForm())
	fail := func(fields string) string { return `{"status":"failed","errors":{` + fields + `}}` }
	groupInt := fail(`"unsubscribe_group_id":["The unsubscribe group id must be an integer."]`)
	target := fmt.Sprintf("contacts_%d", f.typ)
	schedule := func(field, v string) jsonBody {
		return jsonBody(fmt.Sprintf(`{"utr":%q,"sender_id":%d,"subject":"S","waiting_type":"days",%q:%s}`, utr, f.sender, field, v))
	}
	for _, tc := range []struct {
		name, path string
		body       any
		want       string
	}{
		// The two of the report.
		{"group as a JSON array", "/api/automations/create",
			jsonBody(`{"automation_name":"A","automation_for":"` + target + `","unsubscribe_group_id":[1]}`), groupInt},
		{"html as a JSON object", "/api/automations/schedule/create", schedule("template_html", `{"a":"b"}`),
			fail(`"template_html":["The template html must be a string."]`)},
		// Every shape and encoding.
		{"group as an empty array", "/api/automations/create",
			jsonBody(`{"automation_name":"A","automation_for":"` + target + `","unsubscribe_group_id":[]}`), groupInt},
		{"group as an empty object", "/api/automations/create",
			jsonBody(`{"automation_name":"A","automation_for":"` + target + `","unsubscribe_group_id":{}}`), groupInt},
		{"group[]", "/api/automations/create",
			url.Values{"automation_name": {"A"}, "automation_for": {target}, "unsubscribe_group_id[]": {fmt.Sprint(f.group)}}, groupInt},
		{"group[0] beside a scalar", "/api/automations/create", url.Values{"automation_name": {"A"}, "automation_for": {target},
			"unsubscribe_group_id": {fmt.Sprint(f.group)}, "unsubscribe_group_id[0]": {fmt.Sprint(f.group)}}, groupInt},
		{"group[a] multipart", "/api/automations/create",
			multipartBody{"automation_name": "A", "automation_for": target, "unsubscribe_group_id[a]": fmt.Sprint(f.group)}, groupInt},
		{"json as an array", "/api/automations/schedule/create", schedule("template_json", `["{}"]`),
			fail(`"template_json":["The template json must be a string."]`)},
		{"html[] multipart", "/api/automations/schedule/create", multipartBody{"utr": utr, "sender_id": fmt.Sprint(f.sender),
			"subject": "S", "waiting_type": "days", "template_html[]": "<p>x</p>"}, fail(`"template_html":["The template html must be a string."]`)},
		{"period as an array", "/api/automations/schedule/create", schedule("waiting_period", `[2]`),
			fail(`"waiting_period":["The waiting period must be an integer."]`)},
		// In the parser's place, instead of its required message, among
		// the others.
		{"required fields as arrays", "/api/automations/schedule/create",
			jsonBody(`{"utr":["` + utr + `"],"sender_id":[1],"subject":{"a":"b"},"waiting_type":[]}`),
			fail(`"utr":["The utr must be a string."],"sender_id":["The sender id must be an integer."],` +
				`"subject":["The subject must be a string."],"waiting_type":["The waiting type must be a string."]`)},
		{"name as an array", "/api/automations/create", jsonBody(`{"automation_name":["A"],"type":"drip"}`),
			fail(`"automation_name":["The automation name must be a string."],"type":["The selected type is invalid."]`)},
		// The other routes that read scalars.
		{"contact email", "/api/contacts/add", jsonBody(`{"email":["a@b.co"]}`),
			fail(`"contact_type_id":["The contact type id field is required."],"email":["The email must be a string."],` +
				`"country":["The country field is required."]`)},
		{"contact first name", "/api/contacts/add", url.Values{"contact_type_id": {fmt.Sprint(f.typ)}, "email": {"a@b.co"},
			"country": {"276"}, "first_name[]": {"Ann"}}, fail(`"first_name":["The first name must be a string."]`)},
		{"contact custom value", "/api/contacts/add", jsonBody(fmt.Sprintf(
			`{"contact_type_id":%d,"email":"a@b.co","country":276,"custom_field":{"age":[3]}}`, f.typ)),
			fail(`"custom_field.age":["The age must be a string."]`)},
		{"contact custom value, empty object", "/api/contacts/add", jsonBody(fmt.Sprintf(
			`{"contact_type_id":%d,"email":"a@b.co","country":276,"custom_field":{"age":{}}}`, f.typ)),
			fail(`"custom_field.age":["The age must be a string."]`)},
		{"contact custom value[]", "/api/contacts/add", url.Values{"contact_type_id": {fmt.Sprint(f.typ)}, "email": {"a@b.co"},
			"country": {"276"}, "custom_field[age][]": {"3"}}, fail(`"custom_field.age":["The age must be a string."]`)},
		{"contact id", "/api/contacts/update", url.Values{"contact_id[]": {"1"}, "contact_type_id": {fmt.Sprint(f.typ)},
			"email": {"a@b.co"}, "country": {"276"}}, fail(`"contact_id":["The contact id must be an integer."]`)},
		{"contact type name", "/api/contacts-type/add", jsonBody(`{"name":["Buyers"]}`), fail(`"name":["The name must be a string."]`)},
		{"contact type id", "/api/contacts-type/update", url.Values{"id[0]": {fmt.Sprint(f.typ)}, "name": {"Buyers"}},
			fail(`"id":["The id must be an integer."]`)},
		{"custom field type", "/api/custom-fields/save", url.Values{"field_name": {"shoe"}, "field_type[]": {"text"}},
			fail(`"field_type":["The field type must be a string."]`)},
		{"notification owner", "/api/notification-recipient/save", jsonBody(`{"email_address":"a@b.co","email_owner":{"n":"Ann"}}`),
			fail(`"email_owner":["The email owner must be a string."]`)},
		{"group display flag", "/api/unsubscribes-groups/save", url.Values{"group_name": {"G"}, "description": {"D"}, "is_display[0]": {"1"}},
			fail(`"is_display":["The is display field must be true or false."]`)},
		{"group recipients' group", "/api/unsubscribes-groups/manually-add", jsonBody(fmt.Sprintf(
			`{"unsubscribe_groups_id":[%d],"email_address":"a@b.co"}`, f.group)),
			fail(`"unsubscribe_groups_id":["The unsubscribe groups id must be an integer."]`)},
		{"segment name", "/api/segment/save", jsonBody(fmt.Sprintf(
			`{"contact_type_id":%d,"segment_name":["S"],"select_field":["2"],"select_operator":["is"],"value":["Ann"]}`, f.typ)),
			fail(`"segment_name":["The segment name must be a string."]`)},
		{"segment recipient email", "/api/segment/email/store", url.Values{"segment_id": {fmt.Sprint(f.segment)},
			"first_name": {"A"}, "last_name": {"B"}, "email[]": {"a@b.co"}}, fail(`"email":["The email must be a string."]`)},
		{"sender country", "/api/sender/save", jsonBody(`{"from_name":"A","from_email":"a@b.co","reply_to_email":"a@b.co",` +
			`"country_id":[276],"company_address":"Street 1","nickname":"a"}`), fail(`"country_id":["The country id must be an integer."]`)},
		{"send schedule type", "/api/single/send/create", func() url.Values {
			v := f.form()
			v.Del("schedule_type")
			v.Set("schedule_type[]", "0")
			return v
		}(), fail(`"schedule_type":["The schedule type field must be true or false."]`)},
		{"send html", "/api/single/send/create", jsonBody(fmt.Sprintf(`{"single_send_name":"W","sender_id":%d,"subject":"S",`+
			`"preheader":"P","unsubscribe_group_id":%d,"schedule_type":0,"recipient_id":[%q],"template_html":{"a":"b"}}`,
			f.sender, f.group, target)), fail(`"template_html":["The template html must be a string."]`)},
		{"send recipient object's table as an array", "/api/single/send/create", jsonBody(fmt.Sprintf(
			`{"single_send_name":"W","sender_id":%d,"subject":"S","preheader":"P","unsubscribe_group_id":%d,"schedule_type":0,`+
				`"recipient_id":[{"id":"%d","table":["contacts_"]}]}`, f.sender, f.group, f.typ)),
			fail(`"recipient_id":["The selected recipient id is invalid."]`)},
		{"send update utr", "/api/single/send/update", func() url.Values {
			v := f.form()
			v.Set("utr[0]", utr)
			return v
		}(), fail(`"utr":["The utr must be a string."]`)},
		{"send duplicate utr", "/api/single/send/duplicate", url.Values{"utr[]": {utr}}, fail(`"utr":["The utr must be a string."]`)},
		{"csv upload type, url-encoded", "/api/contacts/upload-csv", url.Values{"contact_type_id[]": {fmt.Sprint(f.typ)}},
			fail(`"contact_type_id":["The contact type id must be an integer."],"file":["The file field is required."]`)},
		{"csv upload type, multipart", "/api/contacts/upload-csv", fileBody{fields: map[string]string{"contact_type_id[]": fmt.Sprint(f.typ)},
			filename: "c.csv", content: "email\na@b.co\n"}, fail(`"contact_type_id":["The contact type id must be an integer."]`)},
	} {
		if r := f.a.do(req{method: "POST", path: tc.path, acct: &f.acct, body: tc.body}); r.code != 422 || r.body != tc.want {
			t.Errorf("%s: got %d %.400s\nwant 422 %s", tc.name, r.code, r.body, tc.want)
		}
	}
	var n int
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM automations WHERE user_id = $1)
		+ (SELECT count(*) FROM automation_schedules WHERE user_id = $1) + (SELECT count(*) FROM contacts WHERE user_id = $1)
		+ (SELECT count(*) FROM single_sends WHERE user_id = $1) + (SELECT count(*) FROM custom_fields WHERE user_id = $1)
		+ (SELECT count(*) FROM notification_recipients WHERE user_id = $1)`, f.acct.id).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d records stored by refusals, want the fixture's automation (%v)", n, err)
	}
}
