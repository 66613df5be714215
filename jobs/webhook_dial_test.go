package jobs

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// The webhook client's dialer refuses a loopback receiver however its
// URL spells the host (the dialled address is the resolved one), judged
// by the function the save check uses; WEBHOOK_ALLOW_PRIVATE reaches it.
func TestWebhookDialerRefusesPrivate(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	guarded := webhookClient(5*time.Second, false)
	for _, host := range []string{"127.0.0.1", "[::ffff:127.0.0.1]", "localhost", "127。0。0。1", "①②⑦.0.0.1"} {
		if !mail.PrivateHost(strings.Trim(host, "[]")) {
			t.Errorf("the save check takes %s", host)
		}
		resp, err := guarded.Get("http://" + host + ":" + port + "/")
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, errPrivateTarget) {
			t.Errorf("%s: %v, want the private-target refusal", host, err)
		}
	}
	resp, err := webhookClient(5*time.Second, true).Get("http://127.0.0.1:" + port + "/")
	if err != nil {
		t.Fatalf("WEBHOOK_ALLOW_PRIVATE: %v", err)
	}
	resp.Body.Close()
}
