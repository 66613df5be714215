package httpapi

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http/httptest"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// The three encodings of the same input read the same.
func TestReadFormEncodings(t *testing.T) {
	t.Parallel()
	urlencoded := url.Values{
		"name":               {" Acme "},
		"strIds[0]":          {"3"},
		"strIds[1]":          {"1"},
		"strIds[2]":          {"2"},
		"custom_field[age]":  {"42"},
		"custom_field[city]": {"Köln"},
		"value[0][0]":        {"a"},
		"value[0][1]":        {"b"},
	}
	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	for k, vs := range urlencoded {
		w.WriteField(k, vs[0])
	}
	w.Close()
	js := `{"name":" Acme ","strIds":[3,1,"2"],"custom_field":{"age":42,"city":"Köln"},"value":[["a","b"]]}`

	cases := map[string]struct{ ct, body string }{
		"urlencoded": {"application/x-www-form-urlencoded", urlencoded.Encode()},
		"multipart":  {w.FormDataContentType(), mp.String()},
		"json":       {"application/json", js},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request = httptest.NewRequest("POST", "/x?extra=1", strings.NewReader(tc.body))
			c.Request.Header.Set("Content-Type", tc.ct)
			f, err := readForm(c)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.str("name"); got != "Acme" {
				t.Errorf("str(name) = %q", got)
			}
			if got := f.list("strIds"); !reflect.DeepEqual(got, []string{"3", "1", "2"}) {
				t.Errorf("list(strIds) = %q", got)
			}
			ids, err := f.ids("strIds")
			if err != nil || !reflect.DeepEqual(ids, []int64{3, 1, 2}) {
				t.Errorf("ids(strIds) = %v, %v", ids, err)
			}
			if got := f.dict("custom_field"); !reflect.DeepEqual(got, map[string]string{"age": "42", "city": "Köln"}) {
				t.Errorf("dict(custom_field) = %q", got)
			}
			if got := f.list("value[0]"); !reflect.DeepEqual(got, []string{"a", "b"}) {
				t.Errorf("list(value[0]) = %q", got)
			}
			if got := f.str("extra"); got != "1" {
				t.Errorf("query value = %q", got)
			}
		})
	}
}

// vf is a form's values, for test tables.
type vf map[string][]string

func TestFormListForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    vf
		want []string
	}{
		{"indexed, out of order", vf{"strIds[10]": {"c"}, "strIds[2]": {"b"}, "strIds[0]": {"a"}}, []string{"a", "b", "c"}},
		{"brackets", vf{"strIds[]": {"a", "b"}}, []string{"a", "b"}},
		{"repeated", vf{"strIds": {"a", "b"}}, []string{"a", "b"}},
		{"absent", vf{"other": {"x"}}, nil},
	}
	for _, tt := range tests {
		if got := (form{vals: tt.f}).list("strIds"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: list = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestFormIDs(t *testing.T) {
	t.Parallel()
	for _, f := range []vf{{"strIds[0]": {"1"}, "strIds[1]": {"x"}}, {"strIds[]": {"-1"}}, {"strIds": {"1.5"}},
		{"strIds": {"5"}}, {"strIds[a]": {"5"}}, {"strIds[0][0]": {"5"}}, {"strIds[0]": {"true"}}, {"strIds[0]": {""}}} {
		if _, err := (form{vals: f}).ids("strIds"); err == nil || err.Error() != "mail: invalid: [strIds]" {
			t.Errorf("ids(%v) err = %v", f, err)
		}
	}
	if _, err := (form{}).ids("strIds"); err == nil {
		t.Error("ids of nothing: no error")
	}
}

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]bool{
		"":                  false,
		"gzip":              true,
		"deflate, gzip;q=1": true,
		"br, GZIP":          true,
		"gzip;q=0":          false,
		"identity":          false,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v", h, got)
		}
	}
}

func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode)
	m.Run()
}

// readForm costs a small multiple of the body in memory, whatever its
// shape, accepted or refused. Not parallel: it reads the process's
// allocation counter.
func TestReadFormMemoryBound(t *testing.T) {
	ids := strings.Repeat("1,", 200000) + "1"
	var pairs, keys strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&pairs, "strIds%%5B%%5D=%d&", i)
		fmt.Fprintf(&keys, "k%d&", i)
	}
	bodies := []struct{ name, ct, body string }{
		{"deep arrays", "application/json", `{"name":` + strings.Repeat("[", 4000) + ids + strings.Repeat("]", 4000) + "}"},
		{"flat ids", "application/json", `{"strIds":[` + ids + `]}`},
		{"nested ids", "application/json", `{"value":[` + strings.Repeat(`["a","b"],`, 40000) + `["a","b"]]}`},
		{"long name, arrays of arrays", "application/json", `{"` + strings.Repeat("n", 50000) + `":[` + strings.Repeat("[1],", 20000) + `[1]]}`},
		{"objects", "application/json", `{"m":{` + strings.Repeat(`"a":1,`, 60000) + `"b":2}}`},
		{"long name, empty objects", "application/json", `{"` + strings.Repeat("a", 100000) + `":{` + emptyMembers(60000) + `}}`},
		{"long name, empty arrays", "application/json", `{"` + strings.Repeat("a", 100000) + `":[` + strings.Repeat("[],", 100000) + `[]]}`},
		{"url-encoded ids", "application/x-www-form-urlencoded", pairs.String()},
		{"url-encoded keys", "application/x-www-form-urlencoded", keys.String()},
	}
	for _, b := range bodies {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest("POST", "/x", strings.NewReader(b.body))
		c.Request.Header.Set("Content-Type", b.ct)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f, err := readForm(c)
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(f)
		retained := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes body, %d retained (%.1fx), %d allocated (%.1fx), err %v", b.name, len(b.body),
			retained, float64(retained)/float64(len(b.body)), allocated, float64(allocated)/float64(len(b.body)), err)
		// What a request keeps is bounded by budgetOf; what it churns
		// through on the way is garbage of a bounded multiple too.
		if limit := int64(24*len(b.body) + 1<<20); retained > limit {
			t.Errorf("%s: %d bytes retained for a %d-byte body", b.name, retained, len(b.body))
		}
		if limit := uint64(200*len(b.body) + 1<<20); allocated > limit {
			t.Errorf("%s: %d bytes allocated for a %d-byte body", b.name, allocated, len(b.body))
		}
	}
}

// emptyMembers is n object members "0":{}, "1":{}, ….
func emptyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":{}`, i)
	}
	return b.String()
}
