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
	"time"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/testdb"
)

// dispatch is one call of the EnqueueDispatch hook.
type dispatch struct {
	id      int64
	version int32
	at      time.Time
}

// recorder records a hook's calls; err is what the hook answers.
type recorder[T any] struct {
	mu  sync.Mutex
	got []T
	err error
}

func (r *recorder[T]) add(v T) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, v)
	return r.err
}

// take returns the calls since the last take.
func (r *recorder[T]) take() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// dispatches records the EnqueueDispatch calls of a router.
type dispatches struct{ recorder[dispatch] }

func (d *dispatches) enqueue(_ context.Context, id int64, version int32, at time.Time) error {
	return d.add(dispatch{id, version, at})
}

// sendFixture is an account with what a single send names: a verified
// sender, an unsubscribe group, a contact type, a segment, and a router
// recording its dispatches.
type sendFixture struct {
	a          *api
	queued     *dispatches
	acct       account
	sender     int64
	senderJSON string // from_sender … sender_address as a send shows them
	group      int64
	typ, typ2  int64
	segment    int64
}

func newSendFixture(t *testing.T, cfg httpapi.Config) *sendFixture {
	t.Helper()
	f := &sendFixture{queued: &dispatches{}}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes, cfg.MaxUploadBytes = 1<<20, 64<<20
	}
	f.a = newAPIWith(t, cfg, func(d *httpapi.Deps) { d.EnqueueDispatch = f.queued.enqueue })
	f.acct = f.a.account()
	f.sender, f.senderJSON = seedSender(t, f.acct, true)
	f.group = seedGroup(t, f.a, f.acct, "News").ID
	f.typ, f.typ2 = seedType(t, f.acct, "Customers"), seedType(t, f.acct, "Leads")
	f.segment = seedSegment(t, f.acct, f.typ)
	return f
}

// seedSender stores a sender of acct in Munich and returns its id and its
// fields as a send shows them.
func seedSender(t *testing.T, acct account, verified bool) (int64, string) {
	t.Helper()
	g := testdb.Geo(t)
	deState, deCity, _ := senderPlace(t)
	st, _ := g.State(deState)
	ci, _ := g.City(deCity)
	v := 0
	if verified {
		v = 1
	}
	var id int64
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `INSERT INTO senders (user_id, from_name, from_email,
		reply_to_email, country_id, state_id, city_id, company_address, company_address2, nickname, utr, is_verified)
		VALUES ($1, 'Acme News', 'news@acme.example', 'help@acme.example', 276, $2, $3, 'Marienplatz 1', 'Floor 2', 'news',
		gen_random_uuid()::text, $4) RETURNING id`, acct.id, deState, deCity, v).Scan(&id); err != nil {
		t.Fatal(err)
	}
	address := fmt.Sprintf("Marienplatz 1 Floor 2, %s, %s, Germany", ci.Name, st.Name)
	return id, fmt.Sprintf(`"from_sender":"news@acme.example","reply_to":"help@acme.example","sender_name":"Acme News","sender_address":%q`, address)
}

// seedSegment stores an empty segment of typ.
func seedSegment(t *testing.T, acct account, typ int64) int64 {
	t.Helper()
	var id int64
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `INSERT INTO segments (user_id, contact_type_id, segment_name,
		select_field, select_operator, value) VALUES ($1, $2, 'S', '{}', '{}', '{}') RETURNING id`, acct.id, typ).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// form is a valid immediate create: the type twice (one kept), the
// segment, the second type excluded.
func (f *sendFixture) form() url.Values {
	return url.Values{
		"template_id": {"2"}, "sender_id": {fmt.Sprint(f.sender)}, "unsubscribe_group_id": {fmt.Sprint(f.group)},
		"single_send_name": {"Weekly"}, "subject": {"Hello ((first_name))"}, "preheader": {"This week"},
		"recipient_id[0]": {fmt.Sprintf("contacts_%d", f.typ)}, "recipient_id[1]": {fmt.Sprintf("segments_%d", f.segment)},
		"recipient_id[2]": {fmt.Sprintf("contacts_%d", f.typ)}, "schedule_type": {"0"},
		"exclude_specific_recipient_id[0]": {fmt.Sprintf("contacts_%d", f.typ2)},
	}
}

var utrRE = regexp.MustCompile(`^\{"status":"success","message":\{"utr":"([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})"\}\}$`)

// create posts body and returns the new send's utr and id.
func (f *sendFixture) create(t *testing.T, body any) (string, int64) {
	t.Helper()
	r := f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: body})
	m := utrRE.FindStringSubmatch(r.body)
	if r.code != 200 || m == nil {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	return m[1], sendRow(t, m[1]).id
}

// storedSend is what the tests read of a send's row.
type storedSend struct {
	id      int64
	status  int16
	version int32
	dueAt   *time.Time
	tokens  map[string]string
	deleted bool
}

func sendRow(t *testing.T, utr string) storedSend {
	t.Helper()
	var s storedSend
	var tokens string
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT id, status, version, due_at, unique_open_token::text,
		deleted_at IS NOT NULL FROM single_sends WHERE utr = $1::uuid`, utr).Scan(&s.id, &s.status, &s.version, &s.dueAt,
		&tokens, &s.deleted); err != nil {
		t.Fatalf("send %s: %v", utr, err)
	}
	if err := json.Unmarshal([]byte(tokens), &s.tokens); err != nil {
		t.Fatal(err)
	}
	return s
}

func setStatus(t *testing.T, id int64, status int) {
	t.Helper()
	if _, err := testdb.New(t).Pool.Exec(context.Background(), "UPDATE single_sends SET status = $2 WHERE id = $1", id, status); err != nil {
		t.Fatal(err)
	}
}

// expectDispatch asserts the hook was called once since the last check,
// for this send, version and time.
func (f *sendFixture) expectDispatch(t *testing.T, id int64, version int32, at time.Time) {
	t.Helper()
	got := f.queued.take()
	if len(got) != 1 || got[0].id != id || got[0].version != version || !got[0].at.Equal(at) {
		t.Fatalf("dispatches %+v, want one of send %d version %d at %v", got, id, version, at)
	}
}

// sendJSON is a send as the API shows it; rest is everything after
// preheader's sender fields up to the utr, as a format of the status.
func (f *sendFixture) sendJSON(id int64, utr, lists, name, schedule string, status int, tokens map[string]string, tail string) string {
	tok, _ := json.Marshal(tokens)
	return fmt.Sprintf(`{"id":%d,"user_id":%d,"template_id":2,%s,"sender_id":%d,"unsubscribe_group_id":%d,`+
		`"single_send_name":%q,"subject":"Hello ((first_name))","preheader":"This week",%s,%s,"status":%d,"utr":%q,`+
		`"template_json":null,"template_html":null,%s"unique_open_token":%s,"sent_at":null,"created_at":"<timestamp>","updated_at":"<timestamp>"}`,
		id, f.acct.id, lists, f.sender, f.group, name, f.senderJSON, schedule, status, utr, tail, tok)
}

const zeroCounters = `"triggered":0,"delivered":0,"unique_opens":0,"total_opens":0,"bounces":0,"unsubscribes":0,`

func TestSingleSendRequiredFields(t *testing.T) {
	t.Parallel()
	f := newSendFixture(t, httpapi.Config{})
	required := `"single_send_name":["The single send name field is required."],"sender_id":["The sender id field is required."],` +
		`"subject":["The subject field is required."],"preheader":["The preheader field is required."],` +
		`"unsubscribe_group_id":["The unsubscribe group id field is required."],"schedule_type":["The schedule type field is required."],` +
		`"recipient_id":["The recipient id field is required."]`
	for _, body := range []any{url.Values{}, multipartBody{}, jsonBody(`{}`), url.Values{"recipient_id[0]": {" "}, "subject": {"  "}}} {
		f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: body}).
			expect(t, 422, `{"status":"failed","errors":{`+required+`}}`)
		f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &f.acct, body: body}).
			expect(t, 422, `{"status":"failed","errors":{"utr":["The utr field is required."],`+required+`}}`)
	}
	if got := f.queued.take(); len(got) != 0 {
		t.Fatalf("dispatches on failures: %+v", got)
	}
}

func TestSingleSendCreateAndRead(t *testing.T) {
	t.Parallel()
	f := newSendFixture(t, httpapi.Config{})
	before := time.Now()
	utr, id := f.create(t, multipartBody(flat(f.form())))
	s := sendRow(t, utr)
	if s.status != 1 || s.version != 1 || s.dueAt == nil || s.dueAt.Before(before.Add(-time.Second)) || s.dueAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("stored %+v, want ready, version 1, due now", s)
	}
	f.expectDispatch(t, id, 1, *s.dueAt)
	kt, ks := fmt.Sprintf("contacts_%d", f.typ), fmt.Sprintf("segments_%d", f.segment)
	if len(s.tokens) != 2 || len(s.tokens[kt]) != 22 || len(s.tokens[ks]) != 22 || s.tokens[kt] == s.tokens[ks] {
		t.Fatalf("unique_open_token %v: want a distinct token for each recipient list", s.tokens)
	}
	lists := fmt.Sprintf(`"recipient_id":[{"id":"%d","table":"contacts_"},{"id":"%d","table":"segments_"}],`+
		`"exclude_specific_recipient_id":[{"id":"%d","table":"contacts_"}]`, f.typ, f.segment, f.typ2)
	immediate := `"schedule_type":0,"schedule_date":"0000-00-00","schedule_time":"00:00:00"`
	want := f.sendJSON(id, utr, lists, "Weekly", immediate, 1, s.tokens, zeroCounters)
	f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + utr, acct: &f.acct}).
		expectNormalized(t, 200, `{"status":"success","message":{"singleSend":[`+want+`]}}`)
	f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + strings.ToUpper(utr), acct: &f.acct}).
		expectNormalized(t, 200, `{"status":"success","message":{"singleSend":[`+want+`]}}`)

	// A custom template, given as JSON with arrays (and a list as the
	// resource shows it), scheduled; the counters and sent_at as the
	// engine leaves them.
	body := fmt.Sprintf(`{"template_id":1,"template_html":"<p>Hi ((first_name))</p>\n","template_json":"","sender_id":%d,`+
		`"unsubscribe_group_id":"%d","single_send_name":"Launch","subject":"Hello ((first_name))","preheader":"This week",`+
		`"recipient_id":[{"id":"%d","table":"contacts_"}],"schedule_type":true,"schedule_date":"2031-05-06","schedule_time":"07:08"}`,
		f.sender, f.group, f.typ2)
	utr2, id2 := f.create(t, jsonBody(body))
	at := time.Date(2031, 5, 6, 7, 8, 0, 0, time.UTC)
	f.expectDispatch(t, id2, 1, at)
	s2 := sendRow(t, utr2)
	if !s2.dueAt.Equal(at) {
		t.Fatalf("due_at %v, want %v", s2.dueAt, at)
	}
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `UPDATE single_sends SET status = 3, triggered = 9, delivered = 7,
		unique_opens = 4, total_opens = 6, bounces = 2, unsubscribes = 1, sent_at = '2031-05-06 07:09:10.5+00' WHERE id = $1`, id2); err != nil {
		t.Fatal(err)
	}
	want2 := strings.Replace(f.sendJSON(id2, utr2, fmt.Sprintf(`"recipient_id":[{"id":"%d","table":"contacts_"}],"exclude_specific_recipient_id":[]`, f.typ2),
		"Launch", `"schedule_type":1,"schedule_date":"2031-05-06","schedule_time":"07:08:00"`, 3, s2.tokens,
		`"triggered":9,"delivered":7,"unique_opens":4,"total_opens":6,"bounces":2,"unsubscribes":1,`),
		`"template_id":2`, `"template_id":1`, 1)
	want2 = strings.Replace(want2, `"template_html":null`, `"template_html":"<p>Hi ((first_name))</p>\n"`, 1)
	want2 = strings.Replace(want2, `"sent_at":null`, `"sent_at":"2031-05-06 07:09:10"`, 1)
	f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + utr2, acct: &f.acct}).
		expectNormalized(t, 200, `{"status":"success","message":{"singleSend":[`+want2+`]}}`)

	list := `{"status":"success","message":{"singleSends":[` + want + `,` + want2 + `]}}`
	f.a.do(req{method: "GET", path: "/api/single-send/list", acct: &f.acct}).expectNormalized(t, 200, list)
	f.a.do(req{method: "GET", path: "/api/single-send/list?per_page=1&page=2", acct: &f.acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"singleSends":[`+want2+`],"pagination":{"page":2,"per_page":1,"total":2}}}`)
	f.a.do(req{method: "GET", path: fmt.Sprintf("/api/single-send/list?after_id=%d", id), acct: &f.acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"singleSends":[`+want2+`],"pagination":{"page":1,"per_page":100,"total":2}}}`)

	// The sender deleted since: the send still shows it (the engine
	// still sends from it).
	if _, err := testdb.New(t).Pool.Exec(context.Background(), "UPDATE senders SET deleted_at = now() WHERE id = $1", f.sender); err != nil {
		t.Fatal(err)
	}
	f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + utr, acct: &f.acct}).
		expectNormalized(t, 200, `{"status":"success","message":{"singleSend":[`+want+`]}}`)

	// Another account sees none of it.
	intruder := f.a.account()
	f.a.do(req{method: "GET", path: "/api/single-send/list", acct: &intruder}).expect(t, 200, `{"status":"success","message":{"singleSends":[]}}`)
	f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + utr, acct: &intruder}).expect(t, 404, `{"status":"failed","errors":"Record not found"}`)
}

// flat turns url.Values of one value each into a multipart body.
func flat(v url.Values) multipartBody {
	out := multipartBody{}
	for k, vs := range v {
		out[k] = vs[0]
	}
	return out
}

func TestSingleSendSchedule(t *testing.T) {
	t.Parallel()
	f := newSendFixture(t, httpapi.Config{})
	post := func(change map[string]string) response {
		body := f.form()
		for k, v := range change {
			if v == "" {
				body.Del(k)
			} else {
				body.Set(k, v)
			}
		}
		return f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: body})
	}
	post(map[string]string{"schedule_type": "2"}).expect(t, 422,
		`{"status":"failed","errors":{"schedule_type":["The schedule type field must be true or false."]}}`)
	post(map[string]string{"schedule_type": "1"}).expect(t, 422,
		`{"status":"failed","errors":{"schedule_date":["The schedule date field is required when schedule type is 1."],`+
			`"schedule_time":["The schedule time field is required when schedule type is 1."]}}`)
	for _, bad := range [][2]string{{"2026-02-30", "24:00"}, {"26-01-01", "7:08"}, {"0000-01-01", "07:08:60"}, {"2026-1-01", "07-08"},
		{"12026-01-01", "07:08:09.5"}, {"2026-01-01T00:00", "x"}} {
		post(map[string]string{"schedule_type": "1", "schedule_date": bad[0], "schedule_time": bad[1]}).expect(t, 422,
			`{"status":"failed","errors":{"schedule_date":["The schedule date must be a valid date in the form YYYY-MM-DD."],`+
				`"schedule_time":["The schedule time must be a valid time in the form HH:MM:SS or HH:MM."]}}`)
	}
	if got := f.queued.take(); len(got) != 0 {
		t.Fatalf("dispatches on failures: %+v", got)
	}

	// A time in the past goes out at once: due then, dispatched now.
	r := post(map[string]string{"schedule_type": "TRUE", "schedule_date": "2020-02-29", "schedule_time": "23:59:59"})
	m := utrRE.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	past := time.Date(2020, 2, 29, 23, 59, 59, 0, time.UTC)
	s := sendRow(t, m[1])
	if !s.dueAt.Equal(past) {
		t.Fatalf("due_at %v, want %v", s.dueAt, past)
	}
	f.expectDispatch(t, s.id, 1, past)
	f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + m[1], acct: &f.acct}).expectNormalized(t, 200,
		f.detailsWithSchedule(t, m[1], `"schedule_type":1,"schedule_date":"2020-02-29","schedule_time":"23:59:59"`))

	// schedule_type 0 (false) ignores a date and time sent with it.
	r = post(map[string]string{"schedule_type": "false", "schedule_date": "2040-01-01", "schedule_time": "10:00"})
	if m = utrRE.FindStringSubmatch(r.body); m == nil {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	s = sendRow(t, m[1])
	if s.dueAt.After(time.Now()) {
		t.Fatalf("immediate send due at %v", s.dueAt)
	}
	f.expectDispatch(t, s.id, 1, *s.dueAt)
	f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + m[1], acct: &f.acct}).expectNormalized(t, 200,
		f.detailsWithSchedule(t, m[1], `"schedule_type":0,"schedule_date":"0000-00-00","schedule_time":"00:00:00"`))
}

// detailsWithSchedule is the details body of a send of f.form() with
// this schedule.
func (f *sendFixture) detailsWithSchedule(t *testing.T, utr, schedule string) string {
	s := sendRow(t, utr)
	lists := fmt.Sprintf(`"recipient_id":[{"id":"%d","table":"contacts_"},{"id":"%d","table":"segments_"}],`+
		`"exclude_specific_recipient_id":[{"id":"%d","table":"contacts_"}]`, f.typ, f.segment, f.typ2)
	return `{"status":"success","message":{"singleSend":[` + f.sendJSON(s.id, utr, lists, "Weekly", schedule, int(s.status), s.tokens, zeroCounters) + `]}}`
}

func TestSingleSendValidation(t *testing.T) {
	t.Parallel()
	f := newSendFixture(t, httpapi.Config{MaxBodyBytes: 4 << 20, MaxUploadBytes: 4 << 20})
	other := f.a.account()
	otherSender, _ := seedSender(t, other, true)
	otherGroup := seedGroup(t, f.a, other, "Theirs").ID
	otherType := seedType(t, other, "Theirs")
	unverified, _ := seedSender(t, f.acct, false)
	goneSender, _ := seedSender(t, f.acct, true)
	goneType := seedType(t, f.acct, "Gone")
	goneSegment := seedSegment(t, f.acct, f.typ)
	// A type of the account whose id is not one of its segments' (ids of
	// types and segments come from separate sequences and may meet).
	typeNotSegment := f.typ2
	for typeNotSegment == f.segment || typeNotSegment == goneSegment {
		typeNotSegment = seedType(t, f.acct, fmt.Sprintf("Leads %d", typeNotSegment))
	}
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `UPDATE senders SET deleted_at = now() WHERE id = $1;`, goneSender); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `UPDATE contact_types SET deleted_at = now() WHERE id = $1`, goneType); err != nil {
		t.Fatal(err)
	}
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `UPDATE segments SET deleted_at = now() WHERE id = $1`, goneSegment); err != nil {
		t.Fatal(err)
	}
	type change map[string]any // a string sets, nil removes, []string sets an array
	post := func(c change) response {
		body := f.form()
		for k, v := range c {
			switch v := v.(type) {
			case nil:
				body.Del(k)
			case string:
				body.Set(k, v)
			case []string:
				for i := 0; i < 3; i++ {
					body.Del(fmt.Sprintf("%s[%d]", k, i))
				}
				body[k+"[]"] = v
			}
		}
		return f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: body})
	}
	invalid := func(field, msg string) string {
		return fmt.Sprintf(`{"status":"failed","errors":{%q:[%q]}}`, field, msg)
	}
	badRecipients := invalid("recipient_id", "The selected recipient id is invalid.")
	for _, tc := range []struct {
		name string
		c    change
		want string
	}{
		{"unverified sender", change{"sender_id": fmt.Sprint(unverified)}, invalid("sender_id", "The selected sender is not verified.")},
		{"deleted sender", change{"sender_id": fmt.Sprint(goneSender)}, invalid("sender_id", "The selected sender id is invalid.")},
		{"another account's sender", change{"sender_id": fmt.Sprint(otherSender)}, invalid("sender_id", "The selected sender id is invalid.")},
		{"sender id not a number", change{"sender_id": "1x"}, invalid("sender_id", "The sender id must be an integer.")},
		{"another account's group", change{"unsubscribe_group_id": fmt.Sprint(otherGroup)},
			invalid("unsubscribe_group_id", "The selected unsubscribe group id is invalid.")},
		{"group id not a number", change{"unsubscribe_group_id": "-3"}, invalid("unsubscribe_group_id", "The unsubscribe group id must be an integer.")},
		{"another account's type", change{"recipient_id": []string{fmt.Sprintf("contacts_%d", otherType)}}, badRecipients},
		{"deleted type", change{"recipient_id": []string{fmt.Sprintf("contacts_%d", goneType)}}, badRecipients},
		{"deleted segment", change{"recipient_id": []string{fmt.Sprintf("contacts_%d", f.typ), fmt.Sprintf("segments_%d", goneSegment)}}, badRecipients},
		{"a type as a segment", change{"recipient_id": []string{fmt.Sprintf("segments_%d", typeNotSegment)}}, badRecipients},
		{"unknown table", change{"recipient_id": []string{fmt.Sprintf("lists_%d", f.typ)}}, badRecipients},
		{"no id", change{"recipient_id": []string{"contacts_"}}, badRecipients},
		{"signed id", change{"recipient_id": []string{fmt.Sprintf("contacts_+%d", f.typ)}}, badRecipients},
		{"bad exclude", change{"exclude_specific_recipient_id": []string{fmt.Sprintf("contacts_%d", otherType)}},
			invalid("exclude_specific_recipient_id", "The selected exclude specific recipient id is invalid.")},
		{"unknown template", change{"template_id": "6"}, invalid("template_id", "The selected template id is invalid.")},
		{"template id not a number", change{"template_id": "two"}, invalid("template_id", "The template id must be an integer.")},
		{"subject with a line break", change{"subject": "Hello\r\nBcc: x@example.com"},
			invalid("subject", "The subject may not contain line breaks or control characters.")},
		{"long name", change{"single_send_name": strings.Repeat("n", 256)}, invalid("single_send_name", "The single send name may not be greater than 255 characters.")},
		{"long preheader", change{"preheader": strings.Repeat("é", 256)}, invalid("preheader", "The preheader may not be greater than 255 characters.")},
		{"large html", change{"template_id": "1", "template_html": strings.Repeat("x", 1<<20+1)},
			invalid("template_html", "The template html may not be larger than 1048576 bytes.")},
		{"large json", change{"template_json": strings.Repeat("x", 1<<20+1)},
			invalid("template_json", "The template json may not be larger than 1048576 bytes.")},
	} {
		if r := post(tc.c); r.code != 422 || r.body != tc.want {
			t.Errorf("%s: got %d %.300s\nwant 422 %s", tc.name, r.code, r.body, tc.want)
		}
	}
	// Every problem at once, in the contract's order.
	post(change{"single_send_name": "a\tb", "sender_id": fmt.Sprint(unverified), "unsubscribe_group_id": fmt.Sprint(otherGroup),
		"schedule_type": "yes", "recipient_id": []string{"segments_0"}, "template_id": "0"}).expect(t, 422,
		`{"status":"failed","errors":{"single_send_name":["The single send name may not contain line breaks or control characters."],`+
			`"sender_id":["The selected sender is not verified."],"unsubscribe_group_id":["The selected unsubscribe group id is invalid."],`+
			`"schedule_type":["The schedule type field must be true or false."],"recipient_id":["The selected recipient id is invalid."],`+
			`"template_id":["The template id must be an integer."]}}`)
	noTable := f.form()
	for k := range noTable {
		if strings.HasPrefix(k, "recipient_id[") {
			noTable.Del(k)
		}
	}
	noTable.Set("recipient_id[0][id]", fmt.Sprint(f.typ))
	f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: noTable}).expect(t, 422, badRecipients)
	tooMany := make([]string, 101)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("contacts_%d", i+1)
	}
	post(change{"recipient_id": tooMany}).expect(t, 422, invalid("recipient_id", "The recipient id may not have more than 100 items."))
	if got := f.queued.take(); len(got) != 0 {
		t.Fatalf("dispatches on failures: %+v", got)
	}
	var n int
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT count(*) FROM single_sends WHERE user_id = $1", f.acct.id).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d sends stored by failures (%v)", n, err)
	}

	// An array sent as repeated keys, a lone value, or JSON objects.
	for _, body := range []any{
		url.Values{"recipient_id": {fmt.Sprintf("contacts_%d", f.typ), fmt.Sprintf("segments_%d", f.segment)}},
		url.Values{"recipient_id": {fmt.Sprintf("contacts_%d", f.typ)}},
		url.Values{"recipient_id[0][id]": {fmt.Sprint(f.typ)}, "recipient_id[0][table]": {"contacts_"}},
	} {
		full := f.form()
		for k := range full {
			if strings.HasPrefix(k, "recipient_id[") {
				full.Del(k)
			}
		}
		for k, v := range body.(url.Values) {
			full[k] = v
		}
		f.create(t, full)
	}
	f.queued.take()

	// With ALLOW_UNVERIFIED_SENDERS an unverified sender may send.
	g := newSendFixture(t, httpapi.Config{AllowUnverifiedSenders: true})
	unverified, _ = seedSender(t, g.acct, false)
	body := g.form()
	body.Set("sender_id", fmt.Sprint(unverified))
	g.create(t, body)
}

func TestSingleSendUpdate(t *testing.T) {
	t.Parallel()
	f := newSendFixture(t, httpapi.Config{})
	utr, id := f.create(t, f.form())
	f.queued.take()
	first := sendRow(t, utr)

	// New lists: the type keeps its token, the segment's goes, the second
	// type gets one; scheduled now.
	up := f.form()
	up.Set("utr", utr)
	up.Set("single_send_name", "Weekly, again")
	up.Del("recipient_id[1]")
	up.Del("recipient_id[2]")
	up.Set("recipient_id[1]", fmt.Sprintf("contacts_%d", f.typ2))
	up.Del("exclude_specific_recipient_id[0]")
	up.Set("schedule_type", "1")
	up.Set("schedule_date", "2032-12-31")
	up.Set("schedule_time", "23:00:01")
	f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &f.acct, body: up}).
		expect(t, 200, fmt.Sprintf(`{"status":"success","message":{"utr":%q}}`, utr))
	at := time.Date(2032, 12, 31, 23, 0, 1, 0, time.UTC)
	f.expectDispatch(t, id, 2, at)
	s := sendRow(t, utr)
	kt, kt2 := fmt.Sprintf("contacts_%d", f.typ), fmt.Sprintf("contacts_%d", f.typ2)
	if s.status != 1 || s.version != 2 || !s.dueAt.Equal(at) || len(s.tokens) != 2 || s.tokens[kt] != first.tokens[kt] ||
		len(s.tokens[kt2]) != 22 {
		t.Fatalf("after update %+v (before %+v)", s, first)
	}
	lists := fmt.Sprintf(`"recipient_id":[{"id":"%d","table":"contacts_"},{"id":"%d","table":"contacts_"}],"exclude_specific_recipient_id":[]`, f.typ, f.typ2)
	f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + utr, acct: &f.acct}).expectNormalized(t, 200,
		`{"status":"success","message":{"singleSend":[`+f.sendJSON(id, utr, lists, "Weekly, again",
			`"schedule_type":1,"schedule_date":"2032-12-31","schedule_time":"23:00:01"`, 1, s.tokens, zeroCounters)+`]}}`)

	// A draft becomes ready; back to immediate.
	setStatus(t, id, 0)
	up.Set("schedule_type", "0")
	f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &f.acct, body: up}).
		expect(t, 200, fmt.Sprintf(`{"status":"success","message":{"utr":%q}}`, utr))
	s = sendRow(t, utr)
	if s.status != 1 || s.version != 3 || s.dueAt.After(time.Now()) {
		t.Fatalf("draft after update %+v", s)
	}
	f.expectDispatch(t, id, 3, *s.dueAt)

	// Running and completed sends stay as they are.
	for status, word := range map[int]string{2: "running", 3: "completed"} {
		setStatus(t, id, status)
		f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &f.acct, body: up}).
			expect(t, 409, fmt.Sprintf(`{"status":"failed","errors":"This single send is %s and cannot be updated."}`, word))
		if s := sendRow(t, utr); s.version != 3 || int(s.status) != status {
			t.Fatalf("%s send changed: %+v", word, s)
		}
	}
	if got := f.queued.take(); len(got) != 0 {
		t.Fatalf("dispatches of refused updates: %+v", got)
	}

	// Unknown utrs, and another account's send.
	nf := `{"status":"failed","errors":"Record Not Found"}`
	for _, u := range []string{"6f1c1a7e-0000-4000-8000-000000000000", "not-a-uuid", utr + "0"} {
		up.Set("utr", u)
		f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &f.acct, body: up}).expect(t, 404, nf)
	}
	setStatus(t, id, 1)
	intruder := f.a.account()
	g := &sendFixture{a: f.a, acct: intruder}
	g.sender, _ = seedSender(t, intruder, true)
	g.group = seedGroup(t, f.a, intruder, "Mine").ID
	g.typ, g.typ2 = seedType(t, intruder, "A"), seedType(t, intruder, "B")
	g.segment = seedSegment(t, intruder, g.typ)
	theirs := g.form()
	theirs.Set("utr", utr)
	f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &intruder, body: theirs}).expect(t, 404, nf)
	if s := sendRow(t, utr); s.version != 3 {
		t.Fatalf("another account updated the send: %+v", s)
	}
}

func TestSingleSendDuplicate(t *testing.T) {
	t.Parallel()
	f := newSendFixture(t, httpapi.Config{})
	utr, id := f.create(t, f.form())
	f.queued.take()
	if _, err := testdb.New(t).Pool.Exec(context.Background(), `UPDATE single_sends SET status = 3, triggered = 9, delivered = 7,
		unique_opens = 4, total_opens = 6, bounces = 2, unsubscribes = 1, sent_at = now(), started_at = now(),
		first_delivery_id = 1, batch_size = 1000 WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	src := sendRow(t, utr)
	f.a.do(req{method: "POST", path: "/api/single/send/duplicate?utr=" + utr, acct: &f.acct}).
		expect(t, 200, `{"status":"success","message":"Duplicated Successfully"}`)
	f.a.do(req{method: "GET", path: "/api/single/send/duplicate?utr=" + utr, acct: &f.acct}).
		expect(t, 200, `{"status":"success","message":"Duplicated Successfully"}`)
	if got := f.queued.take(); len(got) != 0 {
		t.Fatalf("a draft was dispatched: %+v", got)
	}
	rows, err := testdb.New(t).Pool.Query(context.Background(), `SELECT utr::text FROM single_sends WHERE user_id = $1 AND id > $2 ORDER BY id`, f.acct.id, id)
	if err != nil {
		t.Fatal(err)
	}
	var copies []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, u)
	}
	if rows.Close(); rows.Err() != nil || len(copies) != 2 || copies[0] == copies[1] {
		t.Fatalf("copies %v (%v)", copies, rows.Err())
	}
	lists := fmt.Sprintf(`"recipient_id":[{"id":"%d","table":"contacts_"},{"id":"%d","table":"segments_"}],`+
		`"exclude_specific_recipient_id":[{"id":"%d","table":"contacts_"}]`, f.typ, f.segment, f.typ2)
	for _, c := range copies {
		s := sendRow(t, c)
		if s.status != 0 || s.version != 1 || s.dueAt != nil || len(s.tokens) != 2 {
			t.Fatalf("copy %+v", s)
		}
		for k, tok := range s.tokens {
			if tok == src.tokens[k] || len(tok) != 22 {
				t.Fatalf("copy's token of %s %q, source's %q: want a fresh one", k, tok, src.tokens[k])
			}
		}
		var engine bool
		if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT started_at IS NULL AND first_delivery_id IS NULL
			AND batch_size IS NULL AND sent_at IS NULL FROM single_sends WHERE id = $1`, s.id).Scan(&engine); err != nil || !engine {
			t.Fatalf("copy keeps the engine's columns (%v)", err)
		}
		f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + c, acct: &f.acct}).expectNormalized(t, 200,
			`{"status":"success","message":{"singleSend":[`+f.sendJSON(s.id, c, lists, "Weekly",
				`"schedule_type":0,"schedule_date":"0000-00-00","schedule_time":"00:00:00"`, 0, s.tokens, zeroCounters)+`]}}`)
	}

	nf := `{"status":"failed","errors":"Record not found"}`
	intruder := f.a.account()
	for _, r := range []req{
		{method: "POST", path: "/api/single/send/duplicate?utr=" + utr, acct: &intruder},
		{method: "GET", path: "/api/single/send/duplicate?utr=6f1c1a7e-0000-4000-8000-000000000000", acct: &f.acct},
		{method: "GET", path: "/api/single/send/duplicate?utr=x", acct: &f.acct},
	} {
		f.a.do(r).expect(t, 404, nf)
	}
	f.a.do(req{method: "POST", path: "/api/single/send/duplicate", acct: &f.acct, body: url.Values{"utr": {utr}}}).
		expect(t, 200, `{"status":"success","message":"Duplicated Successfully"}`)
	f.a.do(req{method: "POST", path: "/api/single/send/duplicate", acct: &f.acct}).
		expect(t, 422, `{"status":"failed","errors":{"utr":["The utr field is required."]}}`)
}

func TestSingleSendDelete(t *testing.T) {
	t.Parallel()
	f := newSendFixture(t, httpapi.Config{})
	var utrs []string
	var ids []int64
	for i := 0; i < 4; i++ {
		u, id := f.create(t, f.form())
		utrs, ids = append(utrs, u), append(ids, id)
	}
	nf := `{"status":"failed","errors":"Record not found"}`
	del := func(acct account, utr string) response {
		return f.a.do(req{method: "DELETE", path: "/api/single/send/delete?utr=" + utr, acct: &acct})
	}
	bulk := func(acct account, ids ...int64) response {
		v := url.Values{}
		for i, id := range ids {
			v.Set(fmt.Sprintf("strIds[%d]", i), fmt.Sprint(id))
		}
		return f.a.do(req{method: "POST", path: "/api/single/send/bulk-delete", acct: &acct, body: v})
	}
	live := func() int {
		var n int
		if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT count(*) FROM single_sends WHERE user_id = $1 AND deleted_at IS NULL",
			f.acct.id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	intruder := f.a.account()
	del(intruder, utrs[0]).expect(t, 404, nf)
	bulk(intruder, ids[0]).expect(t, 404, nf)
	f.a.do(req{method: "DELETE", path: "/api/single/send/delete", acct: &f.acct}).
		expect(t, 422, `{"status":"failed","errors":{"utr":["The utr field is required."]}}`)

	for status, word := range map[int]string{2: "running", 3: "completed"} {
		setStatus(t, ids[0], status)
		del(f.acct, utrs[0]).expect(t, 409, fmt.Sprintf(`{"status":"failed","errors":"This single send is %s and cannot be deleted."}`, word))
		bulk(f.acct, ids[1], ids[0]).expect(t, 409,
			fmt.Sprintf(`{"status":"failed","errors":"Single send %d is %s and cannot be deleted; nothing was deleted."}`, ids[0], word))
	}
	if n := live(); n != 4 {
		t.Fatalf("%d live sends after refused deletes, want 4", n)
	}

	setStatus(t, ids[0], 0)
	del(f.acct, utrs[0]).expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	del(f.acct, utrs[0]).expect(t, 404, nf)
	f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + utrs[0], acct: &f.acct}).expect(t, 404, nf)
	f.a.do(req{method: "POST", path: "/api/single/send/duplicate?utr=" + utrs[0], acct: &f.acct}).expect(t, 404, nf)
	f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &f.acct, body: func() url.Values {
		v := f.form()
		v.Set("utr", utrs[0])
		return v
	}()}).expect(t, 404, `{"status":"failed","errors":"Record Not Found"}`)

	// All or nothing: a deleted or unknown id leaves the others.
	bulk(f.acct, ids[1], ids[0]).expect(t, 404, nf)
	bulk(f.acct, ids[1], 1<<62).expect(t, 404, nf)
	if n := live(); n != 3 {
		t.Fatalf("%d live sends after refused bulk deletes, want 3", n)
	}
	f.a.do(req{method: "POST", path: "/api/single/send/bulk-delete", acct: &f.acct, body: jsonBody(`{"strIds":["x"]}`)}).
		expect(t, 422, `{"status":"failed","errors":{"strIds":["The str ids must be an array of integers."]}}`)
	f.a.do(req{method: "POST", path: "/api/single/send/bulk-delete", acct: &f.acct,
		body: jsonBody(fmt.Sprintf(`{"strIds":[%d,"%d",%d,%d]}`, ids[1], ids[2], ids[3], ids[1]))}).
		expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	if n := live(); n != 0 {
		t.Fatalf("%d live sends after the bulk delete", n)
	}
	f.a.do(req{method: "GET", path: "/api/single-send/list", acct: &f.acct}).expect(t, 200, `{"status":"success","message":{"singleSends":[]}}`)
}

// An automation's runs are rows of single_sends for the engine, never
// single sends of the API: not listed, not found by utr, not deletable.
func TestAutomationRunsAreNotSingleSends(t *testing.T) {
	t.Parallel()
	f := newSendFixture(t, httpapi.Config{})
	var id int64
	var utr string
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `INSERT INTO single_sends (user_id, utr, template_id, sender_id,
			unsubscribe_group_id, single_send_name, subject, preheader, status, automation_id, automation_schedule_id)
		VALUES ($1, gen_random_uuid(), 1, $2, $3, 'run', 's', 'p', 2, 1, 1) RETURNING id, utr::text`, f.acct.id, f.sender, f.group).Scan(&id, &utr); err != nil {
		t.Fatal(err)
	}
	f.a.do(req{method: "GET", path: "/api/single-send/list", acct: &f.acct}).expect(t, 200, `{"status":"success","message":{"singleSends":[]}}`)
	for _, r := range []req{
		{method: "GET", path: "/api/single-send/details?utr=" + utr, acct: &f.acct},
		{method: "DELETE", path: "/api/single/send/delete?utr=" + utr, acct: &f.acct},
		{method: "POST", path: "/api/single/send/duplicate?utr=" + utr, acct: &f.acct},
		{method: "POST", path: "/api/single/send/bulk-delete", acct: &f.acct, body: url.Values{"strIds[0]": {fmt.Sprint(id)}}},
	} {
		f.a.do(r).expect(t, 404, `{"status":"failed","errors":"Record not found"}`)
	}
}
