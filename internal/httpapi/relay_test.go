package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/testdb"
)

// A send may name the relay its mails go to first: one of SMTP_URL's
// relays, kept by an update that names it again and dropped by one that
// does not, copied by a duplicate, and shown in the details only when set.
func TestSendRelay(t *testing.T) {
	f := newSendFixture(t, httpapi.Config{Relays: []string{"primary", "bulk-eu"}})
	relayOf := func(utr string) string {
		t.Helper()
		var v *string
		if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT relay FROM single_sends WHERE utr = $1::uuid", utr).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v == nil {
			return "NULL"
		}
		return *v
	}
	details := func(utr string) string {
		t.Helper()
		r := f.a.do(req{method: "GET", path: "/api/single-send/details?utr=" + utr, acct: &f.acct})
		if r.code != 200 {
			t.Fatalf("details: %d %s", r.code, r.body)
		}
		return r.body
	}
	body := f.form()
	body.Set("relay", " bulk-eu ")
	utr, _ := f.create(t, body)
	if got := relayOf(utr); got != "bulk-eu" {
		t.Fatalf("stored relay %q", got)
	}
	if d := details(utr); !strings.Contains(d, `"updated_at":"`) || !strings.Contains(d, `,"relay":"bulk-eu"}]`) {
		t.Fatalf("details: %s", d)
	}
	plain, _ := f.create(t, f.form())
	if got, d := relayOf(plain), details(plain); got != "NULL" || strings.Contains(d, `"relay"`) {
		t.Fatalf("a send without a relay: stored %q, details %s", got, d)
	}

	for relay, msg := range map[string]string{
		"elsewhere": "The selected relay is invalid.",
		"Bulk EU":   "The relay must be a relay name (a-z, 0-9, - and _, up to 63 characters).",
		"-x":        "The relay must be a relay name (a-z, 0-9, - and _, up to 63 characters).",
	} {
		b := f.form()
		b.Set("relay", relay)
		f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: b}).
			expect(t, 422, `{"status":"failed","errors":{"relay":["`+msg+`"]}}`)
	}
	if r := f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: jsonBody(`{"relay":["primary"]}`)}); r.code != 422 ||
		!strings.Contains(r.body, `"relay":["The relay must be a string."]`) {
		t.Fatalf("relay as an array: %d %s", r.code, r.body)
	}

	// The duplicate keeps it; an update naming none drops it.
	f.a.do(req{method: "GET", path: "/api/single/send/duplicate?utr=" + utr, acct: &f.acct}).
		expect(t, 200, `{"status":"success","message":"Duplicated Successfully"}`)
	var copied string
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT utr::text FROM single_sends WHERE user_id = $1 ORDER BY id DESC LIMIT 1",
		f.acct.id).Scan(&copied); err != nil {
		t.Fatal(err)
	}
	m := []string{"", copied}
	if got := relayOf(m[1]); got != "bulk-eu" {
		t.Fatalf("the duplicate's relay %q", got)
	}
	up := f.form()
	up.Set("utr", m[1])
	if r := f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &f.acct, body: up}); r.code != 200 {
		t.Fatalf("update: %d %s", r.code, r.body)
	}
	if got := relayOf(m[1]); got != "NULL" {
		t.Fatalf("after an update without relay: %q", got)
	}
	up.Set("relay", "primary")
	if r := f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &f.acct, body: up}); r.code != 200 {
		t.Fatalf("update: %d %s", r.code, r.body)
	}
	if got := relayOf(m[1]); got != "primary" {
		t.Fatalf("after an update naming primary: %q", got)
	}

	// Without SMTP_URL here, any well-formed name is taken.
	g := newSendFixture(t, httpapi.Config{})
	body = g.form()
	body.Set("relay", "anything_1")
	if utr, _ := g.create(t, body); relayOf(utr) != "anything_1" {
		t.Fatalf("without relays configured: %q", relayOf(utr))
	}
}
