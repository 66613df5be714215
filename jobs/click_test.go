package jobs_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/activity"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

var clickRE = regexp.MustCompile(`https://m\.example\.test(/t/c/[A-Za-z0-9_-]+)`)

// sendOut dispatches the fixture's send through the engine into a real
// SMTP server and answers the mails by lower-cased address.
func sendOut(t *testing.T, d *postgres.DB, f sendFixture, tracking bool) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		if strings.HasPrefix(rcpt, "gone@") || strings.HasPrefix(rcpt, "later@") {
			return smtptest.Permanent("no such user")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 2, Window: 2, StallAfter: time.Second}, func(deps *jobs.Deps) {
		deps.ClickTracking = tracking
	})
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send), time.Now()))
	q.drain(t, mux)
	if c := sendCounters(t, d, f.send); c.Status != 3 || c.Delivered != 3 {
		t.Fatalf("send %+v, want completed with 3 delivered", c)
	}
	mails := map[string][]byte{}
	for _, m := range s.Messages() {
		mails[strings.ToLower(m.To[0])] = m.Data
	}
	return mails
}

// Click tracking end to end: a send whose HTML has several links (one
// twice), a mailto, an anchor, the preferences placeholder and a link to
// mailroom's own page goes out through the engine to a real SMTP server;
// in the mails each http(s) link is a signed /t/c/ link, in the HTML and
// the text part, and the others are as written. Followed by a real HTTP
// client through the real router, each redirects to its address;
// changed, cut and crossed tokens are the 404 page with no Location.
// Once the recorder has written them, the send's statistics count the
// clicks (total, unique per recipient, by link) and the opens.
func TestClickTrackingEndToEnd(t *testing.T) {
	// Not parallel: TestSingleSendEndToEnd's sweeper works on every send.
	ctx := context.Background()
	d := testdb.New(t)
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "shop ", r.URL.RequestURI())
	}))
	defer shop.Close()
	a, b := shop.URL+"/a?x=1&y=2", shop.URL+"/b"
	html := `<html><body><p>Hi ((first_name))</p>
<a href="` + shop.URL + `/a?x=1&amp;y=2">Shop A</a>
<A HREF='` + b + `'>` + b + `</A>
<a href="` + a + `">A again</a>
<a href="mailto:help@acme.example">Mail us</a> <a href="#top">Top</a>
<a href="((unsubscribe_preferences))">Preferences</a>
<a href="https://m.example.test/unsubscribe/abc">Our page</a>
</body></html>`
	f := newSendFixture(t, d, html)
	mails := sendOut(t, d, f, true)

	var table []string
	if err := d.Pool.QueryRow(ctx, "SELECT array_agg(url ORDER BY idx) FROM send_links WHERE send_id = $1", f.send).Scan(&table); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(table, []string{a, b}) {
		t.Fatalf("link table %q, want %q", table, []string{a, b})
	}

	// The mails: tracked links in place of the shop's, the rest as written.
	links := map[string][]string{} // address -> its three tracked paths (a, b, a)
	for addr, data := range mails {
		h, _ := htmlOf(t, data)
		text, _ := partOf(t, data, "text/plain")
		if strings.Contains(h, `href="`+shop.URL) || strings.Contains(h, `HREF='`+shop.URL) || strings.Contains(text, shop.URL+"/a") {
			t.Fatalf("%s: an untracked shop link\n%s\n%s", addr, h, text)
		}
		for _, want := range []string{`>` + b + `</A>`, `<a href="mailto:help@acme.example">`, `<a href="#top">`,
			`<a href="https://m.example.test/unsubscribe/abc">Our page</a>`, `<img src="https://m.example.test/o/`} {
			if !strings.Contains(h, want) {
				t.Errorf("%s: html lacks %q:\n%s", addr, want, h)
			}
		}
		if !regexp.MustCompile(`<a href="https://m\.example\.test/unsubscribe/[A-Za-z0-9_-]+">Preferences</a>`).MatchString(h) {
			t.Errorf("%s: the preferences link:\n%s", addr, h)
		}
		var paths []string
		for _, m := range clickRE.FindAllStringSubmatch(h, -1) {
			paths = append(paths, m[1])
		}
		var shown []string
		for _, m := range clickRE.FindAllStringSubmatch(text, -1) {
			shown = append(shown, m[1])
		}
		if len(paths) != 3 || paths[0] != paths[2] || paths[0] == paths[1] || !slices.Equal(shown, paths) {
			t.Fatalf("%s: tracked links %q in the html, %q in the text:\n%s\n%s", addr, paths, shown, h, text)
		}
		if !strings.Contains(text, "Shop A (https://m.example.test"+paths[0]+")") || !strings.Contains(text, "Mail us (mailto:help@acme.example)") {
			t.Errorf("%s: text part\n%s", addr, text)
		}
		links[addr] = paths
	}
	if len(links) != 3 || links["ann@example.com"][0] == links["bob@example.com"][0] {
		t.Fatalf("tracked links by address %q", links)
	}

	// The real router and recorder, over HTTP.
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec := activity.New(d, log, activity.Options{Every: time.Hour})
	defer rec.Close(ctx)
	srv := httptest.NewServer(httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: d, Geo: testdb.Geo(t), Log: log, Activity: rec}))
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	noFollow := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	call := func(c *http.Client, path string) (int, http.Header, string) {
		t.Helper()
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(body)
	}
	follow := func(path, want string) {
		t.Helper()
		if code, _, body := call(client, path); code != 200 || body != "shop "+want {
			t.Fatalf("%s: %d %q, want the shop's %s", path, code, body, want)
		}
	}
	ann, bob := links["ann@example.com"], links["bob@example.com"]
	follow(ann[0], "/a?x=1&y=2")
	follow(ann[2], "/a?x=1&y=2")
	follow(ann[1], "/b")
	follow(bob[2], "/a?x=1&y=2")
	if code, h, _ := call(noFollow, bob[1]); code != 302 || h.Get("Location") != b || h.Get("Cache-Control") != "no-store" ||
		h.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("bob's link b: %d %q", code, h)
	}
	// Refused: a changed byte, a cut, ann's sealed ids under bob's IV, a
	// link number the send has none for.
	tok := func(p string) []byte {
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(p, mail.ClickPath))
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	annRaw, bobRaw := tok(ann[1]), tok(bob[1])
	crossed := append(append([]byte{annRaw[0]}, bobRaw[1:17]...), annRaw[17:]...)
	changed := []byte(ann[0])
	changed[len(changed)-3] ^= 1
	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}
	var annID int64
	if err := d.Pool.QueryRow(ctx, "SELECT id FROM deliveries WHERE send_id = $1 AND email = 'ann@example.com'", f.send).Scan(&annID); err != nil {
		t.Fatal(err)
	}
	if p := mail.ClickPath + string(mail.NewTokenSigner(key).ClickKey(f.send).Seal(nil, annID, 1)); p != ann[1] {
		t.Fatalf("ann's link b is %s, the signer makes %s", ann[1], p)
	}
	for _, p := range []string{string(changed), ann[0][:len(ann[0])-1], mail.ClickPath + base64.RawURLEncoding.EncodeToString(crossed),
		mail.ClickPath + string(mail.NewTokenSigner(key).ClickKey(f.send).Seal(nil, annID, 2))} {
		code, h, body := call(noFollow, p)
		if code != 404 || h.Get("Location") != "" || !strings.Contains(body, "Link not valid") {
			t.Fatalf("%s: %d %q %s", p, code, h, body)
		}
	}
	// Ann opens her mail once.
	annHTML, _ := htmlOf(t, mails["ann@example.com"])
	if code, _, _ := call(client, pixelRE.FindStringSubmatch(annHTML)[1]); code != 200 {
		t.Fatalf("pixel: %d", code)
	}

	// Nothing counts before the recorder writes.
	st, err := d.SingleSendStats(ctx, f.user, scalar[string](t, d, "SELECT utr::text FROM single_sends WHERE id = $1", f.send))
	if err != nil || st.TotalClicks != 0 || st.TotalOpens != 0 {
		t.Fatalf("before the write: %+v %v", st.Counts, err)
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = d.SingleSendStats(ctx, f.user, scalar[string](t, d, "SELECT utr::text FROM single_sends WHERE id = $1", f.send))
	if err != nil {
		t.Fatal(err)
	}
	if st.TotalClicks != 5 || st.UniqueClicks != 2 || st.TotalOpens != 1 || st.UniqueOpens != 1 || st.Delivered != 3 {
		t.Errorf("counts %+v, want 5 clicks by 2, 1 open by 1, 3 delivered", st.Counts)
	}
	want := []mail.LinkClicks{{URL: a, UniqueClicks: 2, TotalClicks: 3}, {URL: b, UniqueClicks: 2, TotalClicks: 2}}
	if !slices.Equal(st.Links, want) {
		t.Errorf("links %+v, want %+v", st.Links, want)
	}
	if c := sendCounters(t, d, f.send); c.TotalOpens != 1 || c.UniqueOpens != 1 {
		t.Errorf("the send's open counters %+v", c)
	}
	// A second write of the same delivery's clicks: more total, no more
	// unique.
	follow(ann[0], "/a?x=1&y=2")
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ = d.SingleSendStats(ctx, f.user, scalar[string](t, d, "SELECT utr::text FROM single_sends WHERE id = $1", f.send))
	if st.TotalClicks != 6 || st.UniqueClicks != 2 || st.Links[0] != (mail.LinkClicks{URL: a, UniqueClicks: 2, TotalClicks: 4}) {
		t.Errorf("after a second write: %+v %+v", st.Counts, st.Links)
	}
}

// With click tracking off (CLICK_TRACKING=off) the mails carry the links
// as written and the send has no link table.
func TestClickTrackingOff(t *testing.T) {
	// Not parallel: see TestClickTrackingEndToEnd.
	d := testdb.New(t)
	f := newSendFixture(t, d, `<body><a href="https://shop.example/a?x=1&amp;y=2">Shop</a></body>`)
	mails := sendOut(t, d, f, false)
	for addr, data := range mails {
		h, _ := htmlOf(t, data)
		text, _ := partOf(t, data, "text/plain")
		if !strings.Contains(h, `<a href="https://shop.example/a?x=1&amp;y=2">Shop</a>`) || text != "Shop (https://shop.example/a?x=1&y=2)" ||
			strings.Contains(h, "/t/c/") {
			t.Errorf("%s:\n%s\n%s", addr, h, text)
		}
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM send_links WHERE send_id = $1", f.send); n != 0 {
		t.Errorf("%d links numbered", n)
	}
}
