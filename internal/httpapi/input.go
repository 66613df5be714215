package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
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
// is m[k]=v; true and false are "true" and "false"), so one set of
// accessors reads all three encodings. Body values come before query
// values.
type form struct {
	vals map[string][]string
	// deep are the keys whose JSON value was an object, or an array
	// holding an array or an object, so that ids can tell
	// {"strIds":{"0":1}} and {"strIds":[1,{}]} from an array of ids.
	deep map[string]bool
	// composite are the names sent as an array or an object: a JSON
	// object member whose value is one (even empty), and the part before
	// the first bracket of every key[…] (key[], key[0], key[a]) of a form,
	// a flattened JSON body or the query string.
	composite map[string]bool
	// shaped are the scalar fields read (str, raw, scalar, dict) that came
	// as an array or object, in the order read: checked refuses them.
	shaped *shapeLog
}

// shapeLog lists fields read as scalars that were sent as arrays or
// objects, with what each is told.
type shapeLog struct {
	fields []string
	msgs   map[string]string
}

func newForm() form {
	return form{vals: map[string][]string{}, deep: map[string]bool{}, composite: map[string]bool{}, shaped: &shapeLog{}}
}

// Limits on what a body may make the binder build (see docs/limits.md):
// maxMemory is what one multipart value may hold (valueCap: less for the
// fields whose own limit is less); maxDepth is how deep
// JSON may nest (value[i][j] is three levels); and what the values and
// their keys cost in memory may not pass a small multiple of the body
// (budgetOf), so a request never costs much more than its size.
const (
	maxMemory = 8 << 20
	maxDepth  = 8
)

// budget is the memory a body's values may take: each new key costs its
// length and a map entry, each value its length and a string header.
type budget struct{ left int }

func budgetOf(body int) *budget { return &budget{left: 16*body + 64<<10} }

// charge takes n bytes from the budget.
func (b *budget) charge(n int) error {
	if b.left -= n; b.left < 0 {
		return errTooMany
	}
	return nil
}

// add appends v to key's values, charging the budget.
func (b *budget) add(f form, key, v string) error {
	vs, seen := f.vals[key]
	if !seen {
		b.left -= len(key) + 64
	}
	if b.left -= len(v) + 16; b.left < 0 {
		return errTooMany
	}
	f.vals[key] = append(vs, v)
	return nil
}

var (
	errDepth      = mail.Invalid("body", fmt.Sprintf("The request body may not nest more than %d levels deep.", maxDepth))
	errTooMany    = mail.Invalid("body", "The request body holds too many fields for its size.")
	errNotUTF8    = mail.Invalid("body", "The request body must be UTF-8 text.")
	errBrackets   = mail.Invalid("body", "The request body's field names may not contain brackets.")
	errNotJSON    = mail.Invalid("body", "The request body is not valid JSON.")
	errNotObject  = mail.Invalid("body", "The request body must be a JSON object.")
	errMultipart  = mail.Invalid("body", "The request body is not a well-formed multipart body.")
	errURLEncoded = mail.Invalid("body", "The request body is not well-formed url-encoded form data.")
)

// readForm parses c's query string and body into a form.
func readForm(c *gin.Context) (form, error) {
	f := newForm()
	ct, params, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	var err error
	switch ct {
	case "application/json":
		err = f.readJSON(c.Request.Body)
	case "multipart/form-data":
		err = f.readMultipart(c.Request.Body, params["boundary"])
	case "application/x-www-form-urlencoded":
		err = f.readURLEncoded(c.Request.Body)
	}
	if err != nil {
		return f, err
	}
	for k, vs := range c.Request.URL.Query() {
		f.vals[k] = append(f.vals[k], vs...)
	}
	for k := range f.vals {
		if i := strings.IndexByte(k, '['); i > 0 {
			f.composite[k[:i]] = true
		}
	}
	return f, f.checkText()
}

// readJSON reads a JSON object, walking its tokens so that nesting and
// the flattened keys are bounded before anything is built. An array of
// scalars becomes one key[] list, so an array's elements cost no key each.
func (f form) readJSON(r io.Reader) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return bodyError(err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if !utf8.Valid(body) || loneSurrogate(body) {
		return errNotUTF8
	}
	w := jsonWalk{f: f, dec: json.NewDecoder(bytes.NewReader(body)), budget: budgetOf(len(body))}
	w.dec.UseNumber()
	tok, err := w.dec.Token()
	if err != nil {
		return errNotJSON
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errNotObject
	}
	if err := w.object("", 1); err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return errNotJSON // trailing data
	}
	return nil
}

// jsonWalk flattens a JSON body into f.
type jsonWalk struct {
	f      form
	dec    *json.Decoder
	budget *budget
}

// object reads the members of an object whose '{' was read; prefix is its
// key ("" for the body itself).
func (w *jsonWalk) object(prefix string, depth int) error {
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return errNotJSON
		}
		name, _ := tok.(string)
		if strings.ContainsAny(name, "[]") {
			return errBrackets // {"strIds[0]":5} would read as an array
		}
		// Every key built is charged, stored or not: a long name over
		// many empty containers must not cost more than the budget.
		if err := w.budget.charge(len(prefix) + len(name) + 2); err != nil {
			return err
		}
		key := name
		if prefix != "" {
			key = prefix + "[" + name + "]"
		}
		if err := w.value(key, depth); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil { // '}'
		return errNotJSON
	}
	return nil
}

// value reads one value named key, a member of an object at depth (the
// body object is 1). A member that is an array or an object is noted as
// composite (charged: the key is kept), so that a scalar field sent as
// [] or {} is refused rather than read as absent.
func (w *jsonWalk) value(key string, depth int) error {
	tok, err := w.dec.Token()
	if err != nil {
		return errNotJSON
	}
	if _, isDelim := tok.(json.Delim); isDelim && depth < maxDepth {
		if err := w.budget.charge(len(key) + 64); err != nil {
			return err
		}
		w.f.composite[key] = true
	}
	return w.token(key, tok, depth)
}

// token stores the value that starts with tok.
func (w *jsonWalk) token(key string, tok json.Token, depth int) error {
	d, isDelim := tok.(json.Delim)
	switch {
	case !isDelim:
		v, present := scalar(tok)
		if !present && !strings.HasSuffix(key, "]") {
			return nil // a top-level null is absent
		}
		return w.budget.add(w.f, key, v)
	case depth >= maxDepth:
		return errDepth
	case d == '{':
		if err := w.budget.charge(len(key) + 64); err != nil {
			return err
		}
		w.f.deep[key] = true
		return w.object(key, depth+1)
	}
	return w.array(key, depth+1)
}

// array reads an array whose '[' was read: scalars as key[] in order,
// until an element is an array or object; from then on (and for the
// scalars before it) every element is key[i].
func (w *jsonWalk) array(key string, depth int) error {
	indexed := false
	var n int // elements so far
	for ; w.dec.More(); n++ {
		tok, err := w.dec.Token()
		if err != nil {
			return errNotJSON
		}
		_, isDelim := tok.(json.Delim)
		if isDelim {
			if err := w.budget.charge(len(key) + 24); err != nil {
				return err
			}
		}
		if isDelim && !indexed {
			// Move the scalars read so far to key[0]…key[n-1].
			indexed = true
			w.f.deep[key] = true
			list := w.f.vals[key+"[]"]
			delete(w.f.vals, key+"[]")
			for i, v := range list {
				if err := w.budget.add(w.f, key+"["+strconv.Itoa(i)+"]", v); err != nil {
					return err
				}
			}
		}
		if !indexed {
			v, _ := scalar(tok) // null is an empty element
			if err := w.budget.add(w.f, key+"[]", v); err != nil {
				return err
			}
			continue
		}
		if err := w.token(key+"["+strconv.Itoa(n)+"]", tok, depth); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil { // ']'
		return errNotJSON
	}
	return nil
}

// scalar is a JSON scalar as form text: true and false as words; false
// when it is null.
func scalar(tok json.Token) (string, bool) {
	switch t := tok.(type) {
	case string:
		return t, true
	case json.Number:
		return t.String(), true
	case bool:
		return strconv.FormatBool(t), true
	}
	return "", false
}

// loneSurrogate reports whether a JSON text escapes half of a UTF-16
// surrogate pair (\ud800 alone), which the decoder would silently turn
// into U+FFFD.
func loneSurrogate(b []byte) bool {
	inString := false
	pendingHigh := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		switch c {
		case '"':
			if pendingHigh {
				return true
			}
			inString = false
		case '\\':
			if i+1 >= len(b) {
				return false // invalid JSON: the decoder says so
			}
			if b[i+1] != 'u' || i+5 >= len(b) {
				if pendingHigh {
					return true
				}
				i++
				continue
			}
			n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
			if err != nil {
				return false // invalid JSON: the decoder says so
			}
			high, low := n >= 0xD800 && n <= 0xDBFF, n >= 0xDC00 && n <= 0xDFFF
			switch {
			case pendingHigh && !low, !pendingHigh && low:
				return true
			}
			pendingHigh = high
			i += 5
		default:
			if pendingHigh {
				return true
			}
		}
	}
	return false
}

// readMultipart reads a multipart body's values; file parts are skipped
// (only the CSV upload takes a file, and it streams its own body). A body
// must end with its closing delimiter: one cut off, even inside a part's
// headers, is refused rather than read as the parts before the cut.
func (f form) readMultipart(r io.Reader, boundary string) error {
	if boundary == "" {
		return errMultipart
	}
	cw := newCloseWatcher(r, boundary)
	mr := multipart.NewReader(cw, boundary)
	b := &budget{left: math.MaxInt}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return multipartError(err)
		}
		name := part.FormName()
		if part.FileName() != "" || name == "" {
			if _, err := io.Copy(io.Discard, part); err != nil {
				return multipartError(err)
			}
			continue
		}
		limit, own := valueCap(name)
		v, err := io.ReadAll(io.LimitReader(part, int64(limit)+1))
		if err != nil {
			return multipartError(err)
		}
		if len(v) > limit {
			if !own {
				return mail.Invalid(name, fmt.Sprintf("The %s may not be larger than %d bytes.", mail.Label(name), limit))
			}
			// Over its field's own limit: the rest is skipped, and the
			// parser refuses the value (one byte too long) with the
			// field's message, beside the form's other problems, as it
			// does for the other encodings.
			if _, err := io.Copy(io.Discard, part); err != nil {
				return multipartError(err)
			}
		}
		if err := b.add(f, name, string(v)); err != nil {
			return err
		}
	}
	if !cw.closed {
		return errMultipart
	}
	return nil
}

// valueCap is how much of a multipart value is read: the limit of the
// field's own (own true: template_html and template_json, at most
// mail.MaxTemplateBytes, docs/automations.md and docs/single-sends.md),
// else maxMemory. A value one byte over its own limit is kept for the
// parser to refuse, so the message is the documented one whatever the
// encoding and however large the value.
func valueCap(name string) (limit int, own bool) {
	switch name {
	case "template_html", "template_json":
		return mail.MaxTemplateBytes, true
	}
	return maxMemory, false
}

// multipartError is a failure reading a multipart body: the cap, or a
// malformed body.
func multipartError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return bodyError(err)
	}
	return errMultipart
}

// closeWatcher passes a multipart body through and notes whether its
// close delimiter ("--boundary--" at the start of a line) went by.
type closeWatcher struct {
	r      io.Reader
	delim  []byte // "\n--boundary--"
	tail   []byte // the last len(delim)-1 bytes read, then the new ones
	closed bool
}

func newCloseWatcher(r io.Reader, boundary string) *closeWatcher {
	// A body may open with its close delimiter (no parts): the tail starts
	// as a line break.
	return &closeWatcher{r: r, delim: []byte("\n--" + boundary + "--"), tail: []byte("\n")}
}

func (w *closeWatcher) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 && !w.closed {
		w.tail = append(w.tail, p[:n]...)
		if bytes.Contains(w.tail, w.delim) {
			w.closed = true
		}
		if keep := len(w.delim) - 1; len(w.tail) > keep {
			w.tail = append(w.tail[:0], w.tail[len(w.tail)-keep:]...)
		}
	}
	return n, err
}

// readURLEncoded reads application/x-www-form-urlencoded data. It is
// parsed here rather than by net/url, which refuses more than 10,000
// values: a bulk delete may send 100,000 ids.
func (f form) readURLEncoded(r io.Reader) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return bodyError(err)
	}
	b := budgetOf(len(body))
	for rest := string(body); rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return errURLEncoded
		}
		if err := b.add(f, k, v); err != nil {
			return err
		}
	}
	return nil
}

// checkText refuses values PostgreSQL cannot store as text: invalid UTF-8
// and NUL characters.
func (f form) checkText() error {
	var p mail.Problems
	for k, vs := range f.vals {
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

// str returns key's first value, trimmed ("" when absent or not a
// scalar, see scalar).
func (f form) str(key string) string {
	v, _ := f.scalar(key)
	return strings.TrimSpace(v)
}

// raw returns key's first value as sent, untrimmed ("" when absent or not
// a scalar): for bodies such as template_html.
func (f form) raw(key string) string {
	v, _ := f.scalar(key)
	return v
}

// scalar returns key's first value and whether it was sent. A key sent as
// an array or an object ({"k":[1]}, {"k":{…}}, k[]=1, k[0]=1, k[a]=1)
// has no scalar value: it reads as absent and is noted, so that checked
// refuses the request with shapeMessage on the field rather than drop
// the value in silence.
func (f form) scalar(key string) (string, bool) {
	if f.isComposite(key) {
		f.noteShape(key, shapeMessage(key))
		return "", false
	}
	if vs := f.vals[key]; len(vs) > 0 {
		return vs[0], true
	}
	return "", false
}

// isComposite reports whether key was sent as an array or an object.
func (f form) isComposite(key string) bool {
	if f.composite[key] {
		return true
	}
	if !strings.Contains(key, "[") {
		return false // readForm noted every top-level name of a key[…]
	}
	prefix := key + "["
	for k := range f.vals {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// noteShape records that field, read as a scalar, came as an array or
// an object.
func (f form) noteShape(field, msg string) {
	if f.shaped == nil {
		return
	}
	if _, seen := f.shaped.msgs[field]; seen {
		return
	}
	if f.shaped.msgs == nil {
		f.shaped.msgs = map[string]string{}
	}
	f.shaped.fields = append(f.shaped.fields, field)
	f.shaped.msgs[field] = msg
}

// Scalar fields by the type the contract gives them, for shapeMessage:
// integers (ids, counts, exit_criteria), numbers (the guards' rates) and
// 0/1 flags; any other is text.
var (
	integerFields = map[string]bool{"id": true, "contact_id": true, "contact_type_id": true, "segment_id": true,
		"sender_id": true, "template_id": true, "unsubscribe_group_id": true, "unsubscribe_groups_id": true,
		"country": true, "country_id": true, "state_id": true, "city_id": true, "waiting_period": true,
		"exit_criteria": true, "bounce_after": true, "complaint_after": true}
	numberFields  = map[string]bool{"bounce_rate": true, "complaint_rate": true}
	booleanFields = map[string]bool{"schedule_type": true, "is_display": true, "ed25519": true, "warmup": true}
)

// shapeMessage is what a scalar field sent as an array or object is told,
// in the words the field's parser uses for a wrong value: `The sender id
// must be an integer.`, `The schedule type field must be true or false.`,
// else `The subject must be a string.`.
func shapeMessage(field string) string {
	switch {
	case integerFields[field]:
		return "The " + mail.Label(field) + " must be an integer."
	case numberFields[field]:
		return "The " + mail.Label(field) + " must be a number."
	case booleanFields[field]:
		return mail.FlagMessage(field)
	}
	return "The " + mail.Label(field) + " must be a string."
}

// checked is err, the outcome of parsing the form's scalars, with the
// fields that came as an array or object refused: each is told
// shapeMessage in place of whatever the parser said of it (it read the
// field as absent), at the parser's place for it, and those the parser
// did not mention follow in the order read. An error that is no
// validation failure is returned as it is. Every handler that reads
// scalars with str, raw, scalar or dict passes its parse through checked
// before it writes anything.
func (f form) checked(err error) error {
	if f.shaped == nil || len(f.shaped.fields) == 0 {
		return err
	}
	var e *mail.Error
	if err != nil && (!errors.As(err, &e) || e.Code != mail.EINVALID || len(e.Fields) == 0) {
		return err
	}
	var p mail.Problems
	if e != nil {
		for _, k := range e.FieldNames() {
			if msg, bad := f.shaped.msgs[k]; bad {
				p.Add(k, msg)
				continue
			}
			for _, m := range e.Fields[k] {
				p.Add(k, m)
			}
		}
	}
	for _, k := range f.shaped.fields {
		if !p.Has(k) {
			p.Add(k, f.shaped.msgs[k])
		}
	}
	return p.Err()
}

// list returns the array sent as key[0], key[1]… (ordered by index),
// key[] or repeated key.
func (f form) list(key string) []string {
	if vals, _ := f.elements(key); len(vals) > 0 {
		return vals
	}
	return f.vals[key]
}

// elements returns the array sent as key[0], key[1]… (ordered by index)
// and key[] (in order, after those); flat is false when some key[…] is not
// an element (key[a], key[0][1]: an object or a nested array), which it
// leaves out.
func (f form) elements(key string) (vals []string, flat bool) {
	type item struct {
		i int
		v string
	}
	var items []item
	flat = true
	prefix := key + "["
	for k, vs := range f.vals {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		inner, ok := strings.CutSuffix(k[len(prefix):], "]")
		if !ok || strings.ContainsAny(inner, "[]") || f.deep[k] {
			flat = false
			continue
		}
		i := 1 << 62 // key[]: after the indexed ones, in order
		if inner != "" {
			n, err := strconv.Atoi(inner)
			if err != nil || n < 0 {
				flat = false
				continue
			}
			i = n
		}
		for _, v := range vs {
			items = append(items, item{i, v})
		}
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].i < items[b].i })
	vals = make([]string, len(items))
	for i, it := range items {
		vals[i] = it.v
	}
	return vals, flat
}

// dict returns the map sent as key[name]=value. A name whose value is an
// array or an object (key[name][]=v, {"key":{"name":[…]}}) is left out
// and noted as key.name (the field its parser reports), for checked to
// refuse.
func (f form) dict(key string) map[string]string {
	prefix := key + "["
	out := map[string]string{}
	var shaped []string
	for k, vs := range f.vals {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok || len(vs) == 0 {
			continue
		}
		name, tail, closed := strings.Cut(rest, "]")
		switch {
		case !closed || strings.Contains(name, "["):
		case tail == "" && !f.composite[k]:
			out[name] = vs[0]
		default:
			shaped = append(shaped, name)
		}
	}
	for k := range f.composite {
		if name, ok := strings.CutPrefix(k, prefix); ok && strings.HasSuffix(name, "]") &&
			!strings.ContainsAny(name[:len(name)-1], "[]") {
			shaped = append(shaped, name[:len(name)-1])
		}
	}
	sort.Strings(shaped)
	for _, name := range shaped {
		delete(out, name)
		f.noteShape(key+"."+name, "The "+name+" must be a string.")
	}
	return out
}

// ids parses key's array of record ids. Only an array is ids: key[0],
// key[1]… or key[] in a form, a JSON array; each element an integer or a
// numeric string, positive. A scalar, an object, a boolean, a nested array
// or a null element is a validation failure, never an id.
func (f form) ids(key string) ([]int64, error) {
	bad := mail.Invalid(key, fmt.Sprintf("The %s must be an array of integers.", mail.Label(key)))
	vals, flat := f.elements(key)
	if _, scalar := f.vals[key]; scalar || f.deep[key] || !flat {
		return nil, bad
	}
	if len(vals) == 0 {
		return nil, mail.Invalid(key, mail.RequiredMessage(key))
	}
	out := make([]int64, 0, len(vals))
	for _, v := range vals {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			return nil, bad
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
	for k, vs := range f.vals {
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
		if rest == "[]" { // key[i][]: the element's values in order
			for j, v := range vs[:min(len(vs), 101)] {
				cells[cell{i, j}] = v
			}
			maxI = max(maxI, i)
			continue
		}
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
