package httpapi_test

import "testing"

// The 21 names of interface.md, in its order, for any account.
func TestDynamicContent(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	a.do(req{method: "GET", path: "/api/get-dynamic/content", acct: &acct}).expect(t, 200,
		`{"status":"success","message":{"contents":["first_name","last_name","email","alt_email","country","state","city",`+
			`"address_line1","address_line2","state_province_region","postal_code","full_name","father_name","designation",`+
			`"age","company_name","birth_date","join_date","sender_name","sender_address","unsubscribe_preferences"]}}`)
	a.do(req{method: "GET", path: "/api/get-dynamic/content"}).expect(t, 401,
		`{"status":"failed","errors":{"PublicKey":["The public key field is required."],"SecretKey":["The secret key field is required."]}}`)
}
