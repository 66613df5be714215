package redisconn_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/redisconn"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		want asynq.RedisConnOpt
		err  string
	}{
		{"redis://127.0.0.1:6379/3", asynq.RedisClientOpt{Addr: "127.0.0.1:6379", DB: 3}, ""},
		{"redis://:pw@r:6379", asynq.RedisClientOpt{Addr: "r:6379", Password: "pw"}, ""},
		{"redis-sentinel://:pw@s1:26379,s2:26379/2?master=main&sentinel_password=sp",
			asynq.RedisFailoverClientOpt{MasterName: "main", SentinelAddrs: []string{"s1:26379", "s2:26379"}, Password: "pw", SentinelPassword: "sp", DB: 2}, ""},
		{"redis-cluster://:pw@c1:7000,c2:7001", asynq.RedisClusterClientOpt{Addrs: []string{"c1:7000", "c2:7001"}, Password: "pw"}, ""},
		{"redis-sentinel://s1:26379", nil, "?master=NAME is required"},
		{"redis-cluster://c1:7000/1", nil, "only database 0"},
		{"redis://a:1,b:2", nil, "one host:port"},
		{"redis://r:6379/x", nil, "database number"},
		{"redis://r", nil, "not host:port"},
		{"http://r:1", nil, `scheme "http"`},
		{"redis:///0", nil, "no host"},
	} {
		got, err := redisconn.Parse(tc.url)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.url, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got.Opt, tc.want) {
			t.Errorf("%s: %#v %v, want %#v", tc.url, got.Opt, err, tc.want)
		}
	}
}

// freePort is a TCP port nothing listens on (below 55,000: a cluster node
// also takes port+10000).
func freePort(t *testing.T) int {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p < 55000 {
			return p
		}
	}
}

// redisServer starts redis-server with args in dir until the test ends.
func redisServer(t *testing.T, dir string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// roundTrip enqueues a task through conn and waits for an asynq server on
// the same connection to run it.
func roundTrip(t *testing.T, conn redisconn.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb := conn.Client()
	defer rdb.Close()
	for rdb.Ping(ctx).Err() != nil {
		if ctx.Err() != nil {
			t.Fatal("no PING answer through", conn.Opt)
		}
		time.Sleep(100 * time.Millisecond)
	}
	queue := fmt.Sprintf("redisconn-%d", time.Now().UnixNano())
	ran := make(chan string, 1)
	srv := asynq.NewServer(conn.Opt, asynq.Config{Concurrency: 1, Queues: map[string]int{queue: 1},
		TaskCheckInterval: 50 * time.Millisecond, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("ping", func(_ context.Context, task *asynq.Task) error {
		ran <- string(task.Payload())
		return nil
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	client := asynq.NewClient(conn.Opt)
	defer client.Close()
	if _, err := client.EnqueueContext(ctx, asynq.NewTask("ping", []byte("pong")), asynq.Queue(queue)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ran:
		if got != "pong" {
			t.Fatalf("ran with %q", got)
		}
	case <-ctx.Done():
		t.Fatal("the task did not run")
	}
}

// A Sentinel URL finds the master through a real sentinel (watching the
// local Redis) and carries tasks.
func TestSentinel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	conf := fmt.Sprintf("port %d\nsentinel monitor mailroomtest 127.0.0.1 6379 1\n", port)
	if err := os.WriteFile(filepath.Join(dir, "sentinel.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	redisServer(t, dir, filepath.Join(dir, "sentinel.conf"), "--sentinel")
	conn, err := redisconn.Parse(fmt.Sprintf("redis-sentinel://127.0.0.1:%d/10?master=mailroomtest", port))
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, conn)
}

// A Cluster URL naming one node of a real three-node cluster carries tasks.
func TestCluster(t *testing.T) {
	t.Parallel()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed")
	}
	var nodes []string
	for i := range 3 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		os.MkdirAll(dir, 0o700)
		port := freePort(t)
		redisServer(t, dir, "--port", fmt.Sprint(port), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--save", "", "--appendonly", "no", "--bind", "127.0.0.1")
		nodes = append(nodes, fmt.Sprintf("127.0.0.1:%d", port))
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range nodes {
		for exec.Command(cli, "-u", "redis://"+n, "PING").Run() != nil {
			if time.Now().After(deadline) {
				t.Fatal("a cluster node did not start")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if out, err := exec.Command(cli, append(append([]string{"--cluster", "create"}, nodes...), "--cluster-yes")...).CombinedOutput(); err != nil {
		t.Fatalf("cluster create: %v\n%s", err, out)
	}
	for {
		out, _ := exec.Command(cli, "-u", "redis://"+nodes[0], "CLUSTER", "INFO").Output()
		if strings.Contains(string(out), "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster is not ok:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	conn, err := redisconn.Parse("redis-cluster://" + nodes[1])
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, conn)

	// The recipient domains' limits: a range's call touches the keys of
	// several domain groups at once, which the worker's prefix keeps on
	// one node (one hash tag; CROSSSLOT otherwise).
	ctx := context.Background()
	rdb := conn.Client()
	defer rdb.Close()
	limits, err := ratelimit.ParseDomainLimits("defaults=off;a.example=rate:10,conc:2;b.example=hold")
	if err != nil {
		t.Fatal(err)
	}
	d := ratelimit.NewDomains(rdb, "mailroom:{domains}:", limits)
	g, err := d.Take(ctx, "r1", time.Minute, []ratelimit.Ask{{Group: 0, Mails: 5, InFlight: 4}, {Group: 1, Mails: 3}})
	if err != nil || g[0].Mails != 5 || g[0].InFlight != 2 || g[1].Mails != 3 {
		t.Fatalf("domain limits through the cluster: %+v %v", g, err)
	}
	if h, err := d.Hold(ctx, 1); err != nil || h != 30*time.Second {
		t.Fatalf("hold through the cluster: %v %v", h, err)
	}
	if err := d.Renew(ctx, "r1", time.Minute, []int{0}); err != nil {
		t.Fatal(err)
	}
	if err := d.Release(ctx, "r1", []int{0}, []int{1}); err != nil {
		t.Fatal(err)
	}
}
