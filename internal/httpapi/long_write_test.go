package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/testdb"
)

// A segment save that outlasts the server's write timeout still gets its
// answer: its rebuild waits here for a contact writer that holds the
// type (as an import does for its whole merge) for 2.5 s, against a write
// timeout of 1 s. Through a real server, since recorders have no write
// deadline.
func TestSegmentSaveOutlastsTheWriteTimeout(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	ctx := context.Background()
	var typ int64
	if err := testdb.New(t).Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, 'T') RETURNING id", acct.id).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(a.h)
	srv.Config.WriteTimeout = time.Second
	srv.Start()
	defer srv.Close()

	// The writer: the type's writer lock held shared, as every contact
	// write and an import's merge hold it.
	tx, err := testdb.New(t).Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock_shared(1954115685, ($1 % 2147483647)::int)", typ); err != nil {
		tx.Rollback(ctx)
		t.Fatal(err)
	}
	released := make(chan struct{})
	time.AfterFunc(2500*time.Millisecond, func() { tx.Rollback(ctx); close(released) })
	defer func() { <-released }()

	form := url.Values{"contact_type_id": {fmt.Sprint(typ)}, "segment_name": {"s"},
		"select_field[]": {"2"}, "select_operator[]": {"starts with"}, "value[]": {"a"}}
	r, _ := http.NewRequest("POST", srv.URL+"/api/segment/save", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("PublicKey", acct.public)
	r.Header.Set("SecretKey", acct.secret)
	start := time.Now()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != 200 || string(body) != `{"status":"success","message":"Saved Successfully"}` || took < 2*time.Second {
		t.Fatalf("after %v: %d %s", took.Round(time.Millisecond), resp.StatusCode, body)
	}
}
