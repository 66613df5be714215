// Package health is the container health check of both processes: their
// images have no shell or curl, so `api health` and `worker health` ask
// their own listener with this.
package health

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Probe asks GET /healthz of the listener at addr (host:port as
// configured; asked on 127.0.0.1) and answers nil for a 200 within 3 s.
func Probe(ctx context.Context, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort("127.0.0.1", port)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s", resp.Status)
	}
	return nil
}
