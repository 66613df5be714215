package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/testdb"
)

// International addresses follow one rule at every input (docs/limits.md):
// a UTF-8 local part and an internationalized domain are taken by the API
// and the CSV import alike and stored the same (trimmed, in NFC, an
// internationalized domain as its lower-case U-labels); a domain without a valid A-label is a 422 naming
// the field at every address field (contacts, senders, suppressions,
// notification recipients) and a skipped, counted row in a CSV file.
func TestInternationalAddresses(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	byAPI, byCSV := seedType(t, acct, "By API"), seedType(t, acct, "By CSV")
	good := []string{"ü-h@example.com", "h@bücher.example", "u\u0308ber@BU\u0308CHER.example", "用户@例子.广告"}
	for _, e := range good {
		a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
			"contact_type_id": {fmt.Sprint(byAPI)}, "email": {" " + e + " "}, "country": {"276"}}}).
			expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	}
	bad := []string{"a@xn--zz.example", "a@-x.example", "a@\u0301x.example", "a@ex_ample.com"}
	upload(a, acct, byCSV, "email,first_name\r\n"+strings.Join(good, ",X\r\n")+",X\r\n"+strings.Join(bad, ",Y\r\n")+",Y\r\n").
		expect(t, 200, imported)

	want := map[string]string{ // lower(email) -> email as stored
		"ü-h@example.com": "ü-h@example.com", "h@bücher.example": "h@bücher.example",
		"über@bücher.example": "über@bücher.example", "用户@例子.广告": "用户@例子.广告"}
	for typ, got := range map[string]map[string]storedContact{"API": storedContacts(t, acct, byAPI), "CSV": storedContacts(t, acct, byCSV)} {
		if len(got) != len(want) {
			t.Errorf("%s: %d contacts, want %d: %+v", typ, len(got), len(want), got)
		}
		for lc, email := range want {
			if got[lc].email != email {
				t.Errorf("%s: %q stored as %q, want %q", typ, lc, got[lc].email, email)
			}
		}
	}
	var payload string
	if err := testdb.New(t).Pool.QueryRow(context.Background(),
		"SELECT payload::text FROM events WHERE user_id = $1 AND subject_id = $2 AND kind = 'contacts.imported'", acct.id, byCSV).Scan(&payload); err != nil ||
		payload != `{"rows": 8, "added": 4, "skipped": 4, "updated": 0}` {
		t.Errorf("import event %s %v", payload, err)
	}

	const domainMsg = " must be a valid email address: its domain is not a valid domain name."
	for _, e := range bad {
		t.Run(e, func(t *testing.T) {
			a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
				"contact_type_id": {fmt.Sprint(byAPI)}, "email": {e}, "country": {"276"}}}).
				expect(t, 422, `{"status":"failed","errors":{"email":["The email`+domainMsg+`"]}}`)
			a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
				"contact_type_id": {fmt.Sprint(byAPI)}, "email": {"ok@example.com"}, "alt_email": {e}, "country": {"276"}}}).
				expect(t, 422, `{"status":"failed","errors":{"alt_email":["The alt email`+domainMsg+`"]}}`)
			sender := url.Values{"from_name": {"N"}, "from_email": {e}, "reply_to_email": {e}, "country_id": {"276"},
				"company_address": {"Marienplatz 1"}, "nickname": {"n"}}
			a.do(req{method: "POST", path: "/api/sender/save", acct: &acct, body: sender}).
				expect(t, 422, `{"status":"failed","errors":{"from_email":["The from email`+domainMsg+`"],"reply_to_email":["The reply to email`+domainMsg+`"]}}`)
			a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &acct, body: url.Values{"email_address": {"ok@example.com," + e}}}).
				expect(t, 422, `{"status":"failed","errors":{"email_address":["The email address \"`+e+`\" is not a valid email address: its domain is not a valid domain name."]}}`)
			a.do(req{method: "POST", path: "/api/notification-recipient/save", acct: &acct, body: url.Values{"email_address": {e}, "email_owner": {"Ops"}}}).
				expect(t, 422, `{"status":"failed","errors":{"email_address":["The email address`+domainMsg+`"]}}`)
		})
	}

	// Senders, suppressions and notification recipients take them too.
	a.do(req{method: "POST", path: "/api/sender/save", acct: &acct, body: url.Values{"from_name": {"Bücher"}, "from_email": {"ü@bücher.example"},
		"reply_to_email": {"h@bücher.example"}, "country_id": {"276"}, "company_address": {"Marienplatz 1"}, "nickname": {"b"}}}).
		expect(t, 200, `{"status":"success","message":"Added Successfully"}`)
	a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &acct, body: url.Values{"email_address": {"ü-h@example.com, h@bücher.example"}}}).
		expect(t, 200, `{"status":"success","message":"Added Successfully"}`)
	a.do(req{method: "POST", path: "/api/notification-recipient/save", acct: &acct, body: url.Values{"email_address": {"ü@bücher.example"}, "email_owner": {"Ops"}}}).
		expect(t, 200, `{"status":"success","message":"Added Successfully"}`)
}

// Two spellings of one mailbox are one address: an internationalized
// domain is stored as its U-labels whether given as U-labels, A-labels or
// in capitals, so a suppression catches every spelling of its address and
// a contact type holds it once; an address holding an invisible character
// (one that IDNA drops on the wire, or that shows nothing) is refused at
// every input. Before, h@xn--bcher-kva.example was mailed although
// h@bücher.example was suppressed, and victim@ex\u200bample.com although
// victim@example.com was.
func TestAddressSpellingsAreOneMailbox(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Spellings")
	a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &acct, body: url.Values{
		"email_address": {"h@bücher.example, x@xn--bcher-kva.example, y@BÜCHER.example"}}}).
		expect(t, 200, `{"status":"success","message":"Added Successfully"}`)
	for _, e := range []string{"h@xn--bcher-kva.example", "x@BÜCHER.example", "y@bücher.example", "h@XN--BCHER-KVA.example"} {
		a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
			"contact_type_id": {fmt.Sprint(typ)}, "email": {e}, "country": {"276"}}}).
			expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)
	}
	got := storedContacts(t, acct, typ)
	want := []string{"h@bücher.example", "x@bücher.example", "y@bücher.example"}
	if len(got) != len(want) {
		t.Errorf("%d contacts, want %d (one per mailbox): %+v", len(got), len(want), got)
	}
	for _, e := range want {
		if got[e].email != e {
			t.Errorf("%q stored as %q", e, got[e].email)
		}
	}
	var suppressed int
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT count(*) FROM contacts c WHERE c.contact_type_id = $1
		AND EXISTS (SELECT 1 FROM unsubscribes u WHERE u.user_id = c.user_id AND u.email_lc = c.email_lc)`, typ).Scan(&suppressed); err != nil {
		t.Fatal(err)
	}
	if suppressed != len(want) {
		t.Errorf("%d of the %d contacts match their suppression (the expansion's NOT EXISTS), want all", suppressed, len(want))
	}

	const why = " must be a valid email address: it holds an invisible character (a format character, a space or one that shows nothing)."
	invisible := []string{"victim1@ex\u200bample.com", "victim2@ex\u00adample.com", "v6@ex\u2060ample.com", "v7@e\u034fxample.com",
		"v8@ex\ufe0fample.com", "victim5@example.com\u200c", "\u202emoc.lapyap@evil.test", "a\u2066b\u2069@evil.test",
		"a\u061c@evil.test", "\ufeff@evil.test", "a\u3164@evil.test", "a\u3000b@evil.test"}
	for _, e := range invisible {
		t.Run(e, func(t *testing.T) {
			a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
				"contact_type_id": {fmt.Sprint(typ)}, "email": {e}, "country": {"276"}}}).
				expect(t, 422, `{"status":"failed","errors":{"email":["The email`+why+`"]}}`)
			a.do(req{method: "POST", path: "/api/sender/save", acct: &acct, body: url.Values{"from_name": {"N"}, "from_email": {e},
				"reply_to_email": {"ok@example.com"}, "country_id": {"276"}, "company_address": {"Marienplatz 1"}, "nickname": {"n"}}}).
				expect(t, 422, `{"status":"failed","errors":{"from_email":["The from email`+why+`"]}}`)
			a.do(req{method: "POST", path: "/api/global-unsubscribes/save", acct: &acct, body: url.Values{"email_address": {e}}}).
				expect(t, 422, `{"status":"failed","errors":{"email_address":["The email address \"`+e+`\" is not a valid email address: it holds an invisible character (a format character, a space or one that shows nothing)."]}}`)
			a.do(req{method: "POST", path: "/api/notification-recipient/save", acct: &acct, body: url.Values{"email_address": {e}, "email_owner": {"Ops"}}}).
				expect(t, 422, `{"status":"failed","errors":{"email_address":["The email address`+why+`"]}}`)
		})
	}
	csvType := seedType(t, acct, "Spellings CSV")
	upload(a, acct, csvType, "email\r\n"+strings.Join(invisible, "\r\n")+"\r\nok@example.com\r\n").expect(t, 200, imported)
	if got := storedContacts(t, acct, csvType); len(got) != 1 || got["ok@example.com"].email != "ok@example.com" {
		t.Errorf("the CSV stored %+v, want ok@example.com alone", got)
	}
}
