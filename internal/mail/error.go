// Package mail holds mailroom's domain types, the parsers that produce them
// from untrusted input, and the one error type every layer returns.
// It imports nothing of ours and only the standard library.
package mail

import (
	"errors"
	"fmt"
	"sort"
)

// Error codes. The HTTP layer maps each to exactly one status code.
const (
	EINVALID      = "invalid"      // 422: field messages in Fields
	ENOTFOUND     = "not_found"    // 404: wording chosen by the route
	ECONFLICT     = "conflict"     // 409: Message says why
	EUNAUTHORIZED = "unauthorized" // 401
	ETOOMANY      = "too_many"     // 429
	EFORBIDDEN    = "forbidden"    // 403: the console user's role may not
	EINTERNAL     = "internal"     // 500
)

// Error is mailroom's error. Message is safe to show to the API user.
// Fields, when set, maps a field name to its validation messages. Err, when
// set, is the cause it was translated from (a database error): it shows in
// logs through Error, never to the API user, and errors.Is/As reach it.
type Error struct {
	Code    string
	Message string
	Fields  map[string][]string
	Err     error

	order []string // field names in the order they were reported
}

// FieldNames returns the names in Fields in the order they were reported,
// then any others sorted.
func (e *Error) FieldNames() []string {
	seen := make(map[string]bool, len(e.Fields))
	out := make([]string, 0, len(e.Fields))
	for _, k := range e.order {
		if _, ok := e.Fields[k]; ok && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	rest := make([]string, 0)
	for k := range e.Fields {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func (e *Error) Error() string {
	s := fmt.Sprintf("mail: %s: %s", e.Code, e.Message)
	if len(e.Fields) > 0 {
		s = fmt.Sprintf("mail: %s: %v", e.Code, e.FieldNames())
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap is the cause, nil when the error is the domain's own.
func (e *Error) Unwrap() error { return e.Err }

// Message is a validation message for the API user, carried as an error:
// it is shown as it is, capitalized and with its final period, under the
// field its caller names.
type Message string

func (m Message) Error() string { return string(m) }

func messagef(format string, args ...any) error { return Message(fmt.Sprintf(format, args...)) }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound is the error of an absent record; the route picks the wording.
func NotFound() *Error { return &Error{Code: ENOTFOUND} }

// ErrorCode returns the code of err's *Error, EINTERNAL for any other error
// and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	default:
		return EINTERNAL
	}
}

// Problems collects validation messages field by field, in the order the
// fields were first reported. The zero value is ready to use.
type Problems struct {
	fields map[string][]string
	order  []string
}

// Add records msg against field.
func (p *Problems) Add(field, msg string) {
	if p.fields == nil {
		p.fields = map[string][]string{}
	}
	if _, ok := p.fields[field]; !ok {
		p.order = append(p.order, field)
	}
	p.fields[field] = append(p.fields[field], msg)
}

// Has reports whether field already has a message.
func (p *Problems) Has(field string) bool { return len(p.fields[field]) > 0 }

// Required records the standard message for a missing field.
func (p *Problems) Required(field string) { p.Add(field, RequiredMessage(field)) }

// Err returns nil when nothing was recorded, else an EINVALID *Error.
func (p *Problems) Err() error { return p.ErrCode(EINVALID) }

// ErrCode is Err with another code (EUNAUTHORIZED for missing credentials).
func (p *Problems) ErrCode(code string) error {
	if len(p.fields) == 0 {
		return nil
	}
	return &Error{Code: code, Fields: p.fields, order: p.order}
}

// RequiredMessage is "The <field name with spaces> field is required.".
func RequiredMessage(field string) string {
	return "The " + Label(field) + " field is required."
}

// Label turns a field name into words: "contact_type_id" -> "contact type
// id", "strIds" -> "str ids".
func Label(field string) string {
	b := make([]byte, 0, len(field)+4)
	for i := 0; i < len(field); i++ {
		switch c := field[i]; {
		case c == '_' || c == '.':
			b = append(b, ' ')
		case c >= 'A' && c <= 'Z':
			if i > 0 && field[i-1] != '_' {
				b = append(b, ' ')
			}
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// Invalid is a one-field validation error.
func Invalid(field, msg string) error {
	return &Error{Code: EINVALID, Fields: map[string][]string{field: {msg}}}
}

// JoinInvalid merges validation errors into one, fields in argument order.
// A nil error is skipped; any error that is not EINVALID is returned as is.
func JoinInvalid(errs ...error) error {
	var p Problems
	for _, err := range errs {
		if err == nil {
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != EINVALID || len(e.Fields) == 0 {
			return err
		}
		for _, k := range e.FieldNames() {
			for _, m := range e.Fields[k] {
				p.Add(k, m)
			}
		}
	}
	return p.Err()
}

// FirstMessage is err's first field message, or its message, for a line
// on a terminal.
func FirstMessage(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	for _, f := range e.FieldNames() {
		if ms := e.Fields[f]; len(ms) > 0 {
			return ms[0]
		}
	}
	if e.Message != "" {
		return e.Message
	}
	return err.Error()
}
