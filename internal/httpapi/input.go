package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// form is a request's input, whatever its encoding: multipart form data,
// url-encoded form data, JSON, and the query string. JSON is flattened to
// form keys ({"strIds":[1,2]} is strIds[0]=1, strIds[1]=2; {"m":{"k":"v"}}
// is m[k]=v), so one set of accessors reads all three encodings. Body
// values come before query values.
type form map[string][]string

// maxMemory is what a multipart form keeps in memory before spilling files
// to disk; bodies are capped separately by MaxBodyBytes.
const maxMemory = 8 << 20

// readForm parses c's query string and body into a form.
func readForm(c *gin.Context) (form, error) {
	f := form{}
	ct, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	switch {
	case ct == "application/json":
		body, err := io.ReadAll(c.Request.Body)
		if err != nil {
			return nil, bodyError(err)
		}
		if len(bytes.TrimSpace(body)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, mail.Invalid("body", "The request body is not valid JSON.")
			}
			obj, isObj := v.(map[string]any)
			if !isObj {
				return nil, mail.Invalid("body", "The request body must be a JSON object.")
			}
			for k, val := range obj {
				flatten(f, k, val)
			}
		}
	case ct == "multipart/form-data":
		if err := c.Request.ParseMultipartForm(maxMemory); err != nil {
			return nil, bodyError(err)
		}
		for k, vs := range c.Request.MultipartForm.Value {
			f[k] = append(f[k], vs...)
		}
	case ct == "application/x-www-form-urlencoded":
		if err := c.Request.ParseForm(); err != nil {
			return nil, bodyError(err)
		}
		for k, vs := range c.Request.PostForm {
			f[k] = append(f[k], vs...)
		}
	}
	for k, vs := range c.Request.URL.Query() {
		f[k] = append(f[k], vs...)
	}
	return f, f.checkText()
}

// checkText refuses values PostgreSQL cannot store as text: invalid UTF-8
// and NUL characters.
func (f form) checkText() error {
	var p mail.Problems
	for k, vs := range f {
		for _, v := range vs {
			if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
				name := strings.NewReplacer("][", ".", "[", ".", "]", "").Replace(k)
				p.Add(name, "The "+mail.Label(name)+" must be UTF-8 text without NUL characters.")
				break
			}
		}
	}
	return p.Err()
}

func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return mail.Invalid("body", fmt.Sprintf("The request body may not be larger than %d bytes.", tooBig.Limit))
	}
	return mail.Invalid("body", "The request body could not be read.")
}

func flatten(f form, key string, v any) {
	switch v := v.(type) {
	case nil:
		// JSON null: absent.
	case map[string]any:
		for k, x := range v {
			flatten(f, key+"["+k+"]", x)
		}
	case []any:
		for i, x := range v {
			flatten(f, key+"["+strconv.Itoa(i)+"]", x)
		}
	case string:
		f[key] = append(f[key], v)
	case json.Number:
		f[key] = append(f[key], v.String())
	case bool:
		if v {
			f[key] = append(f[key], "1")
		} else {
			f[key] = append(f[key], "0")
		}
	}
}

// str returns key's first value, trimmed ("" when absent).
func (f form) str(key string) string {
	if vs := f[key]; len(vs) > 0 {
		return strings.TrimSpace(vs[0])
	}
	return ""
}

// list returns the array sent as key[0], key[1]… (ordered by index),
// key[] or repeated key.
func (f form) list(key string) []string {
	type item struct {
		i int
		v string
	}
	var items []item
	prefix := key + "["
	for k, vs := range f {
		if !strings.HasPrefix(k, prefix) || !strings.HasSuffix(k, "]") {
			continue
		}
		inner := k[len(prefix) : len(k)-1]
		if strings.ContainsAny(inner, "[]") {
			continue // nested: see nested
		}
		if inner == "" {
			for _, v := range vs {
				items = append(items, item{1 << 30, v})
			}
			continue
		}
		n, err := strconv.Atoi(inner)
		if err != nil {
			continue
		}
		for _, v := range vs {
			items = append(items, item{n, v})
		}
	}
	if len(items) == 0 {
		return f[key]
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].i < items[b].i })
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.v
	}
	return out
}

// dict returns the map sent as key[name]=value.
func (f form) dict(key string) map[string]string {
	prefix := key + "["
	out := map[string]string{}
	for k, vs := range f {
		if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, "]") && len(vs) > 0 {
			name := k[len(prefix) : len(k)-1]
			if !strings.ContainsAny(name, "[]") {
				out[name] = vs[0]
			}
		}
	}
	return out
}

// ids parses key's array of record ids; an element that is not a positive
// integer is a validation failure.
func (f form) ids(key string) ([]int64, error) {
	vals := f.list(key)
	if len(vals) == 0 {
		return nil, mail.Invalid(key, mail.RequiredMessage(key))
	}
	out := make([]int64, 0, len(vals))
	for _, v := range vals {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			return nil, mail.Invalid(key, fmt.Sprintf("The %s must be an array of integers.", mail.Label(key)))
		}
		out = append(out, n)
	}
	return out, nil
}

// queryID reads a required positive integer id from the query string.
func queryID(c *gin.Context, key string) (int64, error) {
	return parseID(key, c.Query(key))
}

// parseID parses a required positive integer id named key.
func parseID(key, v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, mail.Invalid(key, mail.RequiredMessage(key))
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, mail.Invalid(key, fmt.Sprintf("The %s must be an integer.", mail.Label(key)))
	}
	return n, nil
}

// nested returns the array of arrays sent as key[i] or key[i][j] (an
// element may be a plain value or an array of values), or as key[] /
// repeated key with one value per element.
func (f form) nested(key string) [][]string {
	type cell struct{ i, j int }
	cells := map[cell]string{}
	maxI := -1
	prefix := key + "["
	for k, vs := range f {
		if !strings.HasPrefix(k, prefix) || len(vs) == 0 {
			continue
		}
		rest := k[len(prefix):]
		is, rest, ok := strings.Cut(rest, "]")
		i, err := strconv.Atoi(is)
		if !ok || err != nil || i < 0 || i > 10000 {
			continue
		}
		j := -1
		if rest != "" {
			js, tail, ok := strings.Cut(strings.TrimPrefix(rest, "["), "]")
			n, err := strconv.Atoi(js)
			if !ok || tail != "" || !strings.HasPrefix(rest, "[") || err != nil || n < 0 || n > 100 {
				continue
			}
			j = n
		}
		cells[cell{i, j}] = vs[0]
		if i > maxI {
			maxI = i
		}
	}
	if maxI < 0 {
		flat := f.list(key)
		out := make([][]string, len(flat))
		for i, v := range flat {
			out[i] = []string{v}
		}
		return out
	}
	out := make([][]string, maxI+1)
	for i := range out {
		if v, ok := cells[cell{i, -1}]; ok {
			out[i] = []string{v}
			continue
		}
		for j := 0; ; j++ {
			v, ok := cells[cell{i, j}]
			if !ok {
				break
			}
			out[i] = append(out[i], v)
		}
	}
	return out
}
