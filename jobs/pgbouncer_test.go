package jobs_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// A whole single send with the engine's database handle behind a real
// PgBouncer in transaction pooling mode (docs/deploy.md): with
// default_query_exec_mode=cache_describe in DATABASE_URL no statement depends on a
// server session, and every mail goes once.
func TestSendThroughPgBouncer(t *testing.T) {
	// Not parallel: see TestSingleSendEndToEnd.
	bin, err := osexec.LookPath("pgbouncer")
	if err != nil {
		t.Skip("pgbouncer is not installed (.ci/run installs Debian's)")
	}
	ctx := context.Background()
	d := testdb.New(t)
	dsn, err := url.Parse(testdb.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	// pgbouncer runs as nobody when started by root: its files must be
	// readable by it (t.TempDir's parent is not).
	dir, err := os.MkdirTemp("", "pgbouncer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := fmt.Sprintf(`[databases]
* = host=127.0.0.1 port=5432
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %[2]s/users.txt
pool_mode = transaction
max_client_conn = 200
default_pool_size = 2
ignore_startup_parameters = extra_float_digits
`, port, dir)
	for name, body := range map[string]string{"pgbouncer.ini": conf, "users.txt": `"postgres" ""` + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 {
		args = append([]string{"-u", "nobody"}, args...)
	}
	cmd := osexec.Command(bin, args...)
	var log syncBuffer
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	q := dsn.Query()
	q.Set("default_query_exec_mode", "cache_describe")
	q.Set("pool_max_conns", "8")
	dsn.Host, dsn.RawQuery = fmt.Sprintf("127.0.0.1:%d", port), q.Encode()
	var pooled *postgres.DB
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if pooled, err = postgres.Open(ctx, dsn.String(), slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("no connection through pgbouncer: %v\n%s", err, log.String())
		}
	}
	defer pooled.Close()
	var mode string
	if err := pooled.Pool.QueryRow(ctx, "SHOW pool_mode").Scan(&mode); err == nil {
		t.Logf("pool_mode %s", mode) // answered by the server, not the bouncer: informative only
	}

	f := newSendFixture(t, d, `<p>Hi ((first_name))</p>`)
	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, queue, _ := engine(t, pooled, pool, jobs.Engine{BatchSize: 2, Window: 2, StallAfter: time.Second})
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
	queue.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
	queue.drain(t, mux)
	got := sendCounters(t, d, f.send)
	if want := (counters{Status: 3, Triggered: 5, Delivered: 5, SentAt: true}); got != want || s.Count() != 5 {
		t.Fatalf("through pgbouncer: %+v and %d mails received, want %+v and 5", got, s.Count(), want)
	}

	// Eight client connections over two server connections at once: a
	// statement prepared on one server connection is not on the other, so
	// only a mode that prepares nothing by name holds (the default
	// cache_statement fails here: "prepared statement … does not exist").
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, err := pooled.Authenticate(ctx, "pk_nobody", "sk_nobody"); mail.ErrorCode(err) != mail.EUNAUTHORIZED {
					errs <- err
					return
				}
				if _, err := pooled.Accounts(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a query through pgbouncer: %v", err)
	}
}

// syncBuffer collects a child's output for a failure message.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}
