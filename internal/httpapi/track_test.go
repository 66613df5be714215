package httpapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

// noFollow is a real HTTP client that shows redirects instead of
// following them.
var noFollow = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// get asks url and answers the status, the header and the body.
func get(t *testing.T, c *http.Client, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// A tracked link, followed by a real client over real HTTP, redirects to
// its address from the send's link table, with no-store and no referrer;
// a changed, cut, crossed or unknown token is the not-valid page and
// never a redirect; what the request adds is not where it goes; a link
// numbered after the table was read still redirects.
func TestClickRedirect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	a := newAPI(t)
	acct := a.account()
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "shop ", r.URL.RequestURI())
	}))
	defer shop.Close()

	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}
	signer := mail.NewTokenSigner(key)
	send := 1<<40 + acct.id // a link table of its own
	table, err := d.NumberLinks(ctx, send, []string{shop.URL + "/a?x=1&y=%C3%A9", shop.URL + "/b"})
	if err != nil || len(table) != 2 {
		t.Fatalf("link table %q: %v", table, err)
	}
	key5 := signer.ClickKey(send)
	token := func(id int64, link int) string { return string(key5.Seal(nil, id, link)) }
	click := func(tok string) string { return srv.URL + mail.ClickPath + tok }

	for link, want := range table {
		code, h, body := get(t, noFollow, click(token(7, link)))
		if code != http.StatusFound || h.Get("Location") != want || h.Get("Cache-Control") != "no-store" ||
			h.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("link %d: %d %q %s", link, code, h, body)
		}
	}
	// Followed: the shop gets the address as it is in the table. (Go's
	// client sends a Referer whatever Referrer-Policy says; browsers obey
	// it, so the token stays ours.)
	client := &http.Client{Timeout: 10 * time.Second}
	if code, _, body := get(t, client, click(token(7, 0))); code != 200 || body != "shop /a?x=1&y=%C3%A9" {
		t.Fatalf("followed: %d %q", code, body)
	}
	// What the request adds does not change where it goes.
	if code, h, _ := get(t, noFollow, click(token(7, 1))+"?url=https://evil.example/&to=https://evil.example/"); code != 302 || h.Get("Location") != table[1] {
		t.Fatalf("with a query: %d %q", code, h.Get("Location"))
	}

	// Refused: every byte changed, a cut, an added byte, line ends,
	// another key, this delivery's sealed ids under another's IV, a
	// link the table lacks, the other tokens' kinds, junk.
	good := token(7, 1)
	var bad []string
	for i := range len(good) {
		b := []byte(good)
		b[i] ^= 1
		bad = append(bad, string(b))
	}
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	other, _ := base64.RawURLEncoding.DecodeString(token(8, 1))
	crossed := base64.RawURLEncoding.EncodeToString(append(append([]byte{raw[0]}, other[1:17]...), raw[17:]...))
	bad = append(bad, good[:len(good)-1], good[:10], good+"A", good+"%0A", "%0D%0A"+good, crossed,
		string(mail.NewTokenSigner([]byte("another key of thirty-two bytes!")).ClickKey(send).Seal(nil, 7, 1)),
		token(7, 2), token(7, mail.MaxLink), string(signer.ClickKey(send+1).Seal(nil, 7, 0)),
		string(signer.SealOpen(nil, send, 7)), string(signer.Seal(nil, mail.UnsubscribeToken{UserID: acct.id, Email: "a@b.example"})),
		"x", strings.Repeat("A", 200), "https:evil.example")
	for _, tok := range bad {
		code, h, body := get(t, noFollow, click(tok))
		if code != http.StatusNotFound || h.Get("Location") != "" || !strings.HasPrefix(h.Get("Content-Type"), "text/html") ||
			!strings.Contains(body, "Link not valid") || h.Get("Cache-Control") != "no-store" {
			t.Fatalf("%q: %d %q\n%s", tok, code, h, body)
		}
	}

	// Paths that are no token at all: no redirect anywhere.
	for _, p := range []string{"https://evil.example", "https:%2F%2Fevil.example/", "%2F%2Fevil.example", good + "/https://evil.example", ""} {
		code, h, body := get(t, noFollow, srv.URL+mail.ClickPath+p)
		if code/100 == 3 && !strings.HasPrefix(h.Get("Location"), "/") || code == 200 || code >= 500 {
			t.Fatalf("%q: %d %q\n%s", p, code, h, body)
		}
	}

	// The table grows (an automation's edited step): the new number
	// redirects, though the table was read before it was added.
	if table, err = d.NumberLinks(ctx, send, []string{shop.URL + "/c", shop.URL + "/a?x=1&y=%C3%A9"}); err != nil || len(table) != 3 {
		t.Fatalf("link table %q: %v", table, err)
	}
	if code, h, _ := get(t, noFollow, click(token(9, 2))); code != 302 || h.Get("Location") != shop.URL+"/c" {
		t.Fatalf("a link numbered later: %d %q", code, h.Get("Location"))
	}
}
