package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// hostileBodies are malformed, mistyped and oversized inputs, each sent to
// every route of the API.
var hostileBodies = []struct{ ct, body string }{
	{"", ""},
	{"application/json", ""},
	{"application/json", "{"},
	{"application/json", "[]"},
	{"application/json", `"x"`},
	{"application/json", `{"name":["a","b"],"email":{"x":1},"contact_type_id":[1],"segment_id":true,"strIds":"1"}`},
	{"application/json", `{"contact_type_id":"99999999999999999999999","country":"-1","email":"a@b.co","first_name":null}`},
	{"application/json", `{"contact_type_id":1e400,"select_field":[0,1,"x"],"select_operator":["is",null],"value":[[[1]]]}`},
	{"application/json", `{"select_field":["0"],"select_operator":["is"],"value":["0000-01-01T00:00"],"contact_type_id":1,"segment_name":"s"}`},
	{"application/json", `{"select_field":["0"],"select_operator":["is between"],"value":[["9999-12-31T23:59","0001-01-01"]],"contact_type_id":1,"segment_name":"s"}`},
	{"application/json", `{"email_address":"` + strings.Repeat("a@b.co,", 2000) + `x"}`},
	{"application/json", `{"is_display":{"a":1},"group_name":"\u2028","description":"\u0000"}`},
	{"application/json", "{\"name\":\"\xff\"}"},
	{"application/x-www-form-urlencoded", "%%%"},
	{"application/x-www-form-urlencoded", "strIds[0]=1&strIds[0][x]=2&strIds[]=3&contact_type_id=0x10&segment_id=1e3"},
	{"application/x-www-form-urlencoded", "value[99999999999999999999][0]=1&select_field[-1]=2&custom_field[]=3&custom_field[a][b]=4"},
	{"multipart/form-data", "--B\r\n\r\n--B--"},
	{"multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"contact_type_id\"\r\n\r\n1\r\n--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.csv\"\r\n\r\nemail,age,email\r\n--B--"},
	{"multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.csv\"\r\n\r\n\"unclosed\r\n--B--"},
	{"multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"a\x00\"\r\n\r\nv\r\n--B--"},
	{"text/csv", "email\na@b.co"},
}

// hostileQueries are query strings sent with each body.
var hostileQueries = []string{
	"",
	"contact_id=1&segment_id=1&id=1&contact_type_id=1&segment_recipient_id=1&page=1&per_page=50&utr=6f1c1a7e-0000-4000-8000-000000000000",
	"contact_id=99999999999999999999&segment_id=-1&id=0&contact_type_id=x&page=0&per_page=100000",
	"page=99999999999999999999&per_page=-1&country_id=1e9&state_id=%00",
	"contact_id=%ff&segment_id=1%00&id=%E2%80%A8&utr=%00",
	"utr=6F1C1A7E-0000-4000-8000-00000000000%E2%80%A8&after_id=-1",
}

// Nothing any client can send makes any route answer 500 or something
// other than the JSON envelope (or the CSV sample, or the API's
// description, which is a document of its own).
func TestHostileInputNever500(t *testing.T) {
	t.Parallel()
	d, r := hostileRouter(t)
	_, keys, err := d.CreateAccount(context.Background(), "hostile")
	if err != nil {
		t.Fatal(err)
	}
	var typ int64
	if err := d.Pool.QueryRow(context.Background(), `INSERT INTO contact_types (user_id, name)
		SELECT id, 'T' FROM accounts WHERE public_key = $1 RETURNING id`, keys.Public).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, route := range r.Routes() {
		if !strings.HasPrefix(route.Path, "/api/") {
			continue
		}
		for _, q := range append(hostileQueries, fmt.Sprintf("contact_type_id=%d&segment_id=%d", typ, typ)) {
			bodies := hostileBodies
			if route.Method == "GET" || route.Method == "DELETE" {
				// They read the query string only: bodies cost time (the
				// whole geography is 9 MB) and prove nothing more.
				bodies = bodies[:3]
			}
			for _, b := range bodies {
				n++
				req := httptest.NewRequest(route.Method, route.Path+"?"+q, strings.NewReader(b.body))
				if b.ct != "" {
					req.Header.Set("Content-Type", b.ct)
				}
				req.Header.Set("PublicKey", keys.Public)
				req.Header.Set("SecretKey", keys.Secret)
				rec := httptest.NewRecorder()
				r.ServeHTTP(rec, req)
				what := fmt.Sprintf("%s %s?%s %s %.80q", route.Method, route.Path, q, b.ct, b.body)
				if rec.Code >= 500 {
					t.Errorf("%s: %d %s", what, rec.Code, rec.Body)
					continue
				}
				if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/csv") || route.Path == openAPIPath {
					continue
				}
				var env struct {
					Status string          `json:"status"`
					Msg    json.RawMessage `json:"message"`
					Errs   json.RawMessage `json:"errors"`
				}
				dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
				if err := dec.Decode(&env); err != nil || (env.Status != "success" && env.Status != "failed") {
					t.Errorf("%s: %d not an envelope: %.200s", what, rec.Code, rec.Body)
				}
			}
		}
	}
	t.Logf("%d requests", n)
}

// hostileParams stand in for the :token and :file of the public routes.
var hostileParams = []string{"", "x", "%00", "%ff%fe", "..%2F..%2Fetc%2Fpasswd", "..", strings.Repeat("A", 10000),
	"AQUCAABhQGIuZXhhbXBsZQCkxe_C0AWZ5IFsi83lLR8", "%E2%80%A8", "newsletter.png%00", "a%20b", "%2e%2e"}

// The public routes (mail links, previews) answer hostile tokens, file
// names and bodies with a page or the envelope, never a 500, and change
// nothing. Not parallel: the rows it counts are the whole database's,
// which the package's parallel tests write.
func TestHostilePublicRoutesNever500(t *testing.T) {
	d, r := hostileRouter(t)
	var before int64
	count := func() int64 {
		var n int64
		if err := d.Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM unsubscribes) + (SELECT count(*) FROM events)
			+ (SELECT count(*) FROM senders WHERE is_verified = 1)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before = count()
	n := 0
	for _, route := range r.Routes() {
		if strings.HasPrefix(route.Path, "/api/") || strings.HasPrefix(route.Path, "/monitoring") || !strings.Contains(route.Path, ":") {
			continue
		}
		for _, p := range hostileParams {
			path := route.Path[:strings.IndexByte(route.Path, ':')] + p
			bodies := hostileBodies
			if route.Method == "GET" {
				bodies = bodies[:1]
			}
			// A copy: appended to in place, hostileBodies[1] was overwritten
			// under the other hostile test (a data race, and a body lost).
			for _, b := range append(bodies[:len(bodies):len(bodies)], struct{ ct, body string }{"application/x-www-form-urlencoded", "List-Unsubscribe=One-Click&action=all&group=1"}) {
				n++
				req := httptest.NewRequest(route.Method, path+"?done=%00", strings.NewReader(b.body))
				if b.ct != "" {
					req.Header.Set("Content-Type", b.ct)
				}
				rec := httptest.NewRecorder()
				r.ServeHTTP(rec, req)
				if rec.Code >= 500 || rec.Code < 200 {
					t.Errorf("%s %s %s %.80q: %d %.200s", route.Method, path, b.ct, b.body, rec.Code, rec.Body)
				}
			}
		}
	}
	if after := count(); after != before {
		t.Errorf("hostile requests changed %d rows", after-before)
	}
	t.Logf("%d requests", n)
}

// hostileRouter is the router with small body caps over the package's
// test database.
func hostileRouter(t *testing.T) (*postgres.DB, *gin.Engine) {
	d := testdb.New(t)
	srv := newServer(Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 1 << 20, MaxImports: 2}, Deps{
		DB: d, Geo: testdb.Geo(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		RedisPing: func(context.Context) error { return nil },
	})
	return d, srv.router()
}
