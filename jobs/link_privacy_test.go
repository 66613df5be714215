package jobs_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/activity"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

// urlRE finds the links of a mail: http(s) and mailto addresses, up to
// what ends them in HTML, in the text part's "(…)" and in headers.
var urlRE = regexp.MustCompile(`(?i)(?:https?://|mailto:)[^\s"'<>()]+`)

// No link in a received mail shows who it went to or which rows it names.
// A send with tracking on, an unsubscribe group, open pixels and tracked
// links goes out through the engine to a real SMTP server; every URL of
// every mail (HTML and text parts, every header, List-Unsubscribe's https
// and mailto) holds neither the recipient's address (as written, lower
// case, URL-escaped, or in anything in it that decodes as base64 at any
// alignment) nor the delivery, send, account or group id (in decimal, or
// as a varint in anything decoded). Then each link still works through
// the real router: the preferences page, the one-click unsubscribe, the
// pixel (an open counted), the click (a 302 to the shop); and so do the
// links of mails sent before the tokens were sealed (versions 1-3, the
// ids and address in clear under a MAC).
func TestMailLinksShowNoPersonalData(t *testing.T) {
	// Not parallel: TestSingleSendEndToEnd's sweeper works on every send.
	ctx := context.Background()
	d := testdb.New(t)
	// Ids of nine digits and four-byte varints, so no short one can turn
	// up in a token's bytes by chance.
	for _, table := range []string{"accounts", "single_sends", "deliveries", "unsubscribe_groups"} {
		exec(t, d, `SELECT setval(pg_get_serial_sequence($1, 'id'), greatest(300000000, (SELECT last_value FROM `+table+`_id_seq)))`, table)
	}
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "shop ", r.URL.RequestURI())
	}))
	defer shop.Close()
	f := newSendFixture(t, d, `<html><body><p>Hi ((first_name))</p>
<a href="`+shop.URL+`/a?x=1&amp;y=2">Shop A</a> <a href="`+shop.URL+`/b">Shop B</a>
<a href="((unsubscribe_preferences))">Preferences</a></body></html>`)
	mails := sendOut(t, d, f, true)
	if len(mails) != 3 {
		t.Fatalf("%d mails", len(mails))
	}
	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}

	type delivery struct {
		id    int64
		email string
	}
	deliveries := map[string]delivery{}
	rows, err := d.Pool.Query(ctx, "SELECT id, email FROM deliveries WHERE send_id = $1 AND status = 2", f.send)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var x delivery
		if err := rows.Scan(&x.id, &x.email); err != nil {
			t.Fatal(err)
		}
		deliveries[strings.ToLower(x.email)] = x
	}
	if rows.Close(); rows.Err() != nil || len(deliveries) != 3 {
		t.Fatalf("deliveries %v: %v", deliveries, rows.Err())
	}

	linksOf := map[string][]string{}
	for addr, data := range mails {
		dl := deliveries[addr]
		ids := []int64{dl.id, f.send, f.user, f.group}
		var links []string
		m, _ := htmlOf(t, data)
		text, h := partOf(t, data, "text/plain")
		for _, part := range []string{html.UnescapeString(m), text} {
			links = append(links, urlRE.FindAllString(part, -1)...)
		}
		for name, vs := range h {
			if name == "To" {
				continue // the one place the address belongs
			}
			for _, v := range vs {
				links = append(links, urlRE.FindAllString(v, -1)...)
			}
		}
		var seen struct{ pref, mailto, pixel, click int }
		for _, u := range links {
			switch {
			case strings.HasPrefix(u, "https://m.example.test"+mail.UnsubscribePath):
				seen.pref++
			case strings.HasPrefix(u, "mailto:unsubscribe@"):
				seen.mailto++
			case strings.HasPrefix(u, "https://m.example.test"+mail.OpenPath):
				seen.pixel++
			case strings.HasPrefix(u, "https://m.example.test"+mail.ClickPath):
				seen.click++
			}
			if why := showsSomething(u, dl.email, ids); why != "" {
				t.Errorf("%s: link %s shows %s", addr, u, why)
			}
		}
		// The preferences link in both parts and List-Unsubscribe; its
		// mailto; the pixel; two tracked links in each part.
		if seen.pref != 3 || seen.mailto != 1 || seen.pixel != 1 || seen.click != 4 {
			t.Fatalf("%s: links %+v in %q", addr, seen, links)
		}
		linksOf[addr] = links
	}

	// The links work, through the real router and recorder.
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec := activity.New(d, log, activity.Options{Every: time.Hour})
	defer rec.Close(ctx)
	srv := httptest.NewServer(httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: d, Geo: testdb.Geo(t), Log: log, Activity: rec}))
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, link string, body url.Values) (int, http.Header, string) {
		t.Helper()
		var r io.Reader
		if body != nil {
			r = strings.NewReader(body.Encode())
		}
		req, err := http.NewRequest(method, srv.URL+strings.TrimPrefix(link, "https://m.example.test"), r)
		if err != nil {
			t.Fatal(err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	find := func(links []string, prefix string) []string {
		var out []string
		for _, u := range links {
			if strings.HasPrefix(u, "https://m.example.test"+prefix) {
				out = append(out, u)
			}
		}
		return out
	}
	signer := mail.NewTokenSigner(key)
	opens := 0
	for addr, links := range linksOf {
		dl := deliveries[addr]
		pref := find(links, mail.UnsubscribePath)[0]
		if code, _, body := do("GET", pref, nil); code != 200 || !strings.Contains(body, "Mail to <strong>"+html.EscapeString(dl.email)+"</strong>") {
			t.Fatalf("%s: preferences page %d\n%s", addr, code, body)
		}
		mailto := ""
		for _, u := range links {
			if strings.HasPrefix(u, "mailto:") {
				mailto = u
			}
		}
		_, tok, _ := strings.Cut(mailto, "subject=unsubscribe-")
		if got, ok := signer.Open(tok); !ok || got.Email != mail.Email(dl.email) || got.SendID != f.send || got.GroupID != f.group || got.UserID != f.user {
			t.Errorf("%s: the mailto token %q opens to %+v %v", addr, tok, got, ok)
		}
		if code, _, _ := do("GET", find(links, mail.OpenPath)[0], nil); code != 200 {
			t.Fatalf("%s: pixel %d", addr, code)
		}
		opens++
		clicks := find(links, mail.ClickPath)
		for i, want := range []string{shop.URL + "/a?x=1&y=2", shop.URL + "/b"} {
			if code, h, _ := do("GET", clicks[i], nil); code != 302 || h.Get("Location") != want {
				t.Fatalf("%s: click %s: %d %q, want %s", addr, clicks[i], code, h.Get("Location"), want)
			}
		}
	}
	annLinks := linksOf["ann@example.com"]
	if code, _, body := do("POST", find(annLinks, mail.UnsubscribePath)[0], url.Values{"List-Unsubscribe": {"One-Click"}}); code != 200 || !strings.Contains(body, "You are unsubscribed.") {
		t.Fatalf("one-click: %d\n%s", code, body)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM unsubscribes WHERE user_id = $1 AND unsubscribe_groups_id = $2 AND email_lc = 'ann@example.com'", f.user, f.group); n != 1 {
		t.Errorf("ann in the group's unsubscribes %d times", n)
	}

	// The links of mails sent before: bob's, in the old forms.
	bob := deliveries["bob@example.com"]
	v1 := oldToken(1, f.user, f.group, f.send, 0)
	v1 = append(v1[:len(v1):len(v1)], bob.email...)
	if code, _, body := do("GET", "/unsubscribe/"+macToken(key, v1), nil); code != 200 || !strings.Contains(body, "Mail to <strong>"+bob.email+"</strong>") {
		t.Fatalf("a version-1 preferences link: %d\n%s", code, body)
	}
	if code, _, _ := do("GET", "/o/tokA/"+macToken(key, oldToken(2, f.send, bob.id)), nil); code != 200 {
		t.Fatalf("a version-2 pixel: %d", code)
	}
	opens++
	if code, h, _ := do("GET", mail.ClickPath+clickV3(key, f.send, bob.id, 1), nil); code != 302 || h.Get("Location") != shop.URL+"/b" {
		t.Fatalf("a version-3 click: %d %q", code, h.Get("Location"))
	}
	if code, _, body := do("POST", "/unsubscribe/"+macToken(key, v1), url.Values{"List-Unsubscribe": {"One-Click"}}); code != 200 || !strings.Contains(body, "You are unsubscribed.") {
		t.Fatalf("a version-1 one-click: %d\n%s", code, body)
	}
	if n := scalar[int64](t, d, "SELECT count(*) FROM unsubscribes WHERE user_id = $1 AND unsubscribe_groups_id = $2 AND email_lc = 'bob@example.com'", f.user, f.group); n != 1 {
		t.Errorf("bob in the group's unsubscribes %d times", n)
	}

	// The opens and clicks count once the recorder writes them.
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c := sendCounters(t, d, f.send); c.TotalOpens != int64(opens) || c.UniqueOpens != 3 {
		t.Errorf("opens %+v, want %d by 3", c, opens)
	}
	st, err := d.SingleSendStats(ctx, f.user, scalar[string](t, d, "SELECT utr::text FROM single_sends WHERE id = $1", f.send))
	if err != nil || st.TotalClicks != 7 || st.UniqueClicks != 3 {
		t.Errorf("clicks %+v %v, want 7 by 3", st.Counts, err)
	}
}

// showsSomething says what of the address or the ids link u shows, or "".
func showsSomething(u, email string, ids []int64) string {
	plain := []string{u}
	if x, err := url.PathUnescape(u); err == nil {
		plain = append(plain, x)
	}
	if x, err := url.QueryUnescape(u); err == nil {
		plain = append(plain, x)
	}
	low := strings.ToLower(email)
	for _, p := range plain {
		if strings.Contains(strings.ToLower(p), low) {
			return "the address"
		}
		for _, id := range ids {
			if strings.Contains(p, strconv.FormatInt(id, 10)) {
				return "id " + strconv.FormatInt(id, 10)
			}
		}
	}
	for _, run := range regexp.MustCompile(`[A-Za-z0-9+/_-]{6,}`).FindAllString(u, -1) {
		for _, b := range decodings(run) {
			if bytes.Contains(bytes.ToLower(b), []byte(low)) {
				return "the address in base64 " + run
			}
			for _, id := range ids {
				if bytes.Contains(b, binary.AppendUvarint(nil, uint64(id))) || bytes.Contains(b, []byte(strconv.FormatInt(id, 10))) {
					return "id " + strconv.FormatInt(id, 10) + " in base64 " + run
				}
			}
		}
	}
	return ""
}

// decodings are what run decodes to as base64 (either alphabet, padded
// or not) from each of its first four characters on.
func decodings(run string) [][]byte {
	std := strings.NewReplacer("-", "+", "_", "/").Replace(run)
	var out [][]byte
	for i := range 4 {
		s := std[i:]
		if len(s)%4 == 1 {
			s = s[:len(s)-1]
		}
		if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// oldToken is the start of a token of the forms mails carried before the
// sealed ones: the version byte and the ids as varints.
func oldToken(version byte, ids ...int64) []byte {
	p := []byte{version}
	for _, id := range ids {
		p = binary.AppendUvarint(p, uint64(id))
	}
	return p
}

// macToken is base64url of p and its 128-bit HMAC-SHA256 (versions 1 and 2).
func macToken(key, p []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(p)
	return base64.RawURLEncoding.EncodeToString(append(p, m.Sum(nil)[:16]...))
}

// clickV3 is a version-3 click token: the ids in clear and the AES tag of
// (delivery, link) under the send's key.
func clickV3(key []byte, send, id int64, link int) string {
	m := hmac.New(sha256.New, key)
	m.Write(binary.AppendUvarint([]byte("mailroom click key\x00"), uint64(send)))
	block, err := aes.NewCipher(m.Sum(nil)[:16])
	if err != nil {
		panic(err)
	}
	var tag [16]byte
	binary.LittleEndian.PutUint64(tag[:8], uint64(id))
	binary.LittleEndian.PutUint64(tag[8:], uint64(link))
	block.Encrypt(tag[:], tag[:])
	p := oldToken(3, send, id, int64(link))
	return base64.RawURLEncoding.EncodeToString(append(p, tag[:]...))
}
