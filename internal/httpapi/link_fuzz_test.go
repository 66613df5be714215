package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// gif is the open pixel's answer (a transparent 1x1 GIF).
const gif = "GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"

// verificationToken mails sender id a fresh verification link and
// returns its token.
func verificationToken(t testing.TB, d *postgres.DB, user, id int64) string {
	t.Helper()
	ctx := context.Background()
	if err := d.RequestSenderVerification(ctx, user, id); err != nil {
		t.Fatal(err)
	}
	var token string
	sent, err := d.MailSenderVerification(ctx, id, time.Hour, func(_ context.Context, _ postgres.SenderToVerify, tok string) error {
		token = tok
		return nil
	})
	if err != nil || !sent {
		t.Fatalf("verification mail: %v %v", sent, err)
	}
	return token
}

// FuzzLinkTokens requests the links mails carry with any token, and with
// fuzzed changes of valid ones, through the real router and database:
// nothing answers 5xx; the preferences page (GET) and one-click (POST) of
// /unsubscribe/{token} answer only a token the signer made, byte for
// byte (anything else is the 404 page; gin's redirect of a trailing slash
// is followed); /senders/verify/{token} verifies only the stored token;
// /o/{list}/{token} answers the same GIF to all; /t/c/{token} redirects
// only the click token the signer made, to its link.
//
// Long runs should get their own database, not the one `go test
// ./internal/httpapi` uses (testdb names it after the test binary):
// docs/fuzzing.md.
func FuzzLinkTokens(f *testing.F) {
	a := newAPI(f)
	acct := a.account()
	d := testdb.New(f)
	ctx := context.Background()
	key, err := d.Secret(ctx, "unsubscribe_token")
	if err != nil {
		f.Fatal(err)
	}
	signer := mail.NewTokenSigner(key)
	unsub := string(signer.Seal(nil, mail.UnsubscribeToken{UserID: acct.id, Email: "ann@example.com", SendID: 3}))
	open := string(signer.SealOpen(nil, 3, 4))
	clickSend := 1<<42 + acct.id
	table, err := d.NumberLinks(ctx, clickSend, []string{"https://shop.example/x?a=1"})
	if err != nil {
		f.Fatal(err)
	}
	click := string(signer.ClickKey(clickSend).Seal(nil, 4, 0))

	deState, deCity, _ := senderPlace(f)
	if r := a.do(req{method: "POST", path: "/api/sender/save", acct: &acct, body: senderForm(deState, deCity)}); r.code != 200 {
		f.Fatalf("sender: %d %s", r.code, r.body)
	}
	var sender int64
	if err := d.Pool.QueryRow(ctx, "SELECT id FROM senders WHERE user_id = $1", acct.id).Scan(&sender); err != nil {
		f.Fatal(err)
	}
	// The links work: a verification token verifies once.
	spent := verificationToken(f, d, acct.id, sender)
	get := func(method, path, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/", strings.NewReader(body))
		r.URL.Path = path
		if body != "" {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		w := httptest.NewRecorder()
		a.h.ServeHTTP(w, r)
		if w.Code == http.StatusMovedPermanently || w.Code == http.StatusTemporaryRedirect {
			if loc := w.Header().Get("Location"); loc != path && strings.HasPrefix(loc, "/") {
				r := httptest.NewRequest(method, "/", strings.NewReader(body))
				r.URL.Path = loc
				if body != "" {
					r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				w = httptest.NewRecorder()
				a.h.ServeHTTP(w, r)
			}
		}
		return w
	}
	if w := get("GET", "/senders/verify/"+spent, ""); w.Code != 200 {
		f.Fatalf("verification link: %d", w.Code)
	}
	if w := get("GET", "/senders/verify/"+spent, ""); w.Code != 404 {
		f.Fatalf("spent verification link: %d", w.Code)
	}
	verify := verificationToken(f, d, acct.id, sender)
	if w := get("GET", mail.UnsubscribePath+unsub, ""); w.Code != 200 {
		f.Fatalf("preferences page: %d", w.Code)
	}

	f.Add("", uint8(0), uint16(0), byte('A'))
	f.Add(unsub, uint8(0), uint16(3), byte('B'))
	f.Add(verify, uint8(1), uint16(7), byte('x'))
	f.Add(open+".gif", uint8(2), uint16(40), byte('-'))
	f.Add(click, uint8(0), uint16(12), byte('_'))
	f.Add("../../api/senders", uint8(3), uint16(10), byte('/'))
	f.Add("\x00\xff%2F", uint8(4), uint16(0), byte('\t'))
	f.Fuzz(func(t *testing.T, text string, op uint8, at uint16, c byte) {
		for _, p := range []string{text, mutate(unsub, op, int(at), c), mutate(verify, op, int(at), c), mutate(open, op, int(at), c), mutate(click, op, int(at), c)} {
			for _, m := range []struct{ method, body string }{{"GET", ""}, {"POST", "List-Unsubscribe=One-Click"}} {
				if m.method == "POST" && (p == unsub || p == unsub+"/") {
					continue // would unsubscribe: allowed, but not what this test is about
				}
				w := get(m.method, mail.UnsubscribePath+p, m.body)
				if w.Code >= 500 || w.Code == 200 && p != unsub && p != unsub+"/" {
					t.Fatalf("%s /unsubscribe/%q: %d %s", m.method, p, w.Code, w.Body)
				}
			}
			if p != verify && p != verify+"/" {
				if w := get("GET", "/senders/verify/"+p, ""); w.Code != 404 {
					t.Fatalf("GET /senders/verify/%q: %d %s", p, w.Code, w.Body)
				}
			}
			// /t/c/{token} redirects only the token the signer made, to
			// the link table's address; anything else is no redirect.
			if w := get("GET", mail.ClickPath+p, ""); w.Code >= 500 || w.Code/100 == 3 && (p != click && p != click+"/" ||
				w.Header().Get("Location") != table[0]) || w.Code/100 != 3 && w.Header().Get("Location") != "" {
				t.Fatalf("GET /t/c/%q: %d %q", p, w.Code, w.Header())
			}
			for _, path := range []string{mail.OpenPath + "LT/" + p, mail.OpenPath + p + "/" + p} {
				w := get("GET", path, "")
				if w.Code >= 500 || w.Code == 200 && (w.Body.String() != gif || w.Header().Get("Content-Type") != "image/gif" ||
					!strings.Contains(w.Header().Get("Cache-Control"), "no-store")) {
					t.Fatalf("GET %q: %d %q %s", path, w.Code, w.Header(), bytes.ToValidUTF8(w.Body.Bytes(), nil))
				}
			}
		}
	})
}

// mutate changes tok at position at (modulo its length) by op: replace
// the byte with c, insert c, remove the byte, cut there, or append c.
func mutate(tok string, op uint8, at int, c byte) string {
	if tok == "" {
		return string([]byte{c})
	}
	at %= len(tok)
	switch op % 5 {
	case 0:
		return tok[:at] + string([]byte{c}) + tok[at+1:]
	case 1:
		return tok[:at] + string([]byte{c}) + tok[at:]
	case 2:
		return tok[:at] + tok[at+1:]
	case 3:
		return tok[:at]
	default:
		return tok + string([]byte{c})
	}
}
