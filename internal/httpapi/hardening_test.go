package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/logging"
	"github.com/mailroom/mailroom/internal/racetest"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/testdb"
)

// Defects found by attacking the running service from outside (issue 13),
// each pinned here through the real router.

const notAnArray = `{"status":"failed","errors":{"strIds":["The str ids must be an array of integers."]}}`

// strIds is an array, or a 422: a scalar, an object, a boolean, a JSON
// string, a nested array or a null element never reads as ids, and deletes
// nothing.
func TestBulkDeleteStrIdsMustBeArray(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Newsletter")
	contact := sqlContact(t, acct.id, typ, "kept@example.com", "{}", false)
	a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &acct,
		body: url.Values{"email_address": {"gone@example.com"}}}).expect(t, 200, `{"status":"success","message":"Added Successfully"}`)
	a.do(req{method: "POST", path: "/api/notification-recipient/save", acct: &acct,
		body: url.Values{"email_address": {"n@example.com"}, "email_owner": {"N"}}}).expect(t, 200, `{"status":"success","message":"Added Successfully"}`)
	var unsub, notif int64
	pool := testdb.New(t).Pool
	if err := pool.QueryRow(context.Background(), "SELECT id FROM unsubscribes WHERE user_id = $1", acct.id).Scan(&unsub); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(context.Background(), "SELECT id FROM notification_recipients WHERE user_id = $1", acct.id).Scan(&notif); err != nil {
		t.Fatal(err)
	}

	for path, id := range map[string]int64{
		"/api/contacts/bulk-delete":               contact,
		"/api/global-unsubscribes/bulk-delete":    unsub,
		"/api/notification-recipient/bulk-delete": notif,
	} {
		n := strconv.FormatInt(id, 10)
		for _, body := range []any{
			url.Values{"strIds": {n}},
			url.Values{"strIds": {n, n}},
			url.Values{"strIds[a]": {n}},
			url.Values{"strIds[0][0]": {n}},
			url.Values{"strIds[0]": {n}, "strIds[1]": {"true"}},
			multipartBody{"strIds": n},
			jsonBody(`{"strIds":` + n + `}`),
			jsonBody(`{"strIds":"` + n + `"}`),
			jsonBody(`{"strIds":"[` + n + `]"}`),
			jsonBody(`{"strIds":{"0":` + n + `}}`),
			jsonBody(`{"strIds":true}`),
			jsonBody(`{"strIds":[true]}`),
			jsonBody(`{"strIds":[[` + n + `]]}`),
			jsonBody(`{"strIds":[` + n + `,null]}`),
			jsonBody(`{"strIds":[` + n + `.0]}`),
			jsonBody(`{"strIds":[{"id":` + n + `}]}`),
			jsonBody(`{"strIds":[` + n + `,{}]}`),
			jsonBody(`{"strIds":[` + n + `,[]]}`),
			jsonBody(`{"strIds":[{},` + n + `]}`),
		} {
			if r := a.do(req{method: "POST", path: path, acct: &acct, body: body}); r.code != 422 || r.body != notAnArray {
				t.Fatalf("%s %v: %d %s", path, body, r.code, r.body)
			}
		}
	}
	// A JSON name with brackets would read as an array element.
	a.do(req{method: "POST", path: "/api/contacts/bulk-delete", acct: &acct, body: jsonBody(`{"strIds[0]":` + strconv.FormatInt(contact, 10) + `}`)}).
		expect(t, 422, `{"status":"failed","errors":{"body":["The request body's field names may not contain brackets."]}}`)
	if contactDeleted(t, contact) {
		t.Fatal("a refused bulk delete deleted the contact")
	}
	a.do(req{method: "GET", path: "/api/global-unsubscribes", acct: &acct}).expectNormalized(t, 200,
		listOf("unSubscribers", "", unsubRow(unsub, acct.id, 0, "gone@example.com")))
	// Arrays of integers and numeric strings are ids, in every encoding.
	a.do(req{method: "POST", path: "/api/contacts/bulk-delete", acct: &acct,
		body: jsonBody(fmt.Sprintf(`{"strIds":["%d"]}`, contact))}).expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
}

// More ids than net/url takes (10,000) still read as a url-encoded array.
func TestBulkDeleteManyIDsURLEncoded(t *testing.T) {
	racetest.Heavy(t)
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Many")
	var ids []int64
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `WITH x AS (
		INSERT INTO contacts (user_id, contact_type_id, email)
		SELECT $1, $2, 'c' || g || '@example.com' FROM generate_series(1, 12000) g RETURNING id)
		SELECT array_agg(id) FROM x`, acct.id, typ).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte('&')
		}
		fmt.Fprintf(&b, "strIds%%5B%d%%5D=%d", i, id)
	}
	a.do(req{method: "POST", path: "/api/contacts/bulk-delete", acct: &acct,
		body: rawBody{"application/x-www-form-urlencoded", b.String()}}).expect(t, 200, `{"status":"success","message":"Deleted Successfully"}`)
	var live int
	if err := testdb.New(t).Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM contacts WHERE contact_type_id = $1 AND deleted_at IS NULL", typ).Scan(&live); err != nil {
		t.Fatal(err)
	}
	if live != 0 {
		t.Fatalf("%d contacts left", live)
	}
}

// Malformed multipart bodies are 422s on the upload as on every other
// route, never 500s; a body cut off anywhere, even inside a part's
// headers, is refused rather than read as the parts before the cut.
func TestMalformedMultipart(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Uploads")
	const ct = "multipart/form-data; boundary=B"
	typePart := "--B\r\nContent-Disposition: form-data; name=\"contact_type_id\"\r\n\r\n" + strconv.FormatInt(typ, 10) + "\r\n"
	filePart := func(disposition string) string {
		return "--B\r\n" + disposition + "\r\nContent-Type: text/csv\r\n\r\nemail\r\nx@example.com\r\n"
	}
	okFile := filePart(`Content-Disposition: form-data; name="file"; filename="a.csv"`)
	nameField := "--B\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nSome name\r\n"
	bodies := map[string]struct{ upload, other string }{
		"NUL in filename":         {typePart + filePart("Content-Disposition: form-data; name=\"file\"; filename=\"a\x00.csv\"") + "--B--\r\n", nameField + "--B\r\nContent-Disposition: form-data; name=\"x\"; filename=\"a\x00\"\r\n\r\nv\r\n--B--\r\n"},
		"NUL in name":             {typePart + filePart("Content-Disposition: form-data; name=\"fi\x00le\"; filename=\"a.csv\"") + "--B--\r\n", "--B\r\nContent-Disposition: form-data; name=\"na\x00me\"\r\n\r\nv\r\n--B--\r\n"},
		"header without colon":    {typePart + "--B\r\nContent-Disposition form-data\r\n\r\nv\r\n--B--\r\n", "--B\r\nContent-Disposition form-data\r\n\r\nv\r\n--B--\r\n"},
		"bare CR in header":       {typePart + "--B\r\nContent-Disposition: form-data;\r name=\"file\"\r\n\r\nv\r\n--B--\r\n", "--B\r\nContent-Disposition: form-data;\r name=\"name\"\r\n\r\nv\r\n--B--\r\n"},
		"cut inside part headers": {typePart + okFile + "--B\r\nContent-Disposition: form-da", nameField + "--B\r\nContent-Disposition: form-da"},
		"cut after a delimiter":   {typePart + okFile + "--B\r\n", nameField + "--B\r\n"},
		"cut inside a value":      {typePart + okFile + "--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nabc", nameField + "--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nabc"},
		"no close delimiter":      {typePart + okFile, nameField},
	}
	for name, b := range bodies {
		t.Run(name, func(t *testing.T) {
			r := a.do(req{method: "POST", path: "/api/contacts/upload-csv", acct: &acct, body: rawBody{ct, b.upload}})
			if r.code != 422 || !strings.Contains(r.body, `"file":["The upload is not a well-formed multipart body."]`) {
				t.Errorf("upload: %d %s", r.code, r.body)
			}
			a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: rawBody{ct, b.other}}).
				expect(t, 422, `{"status":"failed","errors":{"body":["The request body is not a well-formed multipart body."]}}`)
		})
	}
	// Nothing was imported nor added.
	var n int
	if err := testdb.New(t).Pool.QueryRow(context.Background(),
		"SELECT (SELECT count(*) FROM contacts WHERE user_id = $1) + (SELECT count(*) FROM contact_types WHERE user_id = $1)",
		acct.id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d rows written by refused requests", n-1)
	}
	// The well-formed body is taken.
	a.do(req{method: "POST", path: "/api/contacts/upload-csv", acct: &acct, body: rawBody{ct, typePart + okFile + "--B--\r\n"}}).
		expect(t, 200, imported)
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: rawBody{ct, nameField + "--B--"}}).
		expect(t, 200, `{"status":"success","message":"Added Successfully"}`)
}

// JSON that nests deeply, or whose flattened keys would dwarf the body, is
// refused before it is built: the 408 KB body that took 2.45 GB.
func TestJSONBombs(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	deep := `{"name":` + strings.Repeat("[", 4000) + strings.Repeat("1,", 200000) + "1" + strings.Repeat("]", 4000) + "}"
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: jsonBody(deep)}).
		expect(t, 422, `{"status":"failed","errors":{"body":["The request body may not nest more than 8 levels deep."]}}`)
	// Arrays of arrays under a long name: few bytes, a long key each.
	wide := `{"` + strings.Repeat("n", 50000) + `":[` + strings.Repeat("[1],", 20000) + `[1]]}`
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: jsonBody(wide)}).
		expect(t, 422, `{"status":"failed","errors":{"body":["The request body holds too many fields for its size."]}}`)
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: jsonBody(`{"name":"ok"} {"name":"x"}`)}).
		expect(t, 422, `{"status":"failed","errors":{"body":["The request body is not valid JSON."]}}`)
}

// Invalid UTF-8 is refused in JSON as in forms, also as an escaped half
// of a surrogate pair, which the decoder would store as U+FFFD.
func TestJSONInvalidUTF8(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	const notUTF8 = `{"status":"failed","errors":{"body":["The request body must be UTF-8 text."]}}`
	for _, body := range []string{
		"{\"name\":\"ab\xff\"}",
		"{\"name\":\"ab\xc3\"}",
		`{"name":"ab\ud800"}`,
		`{"name":"ab\udc00cd"}`,
		`{"name":"ab\ud800\u0041"}`,
	} {
		a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: jsonBody(body)}).expect(t, 422, notUTF8)
	}
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: jsonBody(`{"name":"ok \ud83d\ude00 \\ud800"}`)}).
		expect(t, 200, `{"status":"success","message":"Added Successfully"}`)
	a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: url.Values{"name": {"ab\xff"}}}).
		expect(t, 422, `{"status":"failed","errors":{"name":["The name must be UTF-8 text without NUL characters."]}}`)
}

// Single-line fields refuse line breaks and control characters on every
// path, and one length applies on every path.
func TestSingleLineFields(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Lines")
	seedField(t, acct, "company_name", "text")
	named := cond(typ, 2, "is not empty")
	named.Set("segment_name", "Named")
	segment := saveSegment(t, a, acct, named)
	long := strings.Repeat("é", 256)
	bad := map[string]string{
		"CRLF":    "Eve\r\nBcc: victim@example.com",
		"LF":      "Eve\nX",
		"CR":      "Eve\rX",
		"TAB":     "Eve\tX",
		"NEL":     "Eve\u0085X",
		"LS":      "Eve\u2028X",
		"PS":      "Eve\u2029X",
		"ESC":     "Eve\x1bX",
		"DEL":     "Eve\x7fX",
		"C1 CSI":  "Eve\u009bX",
		"too big": long,
	}
	for name, v := range bad {
		t.Run(name, func(t *testing.T) {
			lineMsg := func(label string) string {
				if v == long {
					return "The " + label + " may not be greater than 255 characters."
				}
				return "The " + label + " may not contain line breaks or control characters."
			}
			expectField := func(r response, field, label string) {
				t.Helper()
				want := fmt.Sprintf(`{"status":"failed","errors":{%q:[%q]}}`, field, lineMsg(label))
				if r.code != 422 || r.body != want {
					t.Errorf("%s: got %d %s\nwant 422 %s", field, r.code, r.body, want)
				}
			}
			contact := url.Values{"contact_type_id": {fmt.Sprint(typ)}, "email": {"a@example.com"}, "country": {"276"}}
			for _, f := range []string{"first_name", "last_name", "state", "city", "address_line1", "address_line2", "state_province_region", "postal_code"} {
				body := url.Values{}
				for k, vs := range contact {
					body[k] = vs
				}
				body.Set(f, v)
				expectField(a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: body}), f, strings.ReplaceAll(f, "_", " "))
			}
			body := url.Values{"custom_field[company_name]": {v}}
			for k, vs := range contact {
				body[k] = vs
			}
			expectField(a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: body}), "custom_field.company_name", "company name")
			expectField(a.do(req{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: url.Values{"name": {v}}}), "name", "name")
			expectField(a.do(req{method: "POST", path: "/api/unsubscribes-groups/save", acct: &acct,
				body: url.Values{"group_name": {v}, "description": {"d"}, "is_display": {"1"}}}), "group_name", "group name")
			expectField(a.do(req{method: "POST", path: "/api/notification-recipient/save", acct: &acct,
				body: url.Values{"email_address": {"n@example.com"}, "email_owner": {v}}}), "email_owner", "name")
			expectField(a.do(req{method: "POST", path: "/api/segment/email/store", acct: &acct,
				body: url.Values{"segment_id": {fmt.Sprint(segment)}, "first_name": {v}, "last_name": {"L"}, "email": {"s@example.com"}}}), "first_name", "first name")
			seg := cond(typ, 2, "is not empty")
			seg.Set("segment_name", v)
			expectField(a.do(req{method: "POST", path: "/api/segment/save", acct: &acct, body: seg}), "segment_name", "segment name")
			// The CSV import, for a reserved and a custom column.
			for _, col := range []string{"first_name", "company_name"} {
				file := "email," + col + "\r\nx@example.com,\"" + v + "\"\r\n"
				want := fmt.Sprintf(`{"status":"failed","errors":{"file":[%q]}}`, "Line 2: "+lineMsg(strings.ReplaceAll(col, "_", " ")))
				if r := upload(a, acct, typ, file); r.code != 422 || r.body != want {
					t.Errorf("csv %s: got %d %s\nwant %s", col, r.code, r.body, want)
				}
			}
		})
	}
	// Nothing of the above was stored.
	var n int
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM contacts WHERE user_id = $1) + (SELECT count(*) FROM contact_types WHERE user_id = $1) +
		(SELECT count(*) FROM notification_recipients WHERE user_id = $1) + (SELECT count(*) FROM segments WHERE user_id = $1) +
		(SELECT count(*) FROM segment_entries WHERE user_id = $1)`, acct.id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 { // the seeded type and segment
		t.Fatalf("%d rows stored by refused requests", n-2)
	}
	// A description is multi-line text: line breaks pass, other controls not.
	a.do(req{method: "POST", path: "/api/unsubscribes-groups/save", acct: &acct,
		body: url.Values{"group_name": {"G"}, "description": {"line one\r\nline two\tend"}, "is_display": {"1"}}}).
		expect(t, 200, `{"status":"success","message":"Saved Successfully"}`)
	a.do(req{method: "POST", path: "/api/unsubscribes-groups/save", acct: &acct,
		body: url.Values{"group_name": {"G"}, "description": {"bell\x07"}, "is_display": {"1"}}}).
		expect(t, 422, `{"status":"failed","errors":{"description":["The description may not contain control characters."]}}`)
	// An address with a control character is not an address.
	a.do(req{method: "POST", path: "/api/notification-recipient/save", acct: &acct,
		body: url.Values{"email_address": {"\"a\x0b\"@example.com"}, "email_owner": {"N"}}}).
		expect(t, 422, `{"status":"failed","errors":{"email_address":["The email address must be a valid email address."]}}`)
}

// saveSegment saves a segment (body) through the API and returns its id.
func saveSegment(t *testing.T, a *api, acct account, body any) int64 {
	t.Helper()
	a.do(req{method: "POST", path: "/api/segment/save", acct: &acct, body: body}).
		expect(t, 200, `{"status":"success","message":"Saved Successfully"}`)
	var id int64
	if err := testdb.New(t).Pool.QueryRow(context.Background(),
		"SELECT max(id) FROM segments WHERE user_id = $1", acct.id).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// Every answer says nosniff: successes, failures and unknown paths.
func TestNoSniff(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	for _, r := range []req{
		{method: "GET", path: "/api/contacts-type", acct: &acct},
		{method: "GET", path: "/api/contacts-type"},
		{method: "GET", path: "/api/nowhere", acct: &acct},
		{method: "GET", path: "/healthz"},
		{method: "GET", path: "/api/contacts/csv-sample/download", acct: &acct},
	} {
		if got := a.do(r).header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options %q", r.method, r.path, got)
		}
	}
}

// A request whose client has gone (its context canceled) is no server
// fault: 499 with nothing written, never a logged 500.
func TestClientGone(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, r := range []req{
		{method: "GET", path: "/api/contacts-type", acct: &acct, ctx: gone},
		{method: "GET", path: "/api/automations", acct: &acct, ctx: gone},
		{method: "POST", path: "/api/contacts-type/add", acct: &acct, body: url.Values{"name": {"x"}}, ctx: gone},
	} {
		if got := a.do(r); got.code != 499 || got.body != "" {
			t.Errorf("%s %s with its client gone: %d %q, want 499 and no body", r.method, r.path, got.code, got.body)
		}
	}
}

// Every answer carries X-Request-Id: the client's when it is a sane token,
// else a fresh one; the access log line holds the same id.
func TestRequestID(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	a := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 1 << 20}, func(d *httpapi.Deps) {
		d.Log = logging.New(&buf, "info")
	})
	acct := a.account()
	if got := a.do(req{method: "GET", path: "/api/contacts-type", acct: &acct, header: map[string]string{"X-Request-Id": "abc-123_x.y"}}); got.header.Get("X-Request-Id") != "abc-123_x.y" {
		t.Errorf("a sane client id answered as %q", got.header.Get("X-Request-Id"))
	}
	seen := map[string]bool{}
	for _, id := range []string{"", "has space", "new\nline", strings.Repeat("a", 129), "ünï"} {
		got := a.do(req{method: "GET", path: "/healthz", header: map[string]string{"X-Request-Id": id}}).header.Get("X-Request-Id")
		if len(got) != 16 || got == id || seen[got] {
			t.Errorf("client id %q answered as %q, want a fresh 16-character id", id, got)
		}
		seen[got] = true
	}
	if !strings.Contains(buf.String(), `"request_id":"abc-123_x.y"`) {
		t.Errorf("no access log line with the client's request id:\n%s", buf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The per-account request limit (a token bucket in Redis): past its
// burst an account gets 429 `Too Many Requests.` with Retry-After, another
// account is not touched, and with Redis away requests go through.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 11})
	defer rdb.Close()
	prefix := fmt.Sprintf("test:%d:", time.Now().UnixNano())
	limiter := ratelimit.New(rdb, prefix, 1, 3)
	a := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 1 << 20}, func(d *httpapi.Deps) {
		d.RateLimit = limiter.Allow
	})
	one, two := a.account(), a.account()
	for i := range 3 {
		if got := a.do(req{method: "GET", path: "/api/contacts-type", acct: &one}); got.code != 200 {
			t.Fatalf("request %d within the burst: %d %s", i+1, got.code, got.body)
		}
	}
	got := a.do(req{method: "GET", path: "/api/contacts-type", acct: &one})
	got.expect(t, 429, `{"status":"failed","errors":"Too Many Requests."}`)
	if ra := got.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1", ra)
	}
	if got := a.do(req{method: "GET", path: "/api/contacts-type", acct: &two}); got.code != 200 {
		t.Errorf("another account: %d %s", got.code, got.body)
	}
	// No keys: the authentication failure comes first, no bucket is spent.
	a.do(req{method: "GET", path: "/api/contacts-type"}).expect(t, 401,
		`{"status":"failed","errors":{"PublicKey":["The public key field is required."],"SecretKey":["The secret key field is required."]}}`)

	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	b := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 1 << 20}, func(d *httpapi.Deps) {
		d.RateLimit = ratelimit.New(down, prefix, 1, 1).Allow
	})
	acct := b.account()
	for i := range 3 {
		if got := b.do(req{method: "GET", path: "/api/contacts-type", acct: &acct}); got.code != 200 {
			t.Fatalf("request %d with Redis away: %d %s", i+1, got.code, got.body)
		}
	}
}
