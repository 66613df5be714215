package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/testdb"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json golden files")

// api is the real router over the package's test database and local Redis.
type api struct {
	t testing.TB
	h http.Handler
}

func newAPI(t testing.TB) *api {
	t.Helper()
	return newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 64 << 20})
}

// newAPIWith is newAPI with its own configuration; each with changes the
// dependencies (hooks such as EnqueueDispatch).
func newAPIWith(t testing.TB, cfg httpapi.Config, with ...func(*httpapi.Deps)) *api {
	t.Helper()
	d := testdb.New(t)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { rdb.Close() })
	deps := httpapi.Deps{
		DB:         d,
		Geo:        testdb.Geo(t),
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		RedisPing:  func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		LookupHost: lookupTestHost, // no test waits on the machine's resolver
	}
	for _, f := range with {
		f(&deps)
	}
	return &api{t: t, h: httpapi.New(cfg, deps)}
}

// account is a fresh account's credentials.
type account struct {
	id             int64
	public, secret string
}

func (a *api) account() account {
	a.t.Helper()
	id, keys, err := testdb.New(a.t).CreateAccount(context.Background(), "test")
	if err != nil {
		a.t.Fatal(err)
	}
	return account{id: id, public: keys.Public, secret: keys.Secret}
}

// response is a recorded answer.
type response struct {
	code   int
	body   string
	header http.Header
}

// req is one request; body is nil, url.Values (url-encoded), multipartBody
// or jsonBody.
type req struct {
	method, path string
	acct         *account
	body         any
	header       map[string]string
	ctx          context.Context // the request's, when set
}

type jsonBody string

// rawBody is sent as it is, with its content type.
type rawBody struct{ contentType, body string }

type multipartBody map[string]string

// fileBody is a multipart upload: fields, then the file (or the file
// first when fileFirst).
type fileBody struct {
	fields    map[string]string
	filename  string
	content   string
	fileFirst bool
}

func (a *api) do(r req) response {
	a.t.Helper()
	var body io.Reader
	var ct string
	switch b := r.body.(type) {
	case nil:
	case url.Values:
		body, ct = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	case jsonBody:
		body, ct = strings.NewReader(string(b)), "application/json"
	case rawBody:
		body, ct = strings.NewReader(b.body), b.contentType
	case multipartBody:
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for k, v := range b {
			w.WriteField(k, v)
		}
		w.Close()
		body, ct = &buf, w.FormDataContentType()
	case fileBody:
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		writeFile := func() {
			fw, err := w.CreateFormFile("file", b.filename)
			if err != nil {
				a.t.Fatal(err)
			}
			io.WriteString(fw, b.content)
		}
		if b.fileFirst {
			writeFile()
		}
		for k, v := range b.fields {
			w.WriteField(k, v)
		}
		if !b.fileFirst && b.filename != "" {
			writeFile()
		}
		w.Close()
		body, ct = &buf, w.FormDataContentType()
	default:
		a.t.Fatalf("unknown body type %T", b)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	if ct != "" {
		hr.Header.Set("Content-Type", ct)
	}
	if r.acct != nil {
		hr.Header.Set("PublicKey", r.acct.public)
		hr.Header.Set("SecretKey", r.acct.secret)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	if r.ctx != nil {
		hr = hr.WithContext(r.ctx)
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, hr)
	return response{code: rec.Code, body: rec.Body.String(), header: rec.Header()}
}

// expect asserts the exact status and body.
func (r response) expect(t *testing.T, code int, body string) {
	t.Helper()
	if r.code != code || r.body != body {
		t.Fatalf("got %d %s\nwant %d %s", r.code, r.body, code, body)
	}
}

var (
	timestampRE = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"`)
)

// normalize replaces timestamps so bodies compare across runs.
func normalize(s string) string {
	return timestampRE.ReplaceAllString(s, `"<timestamp>"`)
}

// golden compares body with testdata/name.json (rewritten with -update),
// both indented for readable diffs.
func golden(t *testing.T, name, body string) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(normalize(body)), "", "  "); err != nil {
		t.Fatalf("response is not JSON: %v: %.200s", err, body)
	}
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("%s differs from the response:\n%s", path, buf.String())
	}
}

// waitBlocked returns once a statement whose text is LIKE query is waiting
// for a lock held by the backend pid. It fails the test if done delivers
// first (the request finished without waiting) or after 10 s. Polling is on
// pg_stat_activity, which has no event to wait on.
func waitBlocked(t *testing.T, pid int32, query string, done <-chan response) {
	t.Helper()
	ctx := context.Background()
	pool := testdb.New(t).Pool
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE $2
			  AND $1::int = ANY (pg_blocking_pids(pid)))`, pid, query).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("the request did not wait for the open transaction: %d %s", r.code, r.body)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no statement like %q blocked on backend %d", query, pid)
		}
	}
}

// openWriter begins a transaction that writes a contact as every contact
// writer does (its type's writer lock shared, its row FOR SHARE) and
// leaves it open; it returns the transaction and its backend pid.
func openWriter(t *testing.T, acct account, typeID int64, email string) (pgx.Tx, int32) {
	t.Helper()
	ctx := context.Background()
	tx, err := testdb.New(t).Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) })
	var pid int32
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared(1954115685, $1::int)`, typeID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT user_id, id, $3, 'Writer' FROM contact_types WHERE id = $2 AND user_id = $1 FOR SHARE`,
		acct.id, typeID, email); err != nil {
		t.Fatal(err)
	}
	return tx, pid
}
