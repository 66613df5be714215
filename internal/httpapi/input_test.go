package httpapi

import (
	"bytes"
	"mime/multipart"
	"net/http/httptest"
	"net/url"
	"reflect"
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

func TestFormListForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    form
		want []string
	}{
		{"indexed, out of order", form{"strIds[10]": {"c"}, "strIds[2]": {"b"}, "strIds[0]": {"a"}}, []string{"a", "b", "c"}},
		{"brackets", form{"strIds[]": {"a", "b"}}, []string{"a", "b"}},
		{"repeated", form{"strIds": {"a", "b"}}, []string{"a", "b"}},
		{"absent", form{"other": {"x"}}, nil},
	}
	for _, tt := range tests {
		if got := tt.f.list("strIds"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: list = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestFormIDs(t *testing.T) {
	t.Parallel()
	for _, f := range []form{{"strIds[0]": {"1"}, "strIds[1]": {"x"}}, {"strIds[]": {"-1"}}, {"strIds": {"1.5"}}} {
		if _, err := f.ids("strIds"); err == nil || err.Error() != "mail: invalid: [strIds]" {
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
