package metrics_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/mailroom/mailroom/internal/metrics"
)

// A port another process holds moves the listener on to the next
// address; a taken port alone, or a bad address, fails the start.
func TestListenFirst(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().String()
	h := metrics.Handler(metrics.NewRegistry(), nil, "", "")

	l, err := metrics.ListenFirst([]string{taken, "127.0.0.1:0"}, h)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Addr.String() == taken || l.Asked != "127.0.0.1:0" {
		t.Fatalf("listening on %s, asked for %s; %s was taken", l.Addr, l.Asked, taken)
	}
	res, err := http.Get("http://" + l.Addr.String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "ok" {
		t.Fatalf("healthz: %q", body)
	}

	if _, err := metrics.ListenFirst([]string{taken}, h); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("the taken port alone: %v", err)
	}
	if _, err := metrics.ListenFirst([]string{"127.0.0.1:99999", "127.0.0.1:0"}, h); err == nil || errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("a bad address: %v", err)
	}
	if _, err := metrics.ListenFirst(nil, h); err == nil {
		t.Fatal("no address: no error")
	}
}
