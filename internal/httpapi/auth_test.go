package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/mailroom/mailroom/internal/testdb"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	const path = "/api/get/country-state-city?country_id=276"
	tests := []struct {
		name   string
		header map[string]string
		code   int
		body   string
	}{
		{"no headers", nil, 401,
			`{"status":"failed","errors":{"PublicKey":["The public key field is required."],"SecretKey":["The secret key field is required."]}}`},
		{"empty headers", map[string]string{"PublicKey": "", "SecretKey": ""}, 401,
			`{"status":"failed","errors":{"PublicKey":["The public key field is required."],"SecretKey":["The secret key field is required."]}}`},
		{"public key only", map[string]string{"PublicKey": acct.public}, 401,
			`{"status":"failed","errors":{"SecretKey":["The secret key field is required."]}}`},
		{"secret key only", map[string]string{"SecretKey": acct.secret}, 401,
			`{"status":"failed","errors":{"PublicKey":["The public key field is required."]}}`},
		{"wrong secret", map[string]string{"PublicKey": acct.public, "SecretKey": acct.secret + "x"}, 401,
			`{"status":"failed","errors":"The public key or secret key is invalid."}`},
		{"unknown public key", map[string]string{"PublicKey": "pk_nobody", "SecretKey": acct.secret}, 401,
			`{"status":"failed","errors":"The public key or secret key is invalid."}`},
		{"another account's secret", map[string]string{"PublicKey": acct.public, "SecretKey": a.account().secret}, 401,
			`{"status":"failed","errors":"The public key or secret key is invalid."}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.do(req{method: "GET", path: path, header: tt.header}).expect(t, tt.code, tt.body)
		})
	}
	t.Run("right keys", func(t *testing.T) {
		r := a.do(req{method: "GET", path: path, acct: &acct})
		if r.code != http.StatusOK {
			t.Fatalf("got %d %s", r.code, r.body)
		}
	})
}

func TestUnknownRoute(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	a.do(req{method: "GET", path: "/api/no/such/route", acct: &acct}).
		expect(t, 404, `{"status":"failed","errors":"Not Found"}`)
	a.do(req{method: "GET", path: "/nowhere"}).
		expect(t, 404, `{"status":"failed","errors":"Not Found"}`)
}

func TestHealth(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	a.do(req{method: "GET", path: "/healthz"}).expect(t, 200, `ok`)
	a.do(req{method: "GET", path: "/readyz"}).expect(t, 200, `{"postgres":"ok","redis":"ok"}`)
}

// A disabled account's keys are refused with their own sentence; enabled
// again, they work.
func TestDisabledAccount(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	d := testdb.New(t)
	if err := d.SetDisabled(context.Background(), acct.id, true); err != nil {
		t.Fatal(err)
	}
	a.do(req{method: "GET", path: "/api/contacts-type", acct: &acct}).
		expect(t, 401, `{"status":"failed","errors":"The account is disabled."}`)
	if err := d.SetDisabled(context.Background(), acct.id, false); err != nil {
		t.Fatal(err)
	}
	if got := a.do(req{method: "GET", path: "/api/contacts-type", acct: &acct}); got.code != 200 {
		t.Errorf("enabled again: %d %s", got.code, got.body)
	}
}
