package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

func TestPanicIsLogged500(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h := New(Config{MaxBodyBytes: 1 << 10}, Deps{Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	h.(*gin.Engine).GET("/boom", func(*gin.Context) { panic("kaboom") })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
	if rec.Code != 500 || rec.Body.String() != `{"status":"failed","errors":"Internal Server Error"}` {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), `"panic":"kaboom"`) {
		t.Fatalf("panic not logged: %s", logs.String())
	}
}

// The request log leaves out the token of a link path: a console
// invitation or reset and a sender's verification work for whoever has
// the address until they are used.
func TestLogLeavesLinkTokensOut(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	con := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	h := New(Config{MaxBodyBytes: 1 << 10}, Deps{Log: slog.New(slog.NewJSONHandler(&logs, nil)),
		Console: con, ConsolePaths: []string{"/invite", "/reset", "/account"}})
	for _, p := range []string{"/invite/InviteSecretToken", "/reset/ResetSecretToken", "/senders/verify/VerifySecretToken", "/account/team/7/role"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	if strings.Contains(logs.String(), "SecretToken") {
		t.Fatalf("a link's token is in the log:\n%s", logs.String())
	}
	for _, want := range []string{`"path":"/invite/{token}"`, `"path":"/reset/{token}"`, `"path":"/account/team/7/role"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

// Each error code answers its status with the route's wording.
func TestFailMapsCodes(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewJSONHandler(&logs, nil))}
	var p mail.Problems
	p.Required("segment_name")
	p.Add("contact_type_id", "The contact type id must be an integer.")
	p.Add("segment_name", "second")
	tests := []struct {
		err      error
		notFound string
		code     int
		body     string
	}{
		{p.Err(), "", 422, `{"status":"failed","errors":{"segment_name":["The segment name field is required.","second"],"contact_type_id":["The contact type id must be an integer."]}}`},
		{mail.NotFound(), recordNotFound, 404, `{"status":"failed","errors":"Record Not Found"}`},
		{mail.NotFound(), recordNotFoundLower, 404, `{"status":"failed","errors":"Record not found"}`},
		{mail.Errorf(mail.ECONFLICT, "The single send has already started."), "", 409, `{"status":"failed","errors":"The single send has already started."}`},
		{&mail.Error{Code: mail.ETOOMANY}, "", 429, `{"status":"failed","errors":"Too Many Requests."}`},
		{errors.New("pq: secret detail"), "", 500, `{"status":"failed","errors":"Internal Server Error"}`},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(rec)
		c.Request = httptest.NewRequest("GET", "/", nil)
		c.Set(notFoundKey, tt.notFound)
		s.fail(c, tt.err)
		if rec.Code != tt.code || rec.Body.String() != tt.body {
			t.Errorf("%v: got %d %s, want %d %s", tt.err, rec.Code, rec.Body, tt.code, tt.body)
		}
	}
	if !strings.Contains(logs.String(), "secret detail") {
		t.Error("unexpected error not logged")
	}
}

func TestMonitoringNeedsBasicAuth(t *testing.T) {
	t.Parallel()
	mon := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "asynqmon "+r.URL.Path) })
	h := New(Config{MaxBodyBytes: 1 << 10, MonitoringUser: "ops", MonitoringPassword: "s3cret"},
		Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Monitoring: mon})
	for _, tc := range []struct {
		user, pass string
		code       int
		body       string
	}{
		{"", "", 401, ""},
		{"ops", "wrong", 401, ""},
		{"ops", "s3cret", 200, "asynqmon /monitoring/queues"},
	} {
		r := httptest.NewRequest("GET", "/monitoring/queues", nil)
		if tc.user != "" {
			r.SetBasicAuth(tc.user, tc.pass)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.code || rec.Body.String() != tc.body {
			t.Errorf("%s/%s: got %d %q", tc.user, tc.pass, rec.Code, rec.Body)
		}
	}
	// Off when no user is configured.
	off := New(Config{MaxBodyBytes: 1 << 10}, Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Monitoring: mon})
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/monitoring/queues", nil)
	r.SetBasicAuth("ops", "s3cret")
	off.ServeHTTP(rec, r)
	if rec.Code != 404 {
		t.Errorf("monitoring without a user: %d", rec.Code)
	}
}

// A handler that panics with http.ErrAbortHandler after writing part of a
// response gets its connection cut, so the client cannot take the part for
// the whole.
func TestAbortCutsTheConnection(t *testing.T) {
	t.Parallel()
	r := newServer(Config{MaxBodyBytes: 1 << 10}, Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).router()
	r.GET("/half", func(c *gin.Context) {
		c.Writer.WriteString(`{"status":"success","message":{"contacts":[`)
		c.Writer.Flush()
		panic(http.ErrAbortHandler)
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/half")
	if err != nil {
		return // cut before the headers: also not a whole response
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("the truncated response read as complete")
	}
}

// Past its share of the import slots, an upload answers 429: MaxImports
// at once per process, half of them per account.
func TestImportSlots(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	s := newServer(Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 1 << 20, MaxImports: 2},
		Deps{DB: d, Geo: testdb.Geo(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h := s.router()
	type acct struct {
		id, typ int64
		keys    mail.Keys
	}
	newAcct := func() acct {
		id, keys, err := d.CreateAccount(context.Background(), "slots")
		if err != nil {
			t.Fatal(err)
		}
		a := acct{id: id, keys: keys}
		if err := d.Pool.QueryRow(context.Background(), "INSERT INTO contact_types (user_id, name) VALUES ($1, 'x') RETURNING id", id).Scan(&a.typ); err != nil {
			t.Fatal(err)
		}
		return a
	}
	upload := func(a acct) *httptest.ResponseRecorder {
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		w.WriteField("contact_type_id", fmt.Sprint(a.typ))
		fw, _ := w.CreateFormFile("file", "c.csv")
		io.WriteString(fw, "email\na@example.com\n")
		w.Close()
		r := httptest.NewRequest("POST", "/api/contacts/upload-csv", &body)
		r.Header.Set("Content-Type", w.FormDataContentType())
		r.Header.Set("PublicKey", a.keys.Public)
		r.Header.Set("SecretKey", a.keys.Secret)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	busy := `{"status":"failed","errors":"Too Many Requests."}`
	one, two, three := newAcct(), newAcct(), newAcct()

	ctx := context.Background()
	running, err := s.importer.Start(ctx, one.id) // an import of account one running
	if err != nil {
		t.Fatal(err)
	}
	if rec := upload(one); rec.Code != 429 || rec.Body.String() != busy {
		t.Fatalf("account at its share: %d %s", rec.Code, rec.Body)
	}
	if rec := upload(two); rec.Code != 200 {
		t.Fatalf("another account: %d %s", rec.Code, rec.Body)
	}
	runningTwo, err := s.importer.Start(ctx, two.id) // the process is full
	if err != nil {
		t.Fatal(err)
	}
	if rec := upload(three); rec.Code != 429 || rec.Body.String() != busy {
		t.Fatalf("process full: %d %s", rec.Code, rec.Body)
	}
	running.Close(ctx)
	runningTwo.Close(ctx)
	if rec := upload(one); rec.Code != 200 {
		t.Fatalf("free again: %d %s", rec.Code, rec.Body)
	}
	if n := s.importer.Running(); n != 0 {
		t.Fatalf("%d import slots kept", n)
	}
}

// The upload's read deadline ends with the body: an import whose merge
// waits longer than the idle limit (here for a writer's lock) still
// finishes. Over a real connection, as deadlines need one.
func TestImportOutlastsUploadIdle(t *testing.T) {
	t.Parallel()
	d := testdb.New(t)
	h := newServer(Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 1 << 20, MaxImports: 2, UploadIdle: 100 * time.Millisecond},
		Deps{DB: d, Geo: testdb.Geo(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).router()
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx := context.Background()
	id, keys, err := d.CreateAccount(ctx, "idle")
	if err != nil {
		t.Fatal(err)
	}
	var typ int64
	if err := d.Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'x') RETURNING id", id).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	// A writer holds the type, so the merge waits.
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM contact_types WHERE id = $1 FOR SHARE", typ); err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	w.WriteField("contact_type_id", fmt.Sprint(typ))
	fw, _ := w.CreateFormFile("file", "c.csv")
	io.WriteString(fw, "email\na@example.com\n")
	w.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/api/contacts/upload-csv", &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("PublicKey", keys.Public)
	req.Header.Set("SecretKey", keys.Secret)
	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{code: resp.StatusCode, body: string(b)}
	}()
	// Let the idle limit pass several times over while the merge waits:
	// the deadline is a timer in net/http, there is no event to wait on.
	time.Sleep(400 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.code != 200 || r.body != `{"status":"success","message":"Imported Successfully"}` {
		t.Fatalf("got %d %q %v", r.code, r.body, r.err)
	}
}
