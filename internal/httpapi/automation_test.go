package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/racetest"
	"github.com/mailroom/mailroom/internal/testdb"
)

const publicURL = "https://mail.example.com"

// autoFixture is a send fixture (a verified sender, a group, two contact
// types, a segment) whose router records the AutomationLive hook.
type autoFixture struct {
	*sendFixture
	live *recorder[int64] // the AutomationLive hook's calls
}

func newAutoFixture(t *testing.T, cfg httpapi.Config) *autoFixture {
	t.Helper()
	f := &autoFixture{sendFixture: &sendFixture{queued: &dispatches{}}, live: &recorder[int64]{}}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes, cfg.MaxUploadBytes = 4<<20, 4<<20
	}
	cfg.PublicURL = publicURL
	f.a = newAPIWith(t, cfg, func(d *httpapi.Deps) {
		d.AutomationLive = func(_ context.Context, id int64) error { return f.live.add(id) }
	})
	f.acct = f.a.account()
	f.sender, f.senderJSON = seedSender(t, f.acct, true)
	f.group = seedGroup(t, f.a, f.acct, "News").ID
	f.typ, f.typ2 = seedType(t, f.acct, "Customers"), seedType(t, f.acct, "Leads")
	f.segment = seedSegment(t, f.acct, f.typ)
	return f
}

func (f *autoFixture) automationForm() url.Values {
	return url.Values{"type": {"custom"}, "unsubscribe_group_id": {fmt.Sprint(f.group)},
		"automation_for": {fmt.Sprintf("segments_%d", f.segment)}, "automation_name": {"Onboarding"}, "exit_criteria": {"1"}}
}

// createAutomation posts body and returns the new automation's utr and id.
func (f *autoFixture) createAutomation(t *testing.T, body any) (string, int64) {
	t.Helper()
	r := f.a.do(req{method: "POST", path: "/api/automations/create", acct: &f.acct, body: body})
	m := utrRE.FindStringSubmatch(r.body)
	if r.code != 200 || m == nil {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	return m[1], automationRow(t, m[1]).id
}

func (f *autoFixture) scheduleForm(utr string) url.Values {
	return url.Values{"utr": {utr}, "sender_id": {fmt.Sprint(f.sender)}, "subject": {"Welcome ((first_name))"},
		"waiting_period": {"2"}, "waiting_type": {"days"}, "template_id": {"2"}, "preview_img": {"x.png"},
		"template_html": {"<p>Hi ((first_name))</p>"}, "template_json": {`{"a":1}`}}
}

func (f *autoFixture) addSchedule(t *testing.T, body any) {
	t.Helper()
	f.a.do(req{method: "POST", path: "/api/automations/schedule/create", acct: &f.acct, body: body}).
		expect(t, 200, `{"status":"success","message":"Schedule Added"}`)
}

// storedAutomation is what the tests read of an automation's row.
type storedAutomation struct {
	id      int64
	status  int16
	live    bool
	deleted bool
}

func automationRow(t *testing.T, utr string) storedAutomation {
	t.Helper()
	var a storedAutomation
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT id, status, live_at IS NOT NULL, deleted_at IS NOT NULL
		FROM automations WHERE utr = $1::uuid`, utr).Scan(&a.id, &a.status, &a.live, &a.deleted); err != nil {
		t.Fatalf("automation %s: %v", utr, err)
	}
	return a
}

// events returns the kinds of the account's events about automation id.
func automationEvents(t *testing.T, id int64) []string {
	t.Helper()
	rows, err := testdb.New(t).Pool.Query(context.Background(), `SELECT kind || ' ' || payload::text FROM events
		WHERE subject_type = 'automation' AND subject_id = $1 ORDER BY id`, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	if rows.Close(); rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return out
}

func automationJSON(id, user int64, utr, target string, targetID int64, name string, exit int, group string, typ, status int,
	liveAt string, count string) string {
	return fmt.Sprintf(`{"id":%d,"user_id":%d,"automation_for":%d,"automation_for_table":%q,"automation_name":%q,`+
		`"exit_criteria":%d,"unsubscribe_group_id":%s,"automation_type":%d,"utr":%q,"status":%d,"live_at":%s,`+
		`"total_triggered":0,"total_delivered":0,"total_unique_opens":0,"total_opens":0,"total_bounces":0,"total_unsubscribe":0,`+
		`"deleted_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>"%s}`,
		id, user, targetID, target, name, exit, group, typ, utr, status, liveAt, count)
}

func TestAutomationRequiredFields(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	for _, body := range []any{url.Values{}, multipartBody{}, jsonBody(`{}`), url.Values{"automation_name": {"  "}}} {
		f.a.do(req{method: "POST", path: "/api/automations/create", acct: &f.acct, body: body}).expect(t, 422,
			`{"status":"failed","errors":{"automation_name":["The automation name field is required."]}}`)
		f.a.do(req{method: "POST", path: "/api/automations/schedule/create", acct: &f.acct, body: body}).expect(t, 422,
			`{"status":"failed","errors":{"utr":["The utr field is required."],"sender_id":["The sender id field is required."],`+
				`"subject":["The subject field is required."],"waiting_type":["The waiting type field is required."]}}`)
	}
	// Only the name missing: the contract's documented failure.
	body := f.automationForm()
	body.Del("automation_name")
	f.a.do(req{method: "POST", path: "/api/automations/create", acct: &f.acct, body: body}).
		expect(t, 422, `{"status":"failed","errors":{"automation_name":["The automation name field is required."]}}`)
	// The name given, the target missing: its own required failure.
	body = f.automationForm()
	body.Del("automation_for")
	f.a.do(req{method: "POST", path: "/api/automations/create", acct: &f.acct, body: body}).
		expect(t, 422, `{"status":"failed","errors":{"automation_for":["The automation for field is required."]}}`)
	for _, path := range []string{"/api/automations/duplicate", "/api/automations/details", "/api/automations/set-live",
		"/api/automations/pause", "/api/automations/schedule"} {
		f.a.do(req{method: "GET", path: path, acct: &f.acct}).
			expect(t, 422, `{"status":"failed","errors":{"utr":["The utr field is required."]}}`)
	}
	for _, path := range []string{"/api/automations/delete", "/api/automations/schedule/delete"} {
		f.a.do(req{method: "DELETE", path: path, acct: &f.acct}).
			expect(t, 422, `{"status":"failed","errors":{"utr":["The utr field is required."]}}`)
	}
	f.a.do(req{method: "POST", path: "/api/automations/bulk-delete", acct: &f.acct}).
		expect(t, 422, `{"status":"failed","errors":{"strIds":["The str ids field is required."]}}`)
}

func TestAutomationCreateAndRead(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	utr, id := f.createAutomation(t, multipartBody(flat(f.automationForm())))
	if a := automationRow(t, utr); a.status != 0 || a.live {
		t.Fatalf("stored %+v, want a draft without live_at", a)
	}
	group := fmt.Sprintf(`"%d"`, f.group)
	want := automationJSON(id, f.acct.id, utr, "segments_", f.segment, "Onboarding", 1, group, 2, 0, "null", "")
	f.a.do(req{method: "GET", path: "/api/automations/details?utr=" + utr, acct: &f.acct}).
		expectNormalized(t, 200, `{"status":"success","message":{"automation":`+want+`}}`)

	// Defaults: welcome, exit criteria 0, no group (null), a contact type
	// as JSON.
	utr2, id2 := f.createAutomation(t, jsonBody(fmt.Sprintf(`{"automation_for":"contacts_%d","automation_name":"Hello"}`, f.typ)))
	want2 := automationJSON(id2, f.acct.id, utr2, "contacts_", f.typ, "Hello", 0, "null", 1, 0, "null", "")
	f.a.do(req{method: "GET", path: "/api/automations/details?utr=" + strings.ToUpper(utr2), acct: &f.acct}).
		expectNormalized(t, 200, `{"status":"success","message":{"automation":`+want2+`}}`)

	f.addSchedule(t, f.scheduleForm(utr))
	f.addSchedule(t, f.scheduleForm(utr))
	list := `{"status":"success","message":{"automations":[` +
		strings.TrimSuffix(want, "}") + `,"automation_schedule_count":2},` +
		strings.TrimSuffix(want2, "}") + `,"automation_schedule_count":0}]}}`
	f.a.do(req{method: "GET", path: "/api/automations", acct: &f.acct}).expectNormalized(t, 200, list)
	f.a.do(req{method: "GET", path: "/api/automations?per_page=1&page=2", acct: &f.acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"automations":[`+strings.TrimSuffix(want2, "}")+`,"automation_schedule_count":0}],`+
			`"pagination":{"page":2,"per_page":1,"total":2}}}`)

	// Another account sees none of it.
	intruder := f.a.account()
	f.a.do(req{method: "GET", path: "/api/automations", acct: &intruder}).expect(t, 200, `{"status":"success","message":{"automations":[]}}`)
	nf := `{"status":"failed","errors":"Record Not Found"}`
	nfLower := `{"status":"failed","errors":"Record not found"}`
	f.a.do(req{method: "GET", path: "/api/automations/details?utr=" + utr, acct: &intruder}).expect(t, 404, nf)
	f.a.do(req{method: "GET", path: "/api/automations/duplicate?utr=" + utr, acct: &intruder}).expect(t, 404, nf)
	f.a.do(req{method: "GET", path: "/api/automations/set-live?utr=" + utr, acct: &intruder}).expect(t, 404, nf)
	f.a.do(req{method: "GET", path: "/api/automations/pause?utr=" + utr, acct: &intruder}).expect(t, 404, nfLower)
	f.a.do(req{method: "GET", path: "/api/automations/schedule?utr=" + utr, acct: &intruder}).expect(t, 404, nfLower)
	f.a.do(req{method: "DELETE", path: "/api/automations/delete?utr=" + utr, acct: &intruder}).expect(t, 404, nfLower)
	f.a.do(req{method: "POST", path: "/api/automations/bulk-delete", acct: &intruder,
		body: url.Values{"strIds[0]": {fmt.Sprint(id)}}}).expect(t, 404, nfLower)
	g := &autoFixture{sendFixture: &sendFixture{a: f.a, acct: intruder}}
	g.sender, _ = seedSender(t, intruder, true)
	f.a.do(req{method: "POST", path: "/api/automations/schedule/create", acct: &intruder, body: g.scheduleForm(utr)}).expect(t, 404, nf)
	if a := automationRow(t, utr); a.deleted {
		t.Fatal("another account deleted the automation")
	}
	for _, u := range []string{"6f1c1a7e-0000-4000-8000-000000000000", "not-a-uuid"} {
		f.a.do(req{method: "GET", path: "/api/automations/details?utr=" + u, acct: &f.acct}).expect(t, 404, nf)
	}
}

func TestAutomationValidation(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	other := f.a.account()
	otherGroup := seedGroup(t, f.a, other, "Theirs").ID
	otherType := seedType(t, other, "Theirs")
	goneSegment := seedSegment(t, f.acct, f.typ)
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `UPDATE segments SET deleted_at = now() WHERE id = $1`, goneSegment); err != nil {
		t.Fatal(err)
	}
	// A type of the account whose id is not one of its live segments' (the
	// two sequences can meet).
	typeNotSegment := f.typ2
	for typeNotSegment == f.segment {
		typeNotSegment = seedType(t, f.acct, fmt.Sprintf("Leads %d", typeNotSegment))
	}
	invalid := func(field, msg string) string {
		return fmt.Sprintf(`{"status":"failed","errors":{%q:[%q]}}`, field, msg)
	}
	badTarget := invalid("automation_for", "The selected automation for is invalid.")
	for _, tc := range []struct {
		name, field, value, want string
	}{
		{"unknown type", "type", "drip", invalid("type", "The selected type is invalid.")},
		{"another account's group", "unsubscribe_group_id", fmt.Sprint(otherGroup),
			invalid("unsubscribe_group_id", "The selected unsubscribe group id is invalid.")},
		{"group not a number", "unsubscribe_group_id", "x", invalid("unsubscribe_group_id", "The unsubscribe group id must be an integer.")},
		{"another account's type", "automation_for", fmt.Sprintf("contacts_%d", otherType), badTarget},
		{"deleted segment", "automation_for", fmt.Sprintf("segments_%d", goneSegment), badTarget},
		{"a type as a segment", "automation_for", fmt.Sprintf("segments_%d", typeNotSegment), badTarget},
		{"unknown table", "automation_for", "lists_1", badTarget},
		{"exit criteria 2", "exit_criteria", "2", invalid("exit_criteria", "The selected exit criteria is invalid.")},
		{"long name", "automation_name", strings.Repeat("n", 256), invalid("automation_name", "The automation name may not be greater than 255 characters.")},
	} {
		body := f.automationForm()
		body.Set(tc.field, tc.value)
		if r := f.a.do(req{method: "POST", path: "/api/automations/create", acct: &f.acct, body: body}); r.code != 422 || r.body != tc.want {
			t.Errorf("%s: got %d %s\nwant 422 %s", tc.name, r.code, r.body, tc.want)
		}
	}
	var n int
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT count(*) FROM automations WHERE user_id = $1", f.acct.id).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d automations stored by failures (%v)", n, err)
	}

	// Schedules.
	utr, _ := f.createAutomation(t, f.automationForm())
	unverified, _ := seedSender(t, f.acct, false)
	otherSender, _ := seedSender(t, other, true)
	for _, tc := range []struct {
		name string
		c    map[string]string
		want string
	}{
		{"unverified sender", map[string]string{"sender_id": fmt.Sprint(unverified)}, invalid("sender_id", "The selected sender is not verified.")},
		{"another account's sender", map[string]string{"sender_id": fmt.Sprint(otherSender)}, invalid("sender_id", "The selected sender id is invalid.")},
		{"sender not a number", map[string]string{"sender_id": "1x"}, invalid("sender_id", "The sender id must be an integer.")},
		{"subject with a line break", map[string]string{"subject": "Hi\r\nBcc: x@example.com"},
			invalid("subject", "The subject may not contain line breaks or control characters.")},
		{"unknown waiting type", map[string]string{"waiting_type": "weeks"}, invalid("waiting_type", "The selected waiting type is invalid.")},
		{"zero days", map[string]string{"waiting_period": "0"}, invalid("waiting_period", "The waiting period must be between 1 and 3650.")},
		{"too many days", map[string]string{"waiting_period": "3651"}, invalid("waiting_period", "The waiting period must be between 1 and 3650.")},
		{"too many hours", map[string]string{"waiting_type": "hours", "waiting_period": "87601"},
			invalid("waiting_period", "The waiting period must be between 1 and 87600.")},
		{"period not a number", map[string]string{"waiting_period": "1.5"}, invalid("waiting_period", "The waiting period must be an integer.")},
		{"unknown template", map[string]string{"template_id": "99"}, invalid("template_id", "The selected template id is invalid.")},
		{"template not a number", map[string]string{"template_id": "two"}, invalid("template_id", "The template id must be an integer.")},
		{"large html", map[string]string{"template_html": strings.Repeat("x", 1<<20+1)},
			invalid("template_html", "The template html may not be larger than 1048576 bytes.")},
	} {
		body := f.scheduleForm(utr)
		for k, v := range tc.c {
			body.Set(k, v)
		}
		if r := f.a.do(req{method: "POST", path: "/api/automations/schedule/create", acct: &f.acct, body: body}); r.code != 422 || r.body != tc.want {
			t.Errorf("%s: got %d %.300s\nwant 422 %s", tc.name, r.code, r.body, tc.want)
		}
	}
	// Fields first, then the automation: an unknown utr is a 404.
	body := f.scheduleForm("6f1c1a7e-0000-4000-8000-000000000000")
	f.a.do(req{method: "POST", path: "/api/automations/schedule/create", acct: &f.acct, body: body}).
		expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	body.Set("subject", "")
	f.a.do(req{method: "POST", path: "/api/automations/schedule/create", acct: &f.acct, body: body}).
		expect(t, 422, `{"status":"failed","errors":{"subject":["The subject field is required."]}}`)
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT count(*) FROM automation_schedules WHERE user_id = $1", f.acct.id).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d schedules stored by failures (%v)", n, err)
	}

	// With ALLOW_UNVERIFIED_SENDERS an unverified sender may be used.
	g := newAutoFixture(t, httpapi.Config{AllowUnverifiedSenders: true})
	gutr, _ := g.createAutomation(t, g.automationForm())
	unverified, _ = seedSender(t, g.acct, false)
	sb := g.scheduleForm(gutr)
	sb.Set("sender_id", fmt.Sprint(unverified))
	g.addSchedule(t, sb)
}

var scheduleUTRRE = regexp.MustCompile(`"utr":"([0-9a-f-]{36})"`)

func TestAutomationSchedules(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	utr, id := f.createAutomation(t, f.automationForm())
	f.addSchedule(t, multipartBody(flat(f.scheduleForm(utr))))
	// The least: template 1 and its canvas, one instant mail.
	f.addSchedule(t, jsonBody(fmt.Sprintf(`{"utr":%q,"sender_id":%d,"subject":"Now","waiting_type":"instantly"}`, utr, f.sender)))

	r := f.a.do(req{method: "GET", path: "/api/automations/schedule?utr=" + utr, acct: &f.acct})
	m := scheduleUTRRE.FindAllStringSubmatch(r.body, -1)
	if r.code != 200 || len(m) != 2 {
		t.Fatalf("schedule list: %d %.300s", r.code, r.body)
	}
	var ids [2]int64
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT min(id), max(id) FROM automation_schedules WHERE automation_id = $1`,
		id).Scan(&ids[0], &ids[1]); err != nil {
		t.Fatal(err)
	}
	ts := design.Templates()
	blank, second := ts[0], ts[1]
	row := func(sid int64, sutr, subject string, period int, typ string, tmpl int64, preview, tjson, thtml, image string) string {
		j, h := jsonString(t, tjson), jsonString(t, thtml)
		return fmt.Sprintf(`{"id":%d,"user_id":%d,"automation_id":%d,"sender_id":%d,"template_id":%d,"subject":%q,`+
			`"waiting_period":%d,"waiting_type":%q,"utr":%q,"preview_img":%q,"template_json":%s,"template_html":%s,`+
			`"created_at":"<timestamp>","updated_at":"<timestamp>","design_url":%q,"image":%q}`,
			sid, f.acct.id, id, f.sender, tmpl, subject, period, typ, sutr, preview, j, h,
			publicURL+"/design/editor/"+sutr, publicURL+"/design/previews/"+image)
	}
	first := row(ids[0], m[0][1], "Welcome ((first_name))", 2, "days", 2, "x.png", `{"a":1}`, "<p>Hi ((first_name))</p>", second.Preview)
	want := `{"status":"success","message":{"automation_schedules":[` + first + `,` +
		row(ids[1], m[1][1], "Now", 1, "instantly", 1, blank.Preview, blank.JSON, blank.HTML, blank.Preview) + `]}}`
	if got := normalize(r.body); got != want {
		t.Fatalf("schedule list\ngot  %.600s\nwant %.600s", got, want)
	}
	f.a.do(req{method: "GET", path: "/api/automations/schedule?utr=" + utr + "&per_page=1", acct: &f.acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"automation_schedules":[`+first+`],"pagination":{"page":1,"per_page":1,"total":2}}}`)

	// Delete by the schedule's utr; an automation's utr names no schedule.
	nf := `{"status":"failed","errors":"Record not found"}`
	f.a.do(req{method: "DELETE", path: "/api/automations/schedule/delete?utr=" + utr, acct: &f.acct}).expect(t, 404, nf)
	intruder := f.a.account()
	f.a.do(req{method: "DELETE", path: "/api/automations/schedule/delete?utr=" + m[1][1], acct: &intruder}).expect(t, 404, nf)
	f.a.do(req{method: "DELETE", path: "/api/automations/schedule/delete?utr=" + m[1][1], acct: &f.acct}).
		expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	f.a.do(req{method: "DELETE", path: "/api/automations/schedule/delete?utr=" + m[1][1], acct: &f.acct}).expect(t, 404, nf)
	f.a.do(req{method: "GET", path: "/api/automations/schedule?utr=" + utr, acct: &f.acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"automation_schedules":[`+first+`]}}`)
	f.a.do(req{method: "GET", path: "/api/automations/schedule?utr=6f1c1a7e-0000-4000-8000-000000000000", acct: &f.acct}).expect(t, 404, nf)

	// At most MaxAutomationSchedules.
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `INSERT INTO automation_schedules (user_id, automation_id, utr,
		sender_id, template_id, subject, waiting_period, waiting_type)
		SELECT $1, $2, gen_random_uuid(), $3, 1, 's', 1, 'days' FROM generate_series(1, 99)`, f.acct.id, id, f.sender); err != nil {
		t.Fatal(err)
	}
	f.a.do(req{method: "POST", path: "/api/automations/schedule/create", acct: &f.acct, body: f.scheduleForm(utr)}).
		expect(t, 409, `{"status":"failed","errors":"An automation may not have more than 100 schedules."}`)
}

func TestAutomationSetLiveAndPause(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	noGroup := f.automationForm()
	noGroup.Del("unsubscribe_group_id")
	utr, id := f.createAutomation(t, noGroup)
	setLive := func(u string) response {
		return f.a.do(req{method: "GET", path: "/api/automations/set-live?utr=" + u, acct: &f.acct})
	}
	pause := func(u string) response {
		return f.a.do(req{method: "GET", path: "/api/automations/pause?utr=" + u, acct: &f.acct})
	}
	live := `{"status":"success","message":"Automation has been set live"}`
	paused := `{"status":"success","message":"Automation Paused Successfully"}`

	setLive(utr).expect(t, 409, `{"status":"failed","errors":"An unsubscribe group is required to live the automation."}`)
	pause(utr).expect(t, 409, `{"status":"failed","errors":"Only live automations can be paused."}`)

	utr2, id2 := f.createAutomation(t, f.automationForm())
	setLive(utr2).expect(t, 409, `{"status":"failed","errors":"At least one schedule is required to live the automation."}`)
	f.addSchedule(t, f.scheduleForm(utr2))
	if got := f.live.take(); len(got) != 0 || len(automationEvents(t, id2)) != 0 {
		t.Fatalf("refusals called the hook %v or recorded events", got)
	}

	setLive(utr2).expect(t, 200, live)
	if a := automationRow(t, utr2); a.status != 1 || !a.live {
		t.Fatalf("after set-live %+v", a)
	}
	if got := f.live.take(); len(got) != 1 || got[0] != id2 {
		t.Fatalf("hook calls %v, want [%d]", got, id2)
	}
	r := f.a.do(req{method: "GET", path: "/api/automations/details?utr=" + utr2, acct: &f.acct})
	if !regexp.MustCompile(`"status":1,"live_at":"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d",`).MatchString(r.body) {
		t.Fatalf("details of a live automation: %s", r.body)
	}
	// Again: still live, nothing new.
	setLive(utr2).expect(t, 200, live)
	if got := f.live.take(); len(got) != 0 {
		t.Fatalf("set-live of a live automation called the hook: %v", got)
	}

	pause(utr2).expect(t, 200, paused)
	if a := automationRow(t, utr2); a.status != 0 || !a.live {
		t.Fatalf("after pause %+v", a)
	}
	pause(utr2).expect(t, 409, `{"status":"failed","errors":"Only live automations can be paused."}`)
	// Resumed; a failing hook is logged, the answer is still success.
	f.live.err = fmt.Errorf("engine down")
	setLive(utr2).expect(t, 200, live)
	if got := f.live.take(); len(got) != 1 {
		t.Fatalf("hook calls on resume %v", got)
	}
	wantEvents := []string{
		`automation.set_live {"automation_name": "Onboarding", "automation_type": 2}`,
		`automation.paused {"automation_name": "Onboarding"}`,
		`automation.set_live {"automation_name": "Onboarding", "automation_type": 2}`,
	}
	if got := automationEvents(t, id2); fmt.Sprint(got) != fmt.Sprint(wantEvents) {
		t.Fatalf("events %q\nwant %q", got, wantEvents)
	}

	// The target gone: set-live refuses.
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `UPDATE automations SET unsubscribe_group_id = $2 WHERE id = $1`, id, f.group); err != nil {
		t.Fatal(err)
	}
	f.addSchedule(t, f.scheduleForm(utr))
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `UPDATE segments SET deleted_at = now() WHERE id = $1`, f.segment); err != nil {
		t.Fatal(err)
	}
	setLive(utr).expect(t, 409, `{"status":"failed","errors":"The contact type or segment of the automation no longer exists."}`)

	for _, u := range []string{"6f1c1a7e-0000-4000-8000-000000000000", "x"} {
		setLive(u).expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
		pause(u).expect(t, 404, `{"status":"failed","errors":"Record not found"}`)
	}
}

func TestAutomationDuplicate(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	utr, id := f.createAutomation(t, f.automationForm())
	f.addSchedule(t, f.scheduleForm(utr))
	second := f.scheduleForm(utr)
	second.Set("subject", "Second")
	f.addSchedule(t, second)
	f.a.do(req{method: "GET", path: "/api/automations/set-live?utr=" + utr, acct: &f.acct}).
		expect(t, 200, `{"status":"success","message":"Automation has been set live"}`)
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `UPDATE automations SET total_triggered = 5, total_opens = 3 WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}

	r := f.a.do(req{method: "GET", path: "/api/automations/duplicate?utr=" + utr, acct: &f.acct})
	m := utrRE.FindStringSubmatch(r.body)
	if r.code != 200 || m == nil || m[1] == utr {
		t.Fatalf("duplicate: %d %s", r.code, r.body)
	}
	c := automationRow(t, m[1])
	f.a.do(req{method: "GET", path: "/api/automations/details?utr=" + m[1], acct: &f.acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"automation":`+automationJSON(c.id, f.acct.id, m[1], "segments_", f.segment, "Onboarding", 1,
			fmt.Sprintf(`"%d"`, f.group), 2, 0, "null", "")+`}}`)

	// The schedules, in their order, with new utrs.
	type sched struct{ utr, subject string }
	read := func(aid int64) []sched {
		rows, err := testdb.New(t).Pool.Query(context.Background(), `SELECT utr::text, subject FROM automation_schedules
			WHERE automation_id = $1 ORDER BY id`, aid)
		if err != nil {
			t.Fatal(err)
		}
		var out []sched
		for rows.Next() {
			var s sched
			if err := rows.Scan(&s.utr, &s.subject); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if rows.Close(); rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		return out
	}
	src, dst := read(id), read(c.id)
	if len(dst) != 2 || dst[0].subject != src[0].subject || dst[1].subject != "Second" || dst[0].utr == src[0].utr ||
		dst[1].utr == src[1].utr {
		t.Fatalf("copied schedules %v, source %v", dst, src)
	}
	nf := `{"status":"failed","errors":"Record Not Found"}`
	f.a.do(req{method: "GET", path: "/api/automations/duplicate?utr=6f1c1a7e-0000-4000-8000-000000000000", acct: &f.acct}).expect(t, 404, nf)
}

func TestAutomationDelete(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	var utrs []string
	var ids []int64
	for i := 0; i < 4; i++ {
		u, id := f.createAutomation(t, f.automationForm())
		utrs, ids = append(utrs, u), append(ids, id)
	}
	// A live one, with an active enrollment, may be deleted: it stops.
	f.addSchedule(t, f.scheduleForm(utrs[0]))
	f.a.do(req{method: "GET", path: "/api/automations/set-live?utr=" + utrs[0], acct: &f.acct}).
		expect(t, 200, `{"status":"success","message":"Automation has been set live"}`)
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `INSERT INTO automation_enrollments (automation_id, user_id, contact_id, step, due_at)
		VALUES ($1, $2, 1, 1, now())`, ids[0], f.acct.id); err != nil {
		t.Fatal(err)
	}
	nf := `{"status":"failed","errors":"Record not found"}`
	del := func(acct account, utr string) response {
		return f.a.do(req{method: "DELETE", path: "/api/automations/delete?utr=" + utr, acct: &acct})
	}
	bulk := func(ids ...int64) response {
		v := url.Values{}
		for i, id := range ids {
			v.Set(fmt.Sprintf("strIds[%d]", i), fmt.Sprint(id))
		}
		return f.a.do(req{method: "POST", path: "/api/automations/bulk-delete", acct: &f.acct, body: v})
	}
	del(f.acct, utrs[0]).expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	var state int
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT state FROM automation_enrollments WHERE automation_id = $1`, ids[0]).Scan(&state); err != nil || state != 2 {
		t.Fatalf("enrollment of a deleted automation: state %d (%v), want 2 (left)", state, err)
	}
	del(f.acct, utrs[0]).expect(t, 404, nf)
	for _, path := range []string{"/api/automations/details", "/api/automations/set-live", "/api/automations/duplicate"} {
		f.a.do(req{method: "GET", path: path + "?utr=" + utrs[0], acct: &f.acct}).expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)
	}
	f.a.do(req{method: "GET", path: "/api/automations/pause?utr=" + utrs[0], acct: &f.acct}).expect(t, 404, nf)
	f.a.do(req{method: "GET", path: "/api/automations/schedule?utr=" + utrs[0], acct: &f.acct}).expect(t, 404, nf)

	// All or nothing.
	bulk(ids[1], ids[0]).expect(t, 404, nf)
	bulk(ids[1], 1<<62).expect(t, 404, nf)
	if r := f.a.do(req{method: "GET", path: "/api/automations", acct: &f.acct}); len(listIDs(t, r, "automations")) != 3 {
		t.Fatalf("after refused bulk deletes: %s", r.body)
	}
	f.a.do(req{method: "POST", path: "/api/automations/bulk-delete", acct: &f.acct, body: jsonBody(`{"strIds":"1"}`)}).
		expect(t, 422, `{"status":"failed","errors":{"strIds":["The str ids must be an array of integers."]}}`)
	f.a.do(req{method: "POST", path: "/api/automations/bulk-delete", acct: &f.acct,
		body: jsonBody(fmt.Sprintf(`{"strIds":[%d,"%d",%d,%d]}`, ids[1], ids[2], ids[3], ids[1]))}).
		expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	f.a.do(req{method: "GET", path: "/api/automations", acct: &f.acct}).expect(t, 200, `{"status":"success","message":{"automations":[]}}`)
}

// A list is named by its canonical id only: automation_for and a single
// send's recipient_id (as a string or as the resource's object) refuse a
// leading zero, a sign, a space, an exponent and an id past int64 with the
// field's invalid message, and store nothing (contacts_01 was type 1).
func TestListRefCanonicalID(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	id := fmt.Sprint(f.typ)
	badFor := `{"status":"failed","errors":{"automation_for":["The selected automation for is invalid."]}}`
	badRecipients := `{"status":"failed","errors":{"recipient_id":["The selected recipient id is invalid."]}}`
	for _, v := range []string{"0" + id, "00" + id, "+" + id, " " + id, id + "e0", id + ".0", "0x" + id,
		strings.Repeat("9", 400), strings.Repeat("0", 400) + id} {
		body := f.automationForm()
		body.Set("automation_for", "contacts_"+v)
		f.a.do(req{method: "POST", path: "/api/automations/create", acct: &f.acct, body: body}).expect(t, 422, badFor)
		f.a.do(req{method: "POST", path: "/api/automations/create", acct: &f.acct, body: jsonBody(fmt.Sprintf(
			`{"automation_name":"A","automation_for":%q}`, "segments_"+v))}).expect(t, 422, badFor)

		send := f.form()
		send.Set("recipient_id[0]", "contacts_"+v)
		f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: send}).expect(t, 422, badRecipients)
		if v[0] == ' ' {
			continue // the object's id is a field of its own, trimmed as every field
		}
		f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: jsonBody(fmt.Sprintf(
			`{"single_send_name":"W","sender_id":%d,"subject":"S","preheader":"P","unsubscribe_group_id":%d,"schedule_type":0,`+
				`"recipient_id":[{"id":%q,"table":"contacts_"}]}`, f.sender, f.group, v))}).expect(t, 422, badRecipients)
	}
	// Spaces around the whole value are trimmed, as for every field.
	body := f.automationForm()
	body.Set("automation_for", " contacts_"+id+" ")
	f.createAutomation(t, body)
	var n int
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM automations WHERE user_id = $1)
		+ (SELECT count(*) FROM single_sends WHERE user_id = $1)`, f.acct.id).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d automations and sends stored, want the one valid (%v)", n, err)
	}
}

// waiting_period's range depends on waiting_type: with the type missing or
// invalid only the type is reported, unless the period is no integer at
// all.
func TestScheduleWaitingPeriodFollowsType(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	utr, _ := f.createAutomation(t, f.automationForm())
	badType := `{"status":"failed","errors":{"waiting_type":["The selected waiting type is invalid."]}}`
	for _, tc := range []struct {
		period, typ, want string
	}{
		{"0", "weeks", badType},
		{"87601", "weeks", badType},
		{"-5", "weeks", badType},
		{"0", "", `{"status":"failed","errors":{"waiting_type":["The waiting type field is required."]}}`},
		{"1.5", "weeks", `{"status":"failed","errors":{"waiting_period":["The waiting period must be an integer."],` +
			`"waiting_type":["The selected waiting type is invalid."]}}`},
		// A valid type still judges the period.
		{"0", "hours", `{"status":"failed","errors":{"waiting_period":["The waiting period must be between 1 and 87600."]}}`},
	} {
		body := f.scheduleForm(utr)
		body.Set("waiting_period", tc.period)
		body.Set("waiting_type", tc.typ)
		f.a.do(req{method: "POST", path: "/api/automations/schedule/create", acct: &f.acct, body: body}).expect(t, 422, tc.want)
		f.a.do(req{method: "POST", path: "/api/automations/schedule/create", acct: &f.acct, body: jsonBody(fmt.Sprintf(
			`{"utr":%q,"sender_id":%d,"subject":"S","waiting_period":%q,"waiting_type":%q}`, utr, f.sender, tc.period, tc.typ))}).
			expect(t, 422, tc.want)
	}
}

// template_html and template_json are at most 1 MB (docs) in every
// encoding: a multipart value past the 8 MB any other value may hold, or
// a blank one, gets the same message as JSON and url-encoded bodies, in
// its place beside the form's other problems; schedules and single sends
// alike.
func TestTemplateLimitEveryEncoding(t *testing.T) {
	racetest.Heavy(t)
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{MaxBodyBytes: 24 << 20, MaxUploadBytes: 24 << 20})
	utr, _ := f.createAutomation(t, f.automationForm())
	for _, field := range []string{"template_html", "template_json"} {
		tooLarge := fmt.Sprintf("The %s may not be larger than 1048576 bytes.", strings.ReplaceAll(field, "_", " "))
		for _, v := range []string{strings.Repeat("x", 1<<20+1), strings.Repeat("x", 8<<20+1), strings.Repeat(" ", 2<<20)} {
			schedule := f.scheduleForm(utr)
			schedule.Set("subject", "")
			schedule.Set(field, v)
			want := `{"status":"failed","errors":{"subject":["The subject field is required."],` + fmt.Sprintf("%q:[%q]}}", field, tooLarge)
			send := f.form()
			send.Del("subject")
			send.Set(field, v)
			for _, tc := range []struct {
				path string
				form url.Values
			}{{"/api/automations/schedule/create", schedule}, {"/api/single/send/create", send}} {
				js := map[string]string{}
				for k, vs := range tc.form {
					js[k] = vs[0]
				}
				delete(js, "recipient_id[0]")
				delete(js, "recipient_id[1]")
				delete(js, "recipient_id[2]")
				delete(js, "exclude_specific_recipient_id[0]")
				b, _ := json.Marshal(js)
				body := strings.TrimSuffix(string(b), "}") + fmt.Sprintf(`,"recipient_id":["contacts_%d"]}`, f.typ)
				for _, enc := range []any{tc.form, flat(tc.form), jsonBody(body)} {
					if r := f.a.do(req{method: "POST", path: tc.path, acct: &f.acct, body: enc}); r.code != 422 || r.body != want {
						t.Errorf("%s %s of %d bytes as %T: got %d %.300s\nwant 422 %s", tc.path, field, len(v), enc, r.code, r.body, want)
					}
				}
			}
		}
	}
	var n int
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM automation_schedules WHERE user_id = $1)
		+ (SELECT count(*) FROM single_sends WHERE user_id = $1)`, f.acct.id).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d schedules and sends stored (%v)", n, err)
	}
}

// deadlineRecorder is a ResponseRecorder that notes each write deadline
// set through http.ResponseController: how much of the body was written
// by then, and how far ahead it was.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	at    []int
	ahead []time.Duration
}

func (r *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	r.at, r.ahead = append(r.at, r.Body.Len()), append(r.ahead, time.Until(t))
	return nil
}

// list GETs path through the router into a deadlineRecorder.
func (f *autoFixture) list(path string) *deadlineRecorder {
	req := httptest.NewRequest("GET", path, nil)
	req.Header.Set("PublicKey", f.acct.public)
	req.Header.Set("SecretKey", f.acct.secret)
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	f.a.h.ServeHTTP(rec, req)
	return rec
}

// A streamed list renews its client's 30 s write deadline every 1 MB as
// well as every 250 rows: schedules of 2 MB each are a window per MB, not
// one window for the whole list (a 5 MB/s client was cut after 31 s of a
// 210 MB list), and never more than 1 MB per window, so a client slower
// than 1 MB per 30 s is still cut. The list, written a piece at a time, is
// exactly the JSON of its rows.
func TestListDeadlineByBytes(t *testing.T) {
	t.Parallel()
	f := newAutoFixture(t, httpapi.Config{})
	utr, id := f.createAutomation(t, f.automationForm())
	// Templates of 1 MB whose runes of every width, escapes and HTML fall
	// across the pieces they are escaped in.
	unit := "<p class=\"x\">Grüße € 😀\u2028\\ \n\t\x01 &amp;</p>"
	html := strings.Repeat(unit, 1<<20/len(unit))
	js := strings.Repeat(`{"k":"`+unit+`"}`, (1<<20-100)/(len(unit)+8))
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `INSERT INTO automation_schedules (user_id, automation_id, utr,
		sender_id, template_id, subject, waiting_period, waiting_type, template_html, template_json)
		SELECT $1, $2, gen_random_uuid(), $3, 1, 'S ' || g, g, 'days', $4, $5 || g FROM generate_series(1, 5) g`,
		f.acct.id, id, f.sender, html, js); err != nil {
		t.Fatal(err)
	}
	rows, err := testdb.New(t).Pool.Query(context.Background(), `SELECT id, utr::text FROM automation_schedules
		WHERE automation_id = $1 ORDER BY id`, id)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	want.WriteString(`{"status":"success","message":{"automation_schedules":[`)
	blank := design.Templates()[0]
	for n := 1; rows.Next(); n++ {
		var sid int64
		var sutr string
		if err := rows.Scan(&sid, &sutr); err != nil {
			t.Fatal(err)
		}
		if n > 1 {
			want.WriteByte(',')
		}
		fmt.Fprintf(&want, `{"id":%d,"user_id":%d,"automation_id":%d,"sender_id":%d,"template_id":1,"subject":"S %d",`+
			`"waiting_period":%d,"waiting_type":"days","utr":%q,"preview_img":"","template_json":%s,"template_html":%s,`+
			`"created_at":"<timestamp>","updated_at":"<timestamp>","design_url":%q,"image":%q}`,
			sid, f.acct.id, id, f.sender, n, n, sutr, jsonString(t, js+fmt.Sprint(n)), jsonString(t, html),
			publicURL+"/design/editor/"+sutr, publicURL+"/design/previews/"+blank.Preview)
	}
	if rows.Close(); rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	want.WriteString(`]}}`)

	rec := f.list("/api/automations/schedule?utr=" + utr)
	if got := normalize(rec.Body.String()); rec.Code != 200 || got != want.String() {
		t.Fatalf("schedule list: %d, %d bytes, want %d\ngot  %.300s\nwant %.300s", rec.Code, len(got), want.Len(), got, want.String())
	}
	body := rec.Body.Len()
	if len(rec.at) != (body+1<<20-1)/(1<<20) {
		t.Errorf("%d deadlines for a %d-byte list, want one per MB begun: at %v", len(rec.at), body, rec.at)
	}
	for i, at := range rec.at {
		if at != i<<20 {
			t.Errorf("deadline %d set after %d bytes, want %d: windows of exactly 1 MB", i, at, i<<20)
		}
		if d := rec.ahead[i]; d < 29*time.Second || d > 30*time.Second {
			t.Errorf("deadline %d set %v ahead, want 30 s", i, d)
		}
	}

	// Short rows: a window per 250 of them.
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `INSERT INTO automations (user_id, utr, automation_name,
		automation_type, automation_for, automation_for_table, exit_criteria)
		SELECT $1, gen_random_uuid(), 'A' || g, 1, $2, 'contacts_', 0 FROM generate_series(1, 600) g`, f.acct.id, f.typ); err != nil {
		t.Fatal(err)
	}
	rec = f.list("/api/automations")
	if n := len(listIDs(t, response{code: rec.Code, body: rec.Body.String()}, "automations")); rec.Code != 200 || n != 601 {
		t.Fatalf("automation list: %d, %d rows", rec.Code, n)
	}
	if rec.Body.Len() > 1<<20 || len(rec.ahead) != 3 {
		t.Errorf("%d deadlines for 601 rows in %d bytes, want 3 (rows 1, 251, 501)", len(rec.ahead), rec.Body.Len())
	}
}
