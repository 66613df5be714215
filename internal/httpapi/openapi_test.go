package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/httpapi"
)

// The API's description (docs/api.md) is checked against itself, the
// router and the answers of the real handlers.

const openAPIFile = "openapi/openapi.json"

// openAPIMethods are the methods an OpenAPI path item can hold.
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// pathParamRE finds a path's parameters: /o/{list}/{token}.
var pathParamRE = regexp.MustCompile(`\{([^}]+)\}`)

// openAPIDoc is the checked-in document, decoded.
type openAPIDoc struct {
	raw  []byte
	root map[string]any
}

func loadOpenAPI(t *testing.T) *openAPIDoc {
	t.Helper()
	raw, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("%s is not JSON: %v", openAPIFile, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("%s: data after the document", openAPIFile)
	}
	return &openAPIDoc{raw: raw, root: root}
}

// resolve follows a local $ref ("#/components/schemas/X").
func (d *openAPIDoc) resolve(ref string) (any, bool) {
	rest, local := strings.CutPrefix(ref, "#/")
	if !local {
		return nil, false
	}
	var v any = d.root
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return v, true
}

// deref follows o's $ref, if it has one, to the object it names.
func (d *openAPIDoc) deref(o any) map[string]any {
	m, _ := o.(map[string]any)
	for range 32 {
		ref, isRef := m["$ref"].(string)
		if !isRef {
			break
		}
		v, _ := d.resolve(ref)
		m, _ = v.(map[string]any)
	}
	return m
}

// operation is one method of one path of the document.
type operation struct {
	method, path string          // "get", "/api/contacts/list"
	item, op     map[string]any  // the path item and the operation
	rawOp        json.RawMessage // the operation as written
}

// operations lists the document's operations, by path then method.
func (d *openAPIDoc) operations(t *testing.T) []operation {
	t.Helper()
	var rawPaths map[string]map[string]json.RawMessage
	var top struct {
		Paths json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(d.raw, &top); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(top.Paths, &rawPaths); err != nil {
		t.Fatal(err)
	}
	paths, _ := d.root["paths"].(map[string]any)
	if len(paths) == 0 {
		t.Fatal("the document has no paths")
	}
	var out []operation
	for path, v := range paths {
		item := d.deref(v)
		if item == nil {
			t.Errorf("path %s: not a path item (or its $ref does not resolve)", path)
			continue
		}
		for _, m := range openAPIMethods {
			if op, ok := item[m].(map[string]any); ok {
				out = append(out, operation{method: m, path: path, item: item, op: op, rawOp: rawPaths[path][m]})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].path != out[j].path {
			return out[i].path < out[j].path
		}
		return out[i].method < out[j].method
	})
	return out
}

// keyed says whether the operation needs the account's keys: it has no
// security of its own, so the document's (PublicKey and SecretKey) applies.
func (o operation) keyed() bool {
	_, own := o.op["security"]
	return !own
}

// The document parses, is OpenAPI 3.1, every $ref resolves, every
// operation has a response, operation ids are unique, path parameters
// are declared, and exactly the /api operations but the document itself
// need the keys.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	if v := d.root["openapi"]; v != "3.1.0" {
		t.Errorf(`"openapi": %v, want "3.1.0"`, v)
	}
	var walk func(at string, v any)
	refs := 0
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				refs++
				if _, ok := d.resolve(ref); !ok {
					t.Errorf("%s: $ref %q does not resolve", at, ref)
				}
			}
			for k, x := range v {
				walk(at+"/"+k, x)
			}
		case []any:
			for _, x := range v {
				walk(at+"[]", x)
			}
		}
	}
	walk("#", d.root)
	if refs == 0 {
		t.Error("no $ref found: the walk is broken")
	}

	global, _ := d.root["security"].([]any)
	if len(global) != 1 || len(global[0].(map[string]any)) != 2 {
		t.Errorf("document security %v: want PublicKey and SecretKey together", global)
	}
	ids := map[string]string{}
	for _, o := range d.operations(t) {
		name := strings.ToUpper(o.method) + " " + o.path
		if rs, _ := o.op["responses"].(map[string]any); len(rs) == 0 {
			t.Errorf("%s: no response", name)
		}
		if id, ok := o.op["operationId"].(string); ok {
			if other, dup := ids[id]; dup {
				t.Errorf("%s: operationId %q is also %s's", name, id, other)
			}
			ids[id] = name
		}
		declared := map[string]bool{}
		for _, list := range []any{o.item["parameters"], o.op["parameters"]} {
			ps, _ := list.([]any)
			for _, p := range ps {
				if p := d.deref(p); p["in"] == "path" {
					declared[p["name"].(string)] = true
				}
			}
		}
		for _, m := range pathParamRE.FindAllStringSubmatch(o.path, -1) {
			if !declared[m[1]] {
				t.Errorf("%s: path parameter %s not declared", name, m[1])
			}
			delete(declared, m[1])
		}
		for p := range declared {
			t.Errorf("%s: path parameter %s is not in the path", name, p)
		}
		if want := strings.HasPrefix(o.path, "/api/") && o.path != "/api/openapi.json"; o.keyed() != want {
			t.Errorf("%s: needs the keys %v, want %v", name, o.keyed(), want)
		}
	}
}

// openAPIPath is a gin route's path as OpenAPI writes it: /o/:list/:token is
// /o/{list}/{token}, /monitoring/*path is /monitoring/{path}.
func openAPIPath(ginPath string) string {
	return ginParamRE.ReplaceAllString(ginPath, "{$1}")
}

var ginParamRE = regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)

// Every route of the router is in the document and the document has no
// route the router lacks. Monitoring is configured, so its routes count.
func TestOpenAPIMatchesTheRouter(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 10, MonitoringUser: "ops", MonitoringPassword: "pw"},
		httpapi.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Monitoring: http.NotFoundHandler()})
	routes := h.(*gin.Engine).Routes()
	if len(routes) < 50 {
		t.Fatalf("%d routes: the router was not built whole", len(routes))
	}
	inRouter := map[string]bool{}
	for _, r := range routes {
		if r.Method == http.MethodConnect {
			continue // /monitoring takes any method; OpenAPI cannot describe CONNECT
		}
		inRouter[strings.ToLower(r.Method)+" "+openAPIPath(r.Path)] = true
	}
	inDoc := map[string]bool{}
	for _, o := range d.operations(t) {
		inDoc[o.method+" "+o.path] = true
	}
	var missing, extra []string
	for k := range inRouter {
		if !inDoc[k] {
			missing = append(missing, k)
		}
	}
	for k := range inDoc {
		if !inRouter[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from %s (add them):\n  %s", openAPIFile, strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("operations of %s the router lacks (remove them, or add the route):\n  %s", openAPIFile, strings.Join(extra, "\n  "))
	}
}

// Each operation's "empty" 422 example is exactly what the operation
// answers when called with the keys, no query and an empty body; its 404
// (Record Not Found or Record not found) is what it answers for an id or
// utr of no record, where that alone reaches the lookup; every operation
// that needs the keys answers their 401 without them, and the others
// answer without keys.
func TestOpenAPIExamplesAreAnswers(t *testing.T) {
	t.Parallel()
	d := loadOpenAPI(t)
	a := newAPI(t)
	acct := a.account()
	empties, notFounds := 0, 0
	for _, o := range d.operations(t) {
		name := strings.ToUpper(o.method) + " " + o.path
		path := pathParamRE.ReplaceAllString(o.path, "x")
		if strings.HasPrefix(o.path, "/monitoring") {
			continue // asynqmon's own; TestMonitoringNeedsBasicAuth
		}
		var body any
		if _, ok := o.op["requestBody"]; ok {
			body = jsonBody("{}")
		}
		rs, _ := o.op["responses"].(map[string]any)

		got := a.do(req{method: strings.ToUpper(o.method), path: path, body: body})
		missingKeys := `{"status":"failed","errors":{"PublicKey":["The public key field is required."],"SecretKey":["The secret key field is required."]}}`
		switch {
		case o.keyed() && (got.code != 401 || got.body != missingKeys):
			t.Errorf("%s without keys: %d %s, want the 401 of missing keys", name, got.code, got.body)
		case o.keyed() && rs["401"] == nil:
			t.Errorf("%s: the 401 is not documented", name)
		case !o.keyed() && got.code == 401:
			t.Errorf("%s without keys: %d %s, documented as needing none", name, got.code, got.body)
		}

		if want := exampleValue(t, o.rawOp, "responses", "422", "content", "application/json", "examples", "empty", "value"); want != nil {
			empties++
			got = a.do(req{method: strings.ToUpper(o.method), path: path, acct: &acct, body: body})
			if got.code != 422 || got.body != string(want) {
				t.Errorf("%s, empty: got %d %s\nthe document's example: 422 %s", name, got.code, got.body, want)
			}
		}

		if rs["404"] == nil || !o.keyed() {
			continue
		}
		r, ok := unknownRecord(d, o)
		if !ok {
			continue // the lookup needs a valid body first
		}
		wording, _ := dig(d.deref(rs["404"]), "content", "application/json", "example", "errors").(string)
		if wording != "Record Not Found" && wording != "Record not found" {
			t.Errorf("%s: the documented 404 says %q", name, wording)
		}
		notFounds++
		r.acct = &acct
		want := `{"status":"failed","errors":"` + wording + `"}`
		if got := a.do(r); got.code != 404 || got.body != want {
			t.Errorf("%s %s, no such record: got %d %s, the document says 404 %s", r.method, r.path, got.code, got.body, want)
		}
	}
	if empties < 50 || notFounds < 30 {
		t.Errorf("only %d operations have an empty-request example, %d a checked 404", empties, notFounds)
	}
}

// unknownRecord is a request of o naming no record of the account: its id
// and utr query parameters set to ids of nothing, a bulk delete's strIds
// too; false when o takes another body (whose fields are checked before
// the lookup).
func unknownRecord(d *openAPIDoc, o operation) (req, bool) {
	r := req{method: strings.ToUpper(o.method), path: o.path}
	q := url.Values{}
	ps, _ := o.op["parameters"].([]any)
	for _, p := range ps {
		p := d.deref(p)
		if p["in"] != "query" {
			continue
		}
		switch name := p["name"].(string); {
		case name == "utr":
			q.Set(name, "6f1c1a7e-0000-4000-8000-000000000000")
		case name == "id" || name == "groupId" || strings.HasSuffix(name, "_id") && p["required"] == true:
			q.Set(name, "999999999")
		}
	}
	if len(q) > 0 {
		r.path += "?" + q.Encode()
	}
	if rb, ok := o.op["requestBody"].(map[string]any); ok {
		switch rb["$ref"] {
		case "#/components/requestBodies/BulkDeleteInput":
			r.body = jsonBody(`{"strIds":[999999999]}`)
		default:
			if d.deref(rb)["required"] != false {
				return r, false
			}
			r.body = jsonBody("{}")
		}
	}
	return r, len(q) > 0 || r.body != nil
}

// dig follows keys down nested objects; nil when one is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// exampleValue is the compacted JSON at keys under raw, or nil.
func exampleValue(t *testing.T, raw json.RawMessage, keys ...string) []byte {
	t.Helper()
	for _, k := range keys {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		if raw = m[k]; raw == nil {
			return nil
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// GET /api/openapi.json needs no keys and answers the checked-in file, with
// an ETag.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	file, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	res := getPublic("/api/openapi.json")
	if res.Code != 200 || res.Header().Get("Content-Type") != "application/json; charset=utf-8" || !bytes.Equal(res.Body.Bytes(), file) {
		t.Fatalf("GET /api/openapi.json: %d %q, %d bytes (the file has %d)", res.Code, res.Header().Get("Content-Type"), res.Body.Len(), len(file))
	}
	etag := res.Header().Get("ETag")
	if etag == "" || res.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("ETag %q, Cache-Control %q", etag, res.Header().Get("Cache-Control"))
	}
	if res := getPublic("/api/openapi.json", "If-None-Match", etag); res.Code != 304 || res.Body.Len() != 0 {
		t.Errorf("If-None-Match: %d %q", res.Code, res.Body)
	}
}

// getPublic GETs path from a router without a database (header: name,
// value, …).
func getPublic(path string, header ...string) *httptest.ResponseRecorder {
	h := httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 10}, httpapi.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	r := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// GET /docs is the embedded page, its one script and style allowed by hash
// and nothing loaded from elsewhere (internal/e2e opens it in Chromium).
func TestDocsPageServed(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("openapi/docs.html")
	if err != nil {
		t.Fatal(err)
	}
	res := getPublic("/docs")
	if res.Code != 200 || res.Header().Get("Content-Type") != "text/html; charset=utf-8" || !bytes.Equal(res.Body.Bytes(), page) {
		t.Fatalf("GET /docs: %d %q", res.Code, res.Header().Get("Content-Type"))
	}
	hash := func(tag string) string {
		m := regexp.MustCompile(`(?s)<` + tag + `>(.*?)</` + tag + `>`).FindSubmatch(page)
		if m == nil {
			t.Fatalf("no <%s> in docs.html", tag)
		}
		sum := sha256.Sum256(m[1])
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	want := "default-src 'none'; script-src " + hash("script") + "; style-src " + hash("style") +
		"; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	if csp := res.Header().Get("Content-Security-Policy"); csp != want {
		t.Errorf("CSP %q\nwant %q", csp, want)
	}
	if n := strings.Count(string(page), "<script"); n != 1 || regexp.MustCompile(`(?i)\b(src|href)=["']?(https?:)?//`).Match(page) {
		t.Errorf("docs.html: %d scripts, or a remote resource", n)
	}
}
