package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// contentTypes are the encodings FuzzReadForm picks from.
var contentTypes = []string{
	"application/json",
	"application/x-www-form-urlencoded",
	"multipart/form-data; boundary=B",
	"text/plain",
}

// FuzzReadForm feeds the binder any body in any encoding: it never
// panics, what it accepts is UTF-8 text without NUL whose ids are
// positive, and it holds no more than its budget allows.
func FuzzReadForm(f *testing.F) {
	for _, seed := range []struct {
		ct   uint8
		body string
	}{
		{0, `{"strIds":[1,"2",3],"name":"x","custom_field":{"age":4},"value":[["a","b"],"c"]}`},
		{0, `{"strIds":true}`},
		{0, `{"strIds":{"0":1}}`},
		{0, `{"a":[[[[[[[[1]]]]]]]]}`},
		{0, `{"a":"\ud800"}`},
		{0, `{"a":[1,null,{"b":[2]}],"c":null}`},
		{1, "strIds%5B0%5D=1&strIds%5B1%5D=2&name=x"},
		{1, "strIds=5&strIds[a]=1&value[0][]=a&value[0][]=b"},
		{1, "a=%zz"},
		{2, "--B\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx\r\n--B--\r\n"},
		{2, "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\r\nemail\r\n--B--"},
		{2, "--B\r\nContent-Disposition: form-da"},
		{3, "anything"},
	} {
		f.Add(seed.ct, []byte(seed.body))
	}
	gin.SetMode(gin.ReleaseMode)
	f.Fuzz(func(t *testing.T, ct uint8, body []byte) {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest("POST", "/x?q=1", strings.NewReader(string(body)))
		c.Request.Header.Set("Content-Type", contentTypes[int(ct)%len(contentTypes)])
		form, err := readForm(c)
		if err != nil {
			return
		}
		size := 0
		for k, vs := range form.vals {
			size += len(k) + 64
			for _, v := range vs {
				size += len(v) + 16
				if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
					t.Fatalf("accepted %q = %q", k, v)
				}
			}
		}
		for k := range form.deep {
			size += len(k) + 64
		}
		if size > 16*len(body)+64<<10+1000 { // the query string's "q=1" is extra
			t.Fatalf("%d bytes of values for a %d-byte body", size, len(body))
		}
		if ids, err := form.ids("strIds"); err == nil {
			for _, id := range ids {
				if id <= 0 {
					t.Fatalf("id %d accepted", id)
				}
			}
		}
		form.list("value")
		form.nested("value")
		form.dict("custom_field")
		form.str("name")
	})
}
