package httpapi_test

import (
	"net/url"
	"testing"
)

func TestReputationGuards(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct, other := a.account(), a.account()
	get := func(acct account) req { return req{method: "GET", path: "/api/reputation-guards", acct: &acct} }
	defaults := `{"status":"success","message":{"guards":{"bounce_rate":5,"bounce_after":1000,"complaint_rate":0.3,"complaint_after":1000}}}`
	a.do(get(acct)).expect(t, 200, defaults)

	save := func(body any) response {
		return a.do(req{method: "POST", path: "/api/reputation-guards/save", acct: &acct, body: body})
	}
	save(url.Values{"bounce_rate": {"2.5"}, "bounce_after": {"500"}, "complaint_rate": {"0.1"}, "complaint_after": {"2000"}}).
		expect(t, 200, `{"status":"success","message":"Reputation Guards Saved Successfully"}`)
	a.do(get(acct)).expect(t, 200, `{"status":"success","message":{"guards":{"bounce_rate":2.5,"bounce_after":500,"complaint_rate":0.1,"complaint_after":2000}}}`)
	a.do(get(other)).expect(t, 200, defaults) // another account's are its own
	// 0 turns a guard off; JSON numbers are taken as well as form values.
	save(jsonBody(`{"bounce_rate":0,"bounce_after":1,"complaint_rate":100,"complaint_after":1000000000}`)).
		expect(t, 200, `{"status":"success","message":"Reputation Guards Saved Successfully"}`)
	a.do(get(acct)).expect(t, 200, `{"status":"success","message":{"guards":{"bounce_rate":0,"bounce_after":1,"complaint_rate":100,"complaint_after":1000000000}}}`)

	for _, c := range []struct {
		name string
		body any
		want string
	}{
		{"empty", url.Values{}, `{"status":"failed","errors":{"bounce_rate":["The bounce rate field is required."],"bounce_after":["The bounce after field is required."],"complaint_rate":["The complaint rate field is required."],"complaint_after":["The complaint after field is required."]}}`},
		{"out of range", url.Values{"bounce_rate": {"100.5"}, "bounce_after": {"0"}, "complaint_rate": {"-1"}, "complaint_after": {"1000000001"}},
			`{"status":"failed","errors":{"bounce_rate":["The bounce rate must be between 0 and 100."],"bounce_after":["The bounce after must be between 1 and 1000000000."],"complaint_rate":["The complaint rate must be between 0 and 100."],"complaint_after":["The complaint after must be between 1 and 1000000000."]}}`},
		{"not numbers", url.Values{"bounce_rate": {"five"}, "bounce_after": {"1e3"}, "complaint_rate": {"NaN"}, "complaint_after": {"99999999999999999999999"}},
			`{"status":"failed","errors":{"bounce_rate":["The bounce rate must be a number."],"bounce_after":["The bounce after must be an integer."],"complaint_rate":["The complaint rate must be a number."],"complaint_after":["The complaint after must be between 1 and 1000000000."]}}`},
		{"too precise", url.Values{"bounce_rate": {"0.125"}, "bounce_after": {"10"}, "complaint_rate": {"Inf"}, "complaint_after": {"10"}},
			`{"status":"failed","errors":{"bounce_rate":["The bounce rate may have at most 2 decimal places."],"complaint_rate":["The complaint rate must be a number."]}}`},
		// Written out or refused: an exponent, hex or digit separators
		// would keep a value other than the one shown (1e-12 kept, 0 shown).
		{"not written out", url.Values{"bounce_rate": {"1e-12"}, "bounce_after": {"10"}, "complaint_rate": {"0x1p-2"}, "complaint_after": {"10"}},
			`{"status":"failed","errors":{"bounce_rate":["The bounce rate must be a number."],"complaint_rate":["The complaint rate must be a number."]}}`},
		{"separators", url.Values{"bounce_rate": {"1_0"}, "bounce_after": {"10"}, "complaint_rate": {"-0.01"}, "complaint_after": {"10"}},
			`{"status":"failed","errors":{"bounce_rate":["The bounce rate must be a number."],"complaint_rate":["The complaint rate must be between 0 and 100."]}}`},
	} {
		save(c.body).expect(t, 422, c.want)
	}
	// An array or object for a number is told what the field wants.
	save(jsonBody(`{"bounce_rate":[5],"bounce_after":{"a":1},"complaint_rate":0.3,"complaint_after":1000}`)).expect(t, 422,
		`{"status":"failed","errors":{"bounce_rate":["The bounce rate must be a number."],"bounce_after":["The bounce after must be an integer."]}}`)
	// -0 is 0; a trailing point is a number.
	save(url.Values{"bounce_rate": {"-0"}, "bounce_after": {"1"}, "complaint_rate": {"100."}, "complaint_after": {"1000000000"}}).
		expect(t, 200, `{"status":"success","message":"Reputation Guards Saved Successfully"}`)
	// Nothing of a refused save was kept.
	a.do(get(acct)).expect(t, 200, `{"status":"success","message":{"guards":{"bounce_rate":0,"bounce_after":1,"complaint_rate":100,"complaint_after":1000000000}}}`)
	if r := a.do(req{method: "GET", path: "/api/reputation-guards"}); r.code != 401 {
		t.Fatalf("without keys: %d %s", r.code, r.body)
	}
}
