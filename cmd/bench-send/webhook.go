package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// hookReceiver is -webhook's endpoint: an HTTP server on loopback in this
// process that checks each POST's signature and counts its events by kind.
// It does not decode the JSON (a scan counts the "event" members): a
// customer's receiver runs on its own machines, and here it shares the
// benchmark's two cores; the tests (jobs/webhook_test.go) decode every
// event.
type hookReceiver struct {
	srv    *http.Server
	url    string
	secret atomic.Pointer[string]

	mu     sync.Mutex
	posts  int
	bad    int
	events map[string]int
	last   time.Time // the last POST accepted
	max    int       // the most events one POST carried
}

func startHookReceiver() (*hookReceiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &hookReceiver{url: "http://" + l.Addr().String() + "/hook", events: map[string]int{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(l)
	return r, nil
}

func (r *hookReceiver) Close() { r.srv.Close() }

// eventKey opens each event's kind in a POST's body.
var eventKey = []byte(`,"event":"`)

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	secret := r.secret.Load()
	if err != nil || secret == nil || !mail.VerifyWebhookSignature(*secret, req.Header.Get("X-Mailroom-Signature"), body, time.Now(), 5*time.Minute) {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	counts := map[string]int{}
	n := 0
	for rest := body; ; {
		i := bytes.Index(rest, eventKey)
		if i < 0 {
			break
		}
		rest = rest[i+len(eventKey):]
		kind, _, _ := bytes.Cut(rest, []byte{'"'})
		counts[string(kind)]++
		n++
	}
	r.mu.Lock()
	r.posts++
	r.last = time.Now()
	r.max = max(r.max, n)
	for k, c := range counts {
		r.events[k] += c
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// subscribe saves the account's webhook for every event, to r.
func (r *hookReceiver) subscribe(c *client) error {
	b, err := c.Call("POST", "/webhooks/save", url.Values{"url": {r.url}})
	if err != nil {
		return err
	}
	var m struct {
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Secret == "" {
		return fmt.Errorf("webhook save answered %s", b)
	}
	r.secret.Store(&m.Secret)
	return nil
}

// wait waits until n delivered events came (or timeout) and reports them.
func (r *hookReceiver) wait(n int64, done time.Time, timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		got := int64(r.events["delivered"])
		r.mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	lag := r.last.Sub(done)
	return fmt.Sprintf("%d POSTs (at most %d events each), events %v, %d bad signatures; the last POST %v after the send completed",
		r.posts, r.max, r.events, r.bad, lag.Round(time.Millisecond))
}
