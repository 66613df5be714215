package httpapi_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

// unsubscribePath is the path of a mail's unsubscribe link for t, signed
// with the test database's key.
func unsubscribePath(t *testing.T, tok mail.UnsubscribeToken) string {
	t.Helper()
	key, err := testdb.New(t).Secret(context.Background(), "unsubscribe_token")
	if err != nil {
		t.Fatal(err)
	}
	return mail.UnsubscribePath + string(mail.NewTokenSigner(key).Seal(nil, tok))
}

// insertGroup makes a group of acct; display shows it on preferences pages.
func insertGroup(t *testing.T, acct account, name string, display bool) int64 {
	t.Helper()
	var id int64
	err := testdb.New(t).Pool.QueryRow(context.Background(),
		`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		 VALUES ($1, gen_random_uuid()::text, $2, $2 || ' news', $3) RETURNING id`, acct.id, name, map[bool]int{false: 0, true: 1}[display]).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// unsubscribes lists acct's suppression rows as "group:address" (group 0
// the global list) and its address.unsubscribed event payloads.
func unsubscribes(t *testing.T, acct account) (rows, events []string) {
	t.Helper()
	ctx := context.Background()
	pool := testdb.New(t).Pool
	err := pool.QueryRow(ctx, `SELECT COALESCE(array_agg(COALESCE(unsubscribe_groups_id, 0) || ':' || email_address ORDER BY id), '{}')
		FROM unsubscribes WHERE user_id = $1`, acct.id).Scan(&rows)
	if err == nil {
		err = pool.QueryRow(ctx, `SELECT COALESCE(array_agg(payload::text ORDER BY id), '{}')
			FROM events WHERE user_id = $1 AND kind = 'address.unsubscribed'`, acct.id).Scan(&events)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rows, events
}

func checkPage(t *testing.T, r response, code int, wants ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d: %s", r.code, code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	for h, v := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
		if got := r.header.Get(h); got != v {
			t.Errorf("%s = %q, want %q", h, got, v)
		}
	}
	if !strings.Contains(r.header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", r.header.Get("Content-Security-Policy"))
	}
	for _, w := range wants {
		if !strings.Contains(r.body, w) {
			t.Errorf("page lacks %q:\n%s", w, r.body)
		}
	}
}

// The page shows the displayed groups and the mail's own; a GET changes
// nothing, whoever follows the link.
func TestPreferencesPage(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct, other := a.account(), a.account()
	insertGroup(t, acct, "Weekly <digest>", true)
	insertGroup(t, acct, "Hidden", false)
	own := insertGroup(t, acct, "Receipts", false)
	insertGroup(t, other, "Other account", true)

	path := unsubscribePath(t, mail.UnsubscribeToken{UserID: acct.id, Email: "Ann@Example.com", GroupID: own, SendID: 9})
	for range 2 {
		r := a.do(req{method: "GET", path: path})
		checkPage(t, r, 200, "<title>Email preferences</title>", "Mail to <strong>Ann@Example.com</strong>",
			"<h3>Weekly &lt;digest&gt;</h3>", "<p>Weekly &lt;digest&gt; news</p>", "<h3>Receipts</h3>",
			`<input type="hidden" name="group" value="`, "Unsubscribe from everything")
		for _, no := range []string{"Hidden", "Other account", `role="status"`} {
			if strings.Contains(r.body, no) {
				t.Errorf("page shows %q", no)
			}
		}
	}
	if rows, events := unsubscribes(t, acct); len(rows)+len(events) != 0 {
		t.Errorf("a GET changed something: %v %v", rows, events)
	}
}

// RFC 8058: a POST of List-Unsubscribe=One-Click unsubscribes at once,
// from the mail's group when it has one, else from everything; again
// changes nothing.
func TestOneClickUnsubscribe(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	group := insertGroup(t, acct, "News", false)
	oneClick := url.Values{"List-Unsubscribe": {"One-Click"}}

	withGroup := unsubscribePath(t, mail.UnsubscribeToken{UserID: acct.id, Email: "ann@example.com", GroupID: group, SendID: 12})
	for range 2 {
		checkPage(t, a.do(req{method: "POST", path: withGroup, body: oneClick}), 200, "You are unsubscribed.")
	}
	noGroup := unsubscribePath(t, mail.UnsubscribeToken{UserID: acct.id, Email: "bob@example.com", AutomationID: 4})
	checkPage(t, a.do(req{method: "POST", path: noGroup, body: multipartBody{"List-Unsubscribe": "One-Click"}}), 200, "You are unsubscribed.")

	// A group deleted since the mail: the address leaves everything.
	gone := unsubscribePath(t, mail.UnsubscribeToken{UserID: acct.id, Email: "cy@example.com", GroupID: group + 1000})
	checkPage(t, a.do(req{method: "POST", path: gone, body: oneClick}), 200, "You are unsubscribed.")

	rows, events := unsubscribes(t, acct)
	want := []string{str(group) + ":ann@example.com", "0:bob@example.com", "0:cy@example.com"}
	if strings.Join(rows, " ") != strings.Join(want, " ") {
		t.Errorf("rows %v, want %v", rows, want)
	}
	wantEvents := []string{
		`{"via": "one_click", "email_address": "ann@example.com", "single_send_id": 12, "unsubscribe_groups_id": ` + str(group) + `}`,
		`{"via": "one_click", "automation_id": 4, "email_address": "bob@example.com", "unsubscribe_groups_id": null}`,
		`{"via": "one_click", "email_address": "cy@example.com", "unsubscribe_groups_id": null}`,
	}
	if strings.Join(events, "\n") != strings.Join(wantEvents, "\n") {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(events, "\n"), strings.Join(wantEvents, "\n"))
	}
}

// The page's buttons: leave a shown group, then everything; each answers
// 303 to the page, which tells what happened.
func TestPreferencesPageActions(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct, other := a.account(), a.account()
	shown := insertGroup(t, acct, "Weekly", true)
	hidden := insertGroup(t, acct, "Hidden", false)
	foreign := insertGroup(t, other, "Foreign", true)
	path := unsubscribePath(t, mail.UnsubscribeToken{UserID: acct.id, Email: "ann@example.com"})

	// Groups the page does not show cannot be left through it.
	for _, g := range []string{str(hidden), str(foreign), "x", "", "-1", "99999999999999999999"} {
		checkPage(t, a.do(req{method: "POST", path: path, body: url.Values{"action": {"leave"}, "group": {g}}}), 404,
			"This list is not one you can leave here.")
	}

	r := a.do(req{method: "POST", path: path, body: url.Values{"action": {"leave"}, "group": {str(shown)}}})
	if r.code != 303 || r.header.Get("Location") != path+"?done=group" {
		t.Fatalf("leave: %d %q %s", r.code, r.header.Get("Location"), r.body)
	}
	checkPage(t, a.do(req{method: "GET", path: path + "?done=group"}), 200, "Done: you left the list.", "You left this list.")

	r = a.do(req{method: "POST", path: path, body: multipartBody{"action": "all"}})
	if r.code != 303 || r.header.Get("Location") != path+"?done=all" {
		t.Fatalf("all: %d %q %s", r.code, r.header.Get("Location"), r.body)
	}
	checkPage(t, a.do(req{method: "GET", path: path + "?done=all"}), 200,
		"Done: you are unsubscribed from everything.", "You are unsubscribed from all mail of this sender")

	rows, events := unsubscribes(t, acct)
	if want := str(shown) + ":ann@example.com 0:ann@example.com"; strings.Join(rows, " ") != want {
		t.Errorf("rows %v, want %s", rows, want)
	}
	if len(events) != 2 || !strings.Contains(events[0], `"via": "preferences_page"`) {
		t.Errorf("events %v", events)
	}
	if rows, _ := unsubscribes(t, other); len(rows) != 0 {
		t.Errorf("the other account changed: %v", rows)
	}
}

// Links that were not made by mailroom, or were changed, and requests the
// page never sends, change nothing and answer a page, never a 500.
func TestUnsubscribeLinkRefused(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	path := unsubscribePath(t, mail.UnsubscribeToken{UserID: acct.id, Email: "ann@example.com"})
	tok := strings.TrimPrefix(path, mail.UnsubscribePath)
	flipped := []byte(tok)
	flipped[5] ^= 1
	other := mail.NewTokenSigner([]byte("another key of thirty-two bytes!"))
	for _, bad := range []string{
		"x", string(flipped), tok[:len(tok)-2], tok + "AA", "%00", strings.Repeat("A", 5000),
		string(other.Seal(nil, mail.UnsubscribeToken{UserID: acct.id, Email: "ann@example.com"})),
	} {
		p := mail.UnsubscribePath + url.PathEscape(bad)
		checkPage(t, a.do(req{method: "GET", path: p}), 404, "Link not valid")
		checkPage(t, a.do(req{method: "POST", path: p, body: url.Values{"List-Unsubscribe": {"One-Click"}}}), 404, "Link not valid")
	}
	for name, r := range map[string]req{
		"no body":          {method: "POST", path: path},
		"other action":     {method: "POST", path: path, body: url.Values{"action": {"delete"}}},
		"wrong one-click":  {method: "POST", path: path, body: url.Values{"List-Unsubscribe": {"one-click"}}},
		"json":             {method: "POST", path: path, body: jsonBody(`{"List-Unsubscribe":"One-Click"}`)},
		"too large":        {method: "POST", path: path, body: url.Values{"action": {"all"}, "pad": {strings.Repeat("x", 20<<10)}}},
		"cut multipart":    {method: "POST", path: path, body: rawBody{"multipart/form-data; boundary=zz", "--zz\r\nContent-Disposition: form-data; name=\"action\"\r\n\r\nall"}},
		"bad percent":      {method: "POST", path: path, body: rawBody{"application/x-www-form-urlencoded", "action=%zz"}},
		"multipart no end": {method: "POST", path: path, body: rawBody{"multipart/form-data", "x"}},
	} {
		t.Run(name, func(t *testing.T) {
			checkPage(t, a.do(r), 400, "Request not understood")
		})
	}
	if rows, events := unsubscribes(t, acct); len(rows)+len(events) != 0 {
		t.Errorf("refused requests changed something: %v %v", rows, events)
	}
}

func str(id int64) string { return strconv.FormatInt(id, 10) }
