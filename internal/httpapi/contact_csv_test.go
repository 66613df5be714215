package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/testdb"
)

type storedContact struct {
	email, first, last, city string
	country                  *int32
	custom                   string
}

// storedContacts reads acct's live contacts of a type, by address.
func storedContacts(t *testing.T, acct account, typ int64) map[string]storedContact {
	t.Helper()
	rows, err := testdb.New(t).Pool.Query(context.Background(), `SELECT email, first_name, last_name, city, country, custom::text
		FROM contacts WHERE user_id = $1 AND contact_type_id = $2 AND deleted_at IS NULL`, acct.id, typ)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]storedContact{}
	for rows.Next() {
		var c storedContact
		if err := rows.Scan(&c.email, &c.first, &c.last, &c.city, &c.country, &c.custom); err != nil {
			t.Fatal(err)
		}
		out[strings.ToLower(c.email)] = c
	}
	return out
}

func upload(a *api, acct account, typ int64, content string) response {
	return a.do(req{method: "POST", path: "/api/contacts/upload-csv", acct: &acct, body: fileBody{
		fields: map[string]string{"contact_type_id": fmt.Sprint(typ)}, filename: "contacts.csv", content: content}})
}

const imported = `{"status":"success","message":"Imported Successfully"}`

func TestCSVImport(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Newsletter")
	seedField(t, acct, "Age", "number")
	seedField(t, acct, "joined", "datetime-local")
	// An existing contact: the file updates it, and keeps what it lacks.
	a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
		"contact_type_id": {fmt.Sprint(typ)}, "email": {"old@example.com"}, "country": {"276"},
		"first_name": {"Old"}, "last_name": {"Timer"}, "city": {"Bonn"}, "custom_field[joined]": {"2020-01-01T00:00"}}}).
		expect(t, 200, `{"status":"success","message":"Contact Added Successfully"}`)

	file := "\xEF\xBB\xBFEmail,First_Name,LAST_NAME,Country,age\r\n" +
		"ann@example.com,Ann,\"Smith, Jr.\",DE,30\r\n" +
		"\"bob@example.com\",Bob,\"Say \"\"Hi\"\"\",United States,\r\n" +
		"not-an-address,X,Y,DE,1\r\n" +
		",Nobody,,,\r\n" +
		"OLD@example.com,Older,,40,77\r\n" +
		"ann@example.com,Annie,Smith,276,31\r\n"
	upload(a, acct, typ, file).expect(t, 200, imported)

	got := storedContacts(t, acct, typ)
	if len(got) != 3 {
		t.Fatalf("%d contacts: %+v", len(got), got)
	}
	de, us, at := int32(276), int32(840), int32(40)
	for email, want := range map[string]storedContact{
		"ann@example.com": {email: "ann@example.com", first: "Annie", last: "Smith", country: &de, custom: `{"Age": 31}`},
		"bob@example.com": {email: "bob@example.com", first: "Bob", last: `Say "Hi"`, country: &us, custom: `{}`},
		"old@example.com": {email: "OLD@example.com", first: "Older", last: "", city: "Bonn", country: &at, custom: `{"Age": 77, "joined": "2020-01-01T00:00"}`},
	} {
		g := got[email]
		if g.email != want.email || g.first != want.first || g.last != want.last || g.city != want.city ||
			g.country == nil || *g.country != *want.country || g.custom != want.custom {
			t.Errorf("%s: got %+v (country %v), want %+v", email, g, g.country, want)
		}
	}
	var kind, payload string
	err := testdb.New(t).Pool.QueryRow(context.Background(),
		"SELECT kind, payload::text FROM events WHERE user_id = $1 AND subject_id = $2", acct.id, typ).Scan(&kind, &payload)
	if err != nil || kind != "contacts.imported" || payload != `{"rows": 6, "added": 2, "skipped": 2, "updated": 1}` {
		t.Fatalf("event: %v %s %s", err, kind, payload)
	}
}

// The file may come before contact_type_id in the multipart body.
func TestCSVImportFileFirst(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	a.do(req{method: "POST", path: "/api/contacts/upload-csv", acct: &acct, body: fileBody{
		fields: map[string]string{"contact_type_id": fmt.Sprint(typ)}, filename: "x.CSV", content: "email\na@example.com\n", fileFirst: true}}).
		expect(t, 200, imported)
	if got := storedContacts(t, acct, typ); len(got) != 1 {
		t.Fatalf("%+v", got)
	}
}

func TestCSVImportRefusals(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	seedField(t, acct, "age", "number")
	other := a.account()
	otherType := seedType(t, other, "Theirs")
	fileErr := func(msg string) string { return `{"status":"failed","errors":{"file":["` + msg + `"]}}` }
	tests := []struct {
		name, content, want string
	}{
		{"empty", "", fileErr("The file is empty.")},
		{"header only", "email,first_name\r\n", fileErr("The file has a header but no rows.")},
		{"ragged row", "email,first_name\na@example.com,A\nb@example.com\n", fileErr("Line 3 has a different number of fields than the header.")},
		{"bad quoting", "email,first_name\na@example.com,\"A\nb@example.com,B\n", fileErr("Line 2: a quote is misplaced or not closed.")},
		{"bare quote", "email,first_name\na@example.com,A\"B\n", fileErr("Line 2: a quote is misplaced or not closed.")},
		{"not utf-8", "email,first_name\na@example.com,\xff\xfe\n", fileErr("Line 2 is not valid UTF-8.")},
		{"unknown column", "email,shoe_size\na@example.com,9\n", fileErr(`Line 1: the column \"shoe_size\" is neither a reserved field nor one of your custom fields.`)},
		{"duplicate column", "email,Email\na@example.com,b@example.com\n", fileErr(`Line 1: the column \"Email\" appears twice.`)},
		{"no email column", "first_name\nAnn\n", fileErr("Line 1: the file has no email column.")},
		{"unknown country", "email,country\na@example.com,DE\nb@example.com,Narnia\n", fileErr(`Line 3: the country \"Narnia\" is not a known country id, ISO 3166-1 alpha-2 code or name.`)},
		{"bad number", "email,age\na@example.com,old\n", fileErr("Line 2: The age must be a number.")},
		{"bad alt email", "email,alt_email\na@example.com,nope\n", fileErr(`Line 2: the alt_email \"nope\" is not a valid email address.`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upload(a, acct, typ, tt.content).expect(t, 422, tt.want)
		})
	}
	a.do(req{method: "POST", path: "/api/contacts/upload-csv", acct: &acct, body: fileBody{
		fields: map[string]string{"contact_type_id": fmt.Sprint(typ)}, filename: "contacts.txt", content: "email\na@example.com\n"}}).
		expect(t, 422, fileErr("The file must be a file of type: csv."))
	a.do(req{method: "POST", path: "/api/contacts/upload-csv", acct: &acct, body: fileBody{fields: map[string]string{}}}).
		expect(t, 422, `{"status":"failed","errors":{"contact_type_id":["The contact type id field is required."],"file":["The file field is required."]}}`)
	a.do(req{method: "POST", path: "/api/contacts/upload-csv", acct: &acct, body: url.Values{}}).
		expect(t, 422, `{"status":"failed","errors":{"contact_type_id":["The contact type id field is required."],"file":["The file field is required."]}}`)
	upload(a, acct, otherType, "email\na@example.com\n").
		expect(t, 422, `{"status":"failed","errors":{"contact_type_id":["The selected contact type id is invalid."]}}`)
	a.do(req{method: "POST", path: "/api/contacts/upload-csv", acct: &acct, body: fileBody{
		fields: map[string]string{"contact_type_id": fmt.Sprint(otherType)}, filename: "c.csv", content: "email\na@example.com\n", fileFirst: true}}).
		expect(t, 422, `{"status":"failed","errors":{"contact_type_id":["The selected contact type id is invalid."]}}`)

	var n int
	testdb.New(t).Pool.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM contacts WHERE user_id = $1) + (SELECT count(*) FROM events WHERE user_id = $1)", acct.id).Scan(&n)
	if n != 0 {
		t.Fatalf("refused imports wrote %d rows", n)
	}
}

// 10,000 rows in, 10,000 contacts out through the list endpoint.
func TestCSVImportRoundTrip(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Bulk")
	seedField(t, acct, "score", "number")
	var b strings.Builder
	b.WriteString("email,first_name,score\n")
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&b, "user%05d@example.com,User %d,%d\n", i, i, i)
	}
	upload(a, acct, typ, b.String()).expect(t, 200, imported)
	r := a.do(req{method: "GET", path: "/api/contacts/list", acct: &acct})
	if r.code != 200 || strings.Count(r.body, `"contact_type":{`) != 10000 ||
		!strings.Contains(r.body, `"first_name":"User 9999","last_name":"","email":"user09999@example.com"`) ||
		!strings.Contains(r.body, `"custom_field":{"score":{"field_name":"score","field_value":"9999"}}`) {
		t.Fatalf("list after import: %d, %d contacts", r.code, strings.Count(r.body, `"contact_type":{`))
	}
}

func TestCSVSample(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	seedField(t, acct, "age", "number")
	seedField(t, acct, "joined", "datetime-local")
	seedField(t, acct, "nickname", "text")
	r := a.do(req{method: "GET", path: "/api/contacts/csv-sample/download", acct: &acct})
	want := "email,first_name,last_name,alt_email,country,state,city,address_line1,address_line2,state_province_region,postal_code,age,joined,nickname\n" +
		"jane.doe@example.com,Jane,Doe,jane@example.org,US,California,Los Angeles,1 Main Street,Suite 200,CA,90001,42,2026-01-31T09:30,example\n"
	if r.code != 200 || r.body != want || r.header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("got %d %q %q", r.code, r.header.Get("Content-Type"), r.body)
	}
	// The sample imports as it is.
	typ := seedType(t, acct, "Sample")
	upload(a, acct, typ, r.body).expect(t, 200, imported)
}

// Broken uploads are 422s: a record that never ends (an unclosed quote
// would otherwise pull the rest of the file into memory) and a multipart
// body cut short.
func TestCSVImportBrokenUploads(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	typ := seedType(t, acct, "Leads")
	huge := "email,first_name\na@example.com,ok\nb@example.com,\"never closed\n" + strings.Repeat("x", 2<<20) + "\n"
	upload(a, acct, typ, huge).
		expect(t, 422, `{"status":"failed","errors":{"file":["Line 3: a record is longer than 1048576 bytes (is a closing quote missing?)."]}}`)
	cut := "--XYZ\r\nContent-Disposition: form-data; name=\"contact_type_id\"\r\n\r\n" + fmt.Sprint(typ) +
		"\r\n--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\nContent-Type: text/csv\r\n\r\nemail\na@example.com\nb@exa"
	a.do(req{method: "POST", path: "/api/contacts/upload-csv", acct: &acct, body: rawBody{"multipart/form-data; boundary=XYZ", cut}}).
		expect(t, 422, `{"status":"failed","errors":{"file":["The upload is not a well-formed multipart body."]}}`)
	if got := storedContacts(t, acct, typ); len(got) != 0 {
		t.Fatalf("broken uploads wrote %v", got)
	}
}

// Imports into one type and single writers of the same addresses, all at
// once: every request succeeds and each address is one contact.
func TestCSVImportConcurrentWithWriters(t *testing.T) {
	t.Parallel()
	a := newAPIWith(t, httpapi.Config{MaxBodyBytes: 1 << 20, MaxUploadBytes: 64 << 20, MaxImports: 8})
	acct := a.account()
	typ := seedType(t, acct, "Crowded")
	file := func(seed int) string {
		var b strings.Builder
		b.WriteString("email,first_name\n")
		for i := range 2000 {
			fmt.Fprintf(&b, "user%d@example.com,F%d\n", (i*7+seed*300)%3000, seed)
		}
		return b.String()
	}
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for seed := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if r := upload(a, acct, typ, file(seed)); r.code != 200 {
				errs <- fmt.Sprintf("upload %d: %d %s", seed, r.code, r.body)
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 25 {
				r := a.do(req{method: "POST", path: "/api/contacts/add", acct: &acct, body: url.Values{
					"contact_type_id": {fmt.Sprint(typ)}, "email": {fmt.Sprintf("USER%d@example.com", i*97%3000)}, "country": {"276"}}})
				if r.code != 200 {
					errs <- fmt.Sprintf("add: %d %s", r.code, r.body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	var live, distinct int
	if err := testdb.New(t).Pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT email_lc)
		FROM contacts WHERE contact_type_id = $1 AND deleted_at IS NULL`, typ).Scan(&live, &distinct); err != nil {
		t.Fatal(err)
	}
	if live != distinct || live != 3000 {
		t.Fatalf("%d live contacts, %d addresses; want 3000", live, distinct)
	}
}
