package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/apiclient"
)

// stack is the api and worker processes -start runs, and the account it
// made in them.
type stack struct {
	procs          []*exec.Cmd
	public, secret string
}

// startStack makes o.db afresh, flushes o.redis, migrates, starts bin/api
// on -url's address and one bin/worker (logs and CPU profiles in
// var/load/), and creates an account.
func startStack(ctx context.Context, o options) (*stack, error) {
	u, err := url.Parse(o.base)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("-url %q: %v", o.base, err)
	}
	dir := filepath.Join("var", "load")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := dropDatabase(ctx, o.db); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, "redis-cli", "-u", o.redis, "FLUSHDB").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("flushing %s: %v %s", o.redis, err, out)
	}
	dsn := "postgres://postgres@127.0.0.1:5432/" + o.db + "?sslmode=disable"
	if o.dsnParams != "" {
		dsn += "&" + o.dsnParams
	}
	env := append(os.Environ(), "DATABASE_URL="+dsn,
		"REDIS_URL="+o.redis, "HTTP_ADDR="+u.Host, "PUBLIC_URL="+o.base, "WORKER_METRICS_ADDR=127.0.0.1:0",
		"OUTBOX_DIR="+filepath.Join(dir, "outbox"))
	api, worker := filepath.Join(o.bin, "api"), filepath.Join(o.bin, "worker")
	if out, err := command(ctx, env, api, "migrate").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("migrate: %v\n%s", err, out)
	}
	s := &stack{}
	for _, name := range []string{api, worker} {
		penv := append(env[:len(env):len(env)], "CPU_PROFILE="+filepath.Join(dir, filepath.Base(name)+".cpu"))
		p, err := start(penv, filepath.Join(dir, filepath.Base(name)+".log"), name)
		if err != nil {
			s.stop()
			return nil, err
		}
		s.procs = append(s.procs, p)
	}
	if err := apiclient.WaitHTTP(o.base + "/healthz"); err != nil {
		s.stop()
		return nil, err
	}
	out, err := command(ctx, env, api, "accounts", "create", "--name", "load").Output()
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("accounts create: %w", err)
	}
	var keys struct {
		Public string `json:"public_key"`
		Secret string `json:"secret_key"`
	}
	if err := json.Unmarshal(out, &keys); err != nil {
		s.stop()
		return nil, err
	}
	s.public, s.secret = keys.Public, keys.Secret
	return s, nil
}

// stop ends the processes with SIGTERM, the api first, and waits for them.
func (s *stack) stop() {
	for _, p := range s.procs {
		p.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			p.Process.Kill()
			<-done
		}
	}
}

func command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	return cmd
}

func start(env []string, logPath, name string) (*exec.Cmd, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cmd, nil
}

// dropDatabase removes the database of an earlier run.
func dropDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}
