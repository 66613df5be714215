package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/metrics/metricstest"
	"github.com/mailroom/mailroom/internal/testdb"
)

func envWith(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestAccountsCreate(t *testing.T) {
	t.Parallel()
	env := envWith(map[string]string{"DATABASE_URL": testdb.DSN(t)})
	var out bytes.Buffer
	if err := run(context.Background(), []string{"accounts", "create", "--name", "Acme"}, env, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	if !regexp.MustCompile(`^\{"user_id":\d+,"public_key":"pk_[A-Za-z0-9_-]{43}","secret_key":"sk_[A-Za-z0-9_-]{43}"\}\n$`).MatchString(line) {
		t.Fatalf("output %q", line)
	}
	var keys struct {
		UserID int64  `json:"user_id"`
		Public string `json:"public_key"`
		Secret string `json:"secret_key"`
	}
	json.Unmarshal([]byte(line), &keys)
	var name string
	var hash []byte
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT name, secret_hash FROM accounts WHERE id = $1 AND public_key = $2",
		keys.UserID, keys.Public).Scan(&name, &hash); err != nil {
		t.Fatal(err)
	}
	if name != "Acme" || !bytes.Equal(hash, mail.SecretHash(keys.Secret)) || bytes.Contains(hash, []byte(keys.Secret)) {
		t.Fatalf("stored %q %x", name, hash)
	}
	acct, err := testdb.New(t).Authenticate(context.Background(), keys.Public, keys.Secret)
	if err != nil || acct.ID != keys.UserID {
		t.Fatalf("the printed keys do not authenticate: %v", err)
	}
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	dsn := testdb.DSN(t)
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"accounts", "create"}, map[string]string{"DATABASE_URL": dsn}, "accounts create: --name is required"},
		{[]string{"health"}, map[string]string{"DATABASE_URL": dsn, "HTTP_ADDR": "127.0.0.1:1"}, "connection refused"},
		{[]string{"accounts", "frob"}, map[string]string{"DATABASE_URL": dsn}, "usage: accounts create --name NAME [--owner-email EMAIL [--password-stdin]] | list"},
		{[]string{"accounts"}, map[string]string{"DATABASE_URL": dsn}, "usage: accounts create"},
		{[]string{"accounts", "rotate-keys"}, map[string]string{"DATABASE_URL": dsn}, "accounts rotate-keys: --user-id is required"},
		{[]string{"accounts", "disable", "--user-id", "x"}, map[string]string{"DATABASE_URL": dsn}, "accounts disable: invalid value"},
		{[]string{"accounts", "rotate-keys", "--user-id", "999999999"}, map[string]string{"DATABASE_URL": dsn}, "accounts rotate-keys: no account 999999999"},
		{[]string{"accounts", "enable", "--user-id", "999999999"}, map[string]string{"DATABASE_URL": dsn}, "accounts enable: no account 999999999"},
		{[]string{"accounts", "send-rate", "--user-id", "1"}, map[string]string{"DATABASE_URL": dsn}, "accounts send-rate: --per-second is required"},
		{[]string{"frobnicate"}, map[string]string{"DATABASE_URL": dsn}, `unknown command "frobnicate"`},
		{[]string{"migrate"}, map[string]string{"DATABASE_URL": "mysql://x/y"}, "DATABASE_URL:"},
		{[]string{"migrate"}, map[string]string{"DATABASE_URL": dsn, "HTTP_ADDR": "nope"}, "HTTP_ADDR:"},
	} {
		err := run(context.Background(), tc.args, envWith(tc.env), nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
	// migrate on a migrated database is a no-op that succeeds.
	if err := run(context.Background(), []string{"migrate"}, envWith(map[string]string{"DATABASE_URL": dsn}), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// The server's timeouts hold against slow clients: a body that stops
// arriving is cut after HTTP_READ_TIMEOUT, every answer carries a request
// id, and the process keeps serving others.
func TestSlowClientCut(t *testing.T) {
	t.Parallel()
	dsn := testdb.DSN(t)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"accounts", "create", "--name", "Slow"}, envWith(map[string]string{"DATABASE_URL": dsn}), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var keys struct {
		Public string `json:"public_key"`
		Secret string `json:"secret_key"`
	}
	json.Unmarshal(out.Bytes(), &keys)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, envWith(map[string]string{"DATABASE_URL": dsn, "REDIS_URL": "redis://127.0.0.1:6379/13",
			"HTTP_ADDR": addr, "HTTP_READ_TIMEOUT": "1s", "LOG_LEVEL": "error", "MEDIA_DIR": t.TempDir()}), nil, io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	waitUp(t, addr, done)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /api/contacts-type/add HTTP/1.1\r\nHost: x\r\nPublicKey: %s\r\nSecretKey: %s\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nname=sl", keys.Public, keys.Secret)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, _ := io.ReadAll(conn) // until the server closes
	if took := time.Since(start); took < time.Second || took > 5*time.Second {
		t.Errorf("the stalled body was cut after %v, want about HTTP_READ_TIMEOUT (1 s)", took)
	}
	if bytes.Contains(answer, []byte("200 OK")) {
		t.Errorf("a cut body was taken: %q", answer)
	}
	var n int64
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT count(*) FROM contact_types WHERE name LIKE 'sl%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d contact types from the cut body (%v)", n, err)
	}
	// The container health check: `api health` against the running API.
	if err := run(context.Background(), []string{"health"}, envWith(map[string]string{"DATABASE_URL": dsn, "HTTP_ADDR": addr}), nil, io.Discard, io.Discard); err != nil {
		t.Errorf("api health: %v", err)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("after the slow client: %d, X-Request-Id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
	// GET /metrics on the same listener (API_METRICS is on by default)
	// counts what it answered.
	f := metricstest.Fetch(t, "http://"+addr+"/metrics")
	if n := f.Value("mailroom_http_requests_total", "route", "/healthz", "method", "GET", "status", "200"); n < 2 {
		t.Errorf("/metrics counts %v answers of GET /healthz, want at least 2", n)
	}
}

// accounts list shows every account and never a secret; rotate-keys
// prints new keys and the old ones are refused at once; disable refuses
// the account's keys until enable; nothing of a key reaches the log.
func TestAccountsLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := envWith(map[string]string{"DATABASE_URL": testdb.DSN(t)})
	var logs bytes.Buffer
	cli := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, append([]string{"accounts"}, args...), env, nil, &out, &logs); err != nil {
			t.Fatalf("accounts %v: %v", args, err)
		}
		return out.String()
	}
	type keys struct {
		UserID int64  `json:"user_id"`
		Public string `json:"public_key"`
		Secret string `json:"secret_key"`
	}
	var first keys
	json.Unmarshal([]byte(cli("create", "--name", "Lifecycle")), &first)
	d := testdb.New(t)
	auth := func(k keys) string {
		t.Helper()
		a, err := d.Authenticate(ctx, k.Public, k.Secret)
		if e := (*mail.Error)(nil); errors.As(err, &e) {
			return e.Message
		}
		if err != nil {
			t.Fatal(err)
		}
		if a.ID != k.UserID {
			t.Fatalf("authenticated as %d, want %d", a.ID, k.UserID)
		}
		return "ok"
	}
	if got := auth(first); got != "ok" {
		t.Fatalf("new keys: %s", got)
	}
	list := cli("list")
	if !strings.Contains(list, fmt.Sprintf(`{"user_id":%d,"name":"Lifecycle","public_key":%q,"disabled_at":null,"created_at":"`, first.UserID, first.Public)) ||
		strings.Contains(list, first.Secret) || strings.Contains(list, "secret") {
		t.Fatalf("list:\n%s", list)
	}
	var second keys
	json.Unmarshal([]byte(cli("rotate-keys", "--user-id", fmt.Sprint(first.UserID))), &second)
	if second.UserID != first.UserID || second.Public == first.Public || second.Secret == first.Secret {
		t.Fatalf("rotated %+v from %+v", second, first)
	}
	if got := auth(first); got != "The public key or secret key is invalid." {
		t.Errorf("old keys after the rotation: %s", got)
	}
	if got := auth(second); got != "ok" {
		t.Errorf("new keys: %s", got)
	}
	if out := cli("disable", "--user-id", fmt.Sprint(first.UserID)); out != fmt.Sprintf(`{"user_id":%d,"disabled":true}`+"\n", first.UserID) {
		t.Errorf("disable printed %q", out)
	}
	if got := auth(second); got != "The account is disabled." {
		t.Errorf("a disabled account's keys: %s", got)
	}
	if !strings.Contains(cli("list"), fmt.Sprintf(`"user_id":%d,"name":"Lifecycle","public_key":%q,"disabled_at":"`, first.UserID, second.Public)) {
		t.Error("list does not show the account disabled")
	}
	cli("enable", "--user-id", fmt.Sprint(first.UserID))
	if out := cli("send-rate", "--user-id", fmt.Sprint(first.UserID), "--per-second", "250"); out != fmt.Sprintf(`{"user_id":%d,"send_rate":250}`+"\n", first.UserID) {
		t.Errorf("send-rate printed %q", out)
	}
	var rate *int
	if err := d.Pool.QueryRow(ctx, "SELECT send_rate FROM accounts WHERE id = $1", first.UserID).Scan(&rate); err != nil || rate == nil || *rate != 250 {
		t.Errorf("send_rate stored %v (%v), want 250", rate, err)
	}
	cli("send-rate", "--user-id", fmt.Sprint(first.UserID), "--per-second", "0")
	if err := d.Pool.QueryRow(ctx, "SELECT send_rate FROM accounts WHERE id = $1", first.UserID).Scan(&rate); err != nil || rate != nil {
		t.Errorf("send_rate after 0: %v (%v), want none", rate, err)
	}
	if got := auth(second); got != "ok" {
		t.Errorf("enabled again: %s", got)
	}
	for _, k := range []keys{first, second} {
		if strings.Contains(logs.String(), k.Secret) || strings.Contains(logs.String(), k.Public) {
			t.Errorf("a key in the log:\n%s", logs.String())
		}
	}
}

// Opens and clicks still waiting in the recorder when the API is stopped
// are written before run returns.
func TestShutdownWritesClicks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.DSN(t)
	d := testdb.New(t)
	user, _, err := d.CreateAccount(ctx, "clicks")
	if err != nil {
		t.Fatal(err)
	}
	// A send in a partition of its own, one delivered mail, one link.
	send := 990_000 + user%10_000
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS deliveries_p99 PARTITION OF deliveries FOR VALUES FROM (990000) TO (1000000)`,
		`INSERT INTO single_sends (id, user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader,
			status, unique_open_token) OVERRIDING SYSTEM VALUE
			VALUES ($2, $1, gen_random_uuid(), 1, 1, 1, 'c', 's', 'p', 3, '{"contacts_1": "LT"}')`,
		`INSERT INTO deliveries (send_id, user_id, email, list_key, status) VALUES ($2, $1, 'a@b.example', 'contacts_1', 2)`,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, user, send)
		}
		if _, err := d.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	var id int64
	if err := d.Pool.QueryRow(ctx, "SELECT id FROM deliveries WHERE send_id = $1", send).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := d.NumberLinks(ctx, send, []string{"https://shop.example/a"}); err != nil {
		t.Fatal(err)
	}
	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}
	signer := mail.NewTokenSigner(key)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, nil, envWith(map[string]string{"DATABASE_URL": dsn, "REDIS_URL": "redis://127.0.0.1:6379/13",
			"HTTP_ADDR": addr, "LOG_LEVEL": "error", "MEDIA_DIR": t.TempDir()}), nil, io.Discard, io.Discard)
	}()
	waitUp(t, addr, done)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{mail.ClickPath + string(signer.ClickKey(send).Seal(nil, id, 0)), mail.OpenPath + "LT/" + string(signer.SealOpen(nil, send, id))} {
		resp, err := noFollow.Get("http://" + addr + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 302 && resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	var clicks, opens int64
	if err := d.Pool.QueryRow(ctx, `SELECT (SELECT COALESCE(sum(clicks), 0) FROM delivery_clicks WHERE send_id = $1), opens FROM deliveries WHERE id = $2`,
		send, id).Scan(&clicks, &opens); err != nil {
		t.Fatal(err)
	}
	if clicks != 1 || opens != 1 {
		t.Fatalf("after the shutdown: %d clicks, %d opens written; want 1 and 1", clicks, opens)
	}
}

// accounts create --owner-email prints a one-time sign-in link for the
// owner (a token whose hash alone is stored), or with --password-stdin
// sets the password read from standard input; both are in the audit trail.
func TestAccountsCreateWithOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := envWith(map[string]string{"DATABASE_URL": testdb.DSN(t), "PUBLIC_URL": "https://mail.example.test"})
	d := testdb.New(t)
	var out bytes.Buffer
	if err := run(ctx, []string{"accounts", "create", "--name", "Owned", "--owner-email", "Boss@Owned.example"}, env, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var res struct {
		UserID     int64  `json:"user_id"`
		OwnerEmail string `json:"owner_email"`
		SignInURL  string `json:"sign_in_url"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^https://mail\.example\.test/invite/([A-Za-z0-9_-]{43})$`).FindStringSubmatch(res.SignInURL)
	if m == nil || res.OwnerEmail != "Boss@Owned.example" {
		t.Fatalf("output %s", out.String())
	}
	l, err := d.PeekLink(ctx, m[1], mail.TokenSignIn)
	if err != nil || l.Email != "Boss@Owned.example" || l.AccountID != res.UserID {
		t.Fatalf("the printed link: %+v %v", l, err)
	}
	var stored int
	if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM console_tokens WHERE token_hash = $1 AND purpose = 'signin'", mail.HashToken(m[1])).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("tokens stored by hash: %d %v", stored, err)
	}

	out.Reset()
	err = run(ctx, []string{"accounts", "create", "--name", "Typed", "--owner-email", "typed@owned.example", "--password-stdin"}, env,
		strings.NewReader("a password from stdin\n"), &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.ConsoleCredentials(ctx, "typed@owned.example")
	if err != nil || c.PasswordHash == "" || strings.Contains(c.PasswordHash, "stdin") {
		t.Fatalf("credentials %+v %v", c, err)
	}
	if !strings.Contains(out.String(), `"sign_in_url":"https://mail.example.test/signin"`) {
		t.Fatalf("output %s", out.String())
	}
	ev, err := d.AuditEvents(ctx, c.AccountID, 0, 5)
	if err != nil || len(ev) != 1 || ev[0].Actor != "command line" || ev[0].Action != "added the owner" || ev[0].Target != "typed@owned.example" {
		t.Fatalf("audit %+v %v", ev, err)
	}

	for _, tc := range []struct {
		args  []string
		stdin string
		err   string
	}{
		{[]string{"--name", "X", "--owner-email", "not an address"}, "", "--owner-email is not a valid email address"},
		{[]string{"--name", "X", "--password-stdin"}, "", "--password-stdin needs --owner-email"},
		{[]string{"--name", "X", "--owner-email", "short@owned.example", "--password-stdin"}, "short\n", "The password must be at least 10 characters."},
		{[]string{"--name", "X", "--owner-email", "BOSS@owned.example"}, "", "The email has already been taken."},
	} {
		err := run(ctx, append([]string{"accounts", "create"}, tc.args...), env, strings.NewReader(tc.stdin), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Fatalf("%v: err %v, want %q", tc.args, err, tc.err)
		}
	}
}

// waitUp waits for the API started at addr to answer /healthz, or fails
// the test when it stopped (done) or did not answer within a minute: under
// the race detector, beside the other packages' tests, a start has taken
// more than 10 s.
func waitUp(t *testing.T, addr string, done chan error) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("the API stopped before it answered: %v", err)
		default:
		}
		if time.Since(start) > time.Minute {
			t.Fatal("the API did not come up")
		}
	}
}
