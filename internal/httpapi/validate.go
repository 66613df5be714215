package httpapi

import (
	"errors"

	"github.com/mailroom/mailroom/internal/mail"
)

// joinInvalid merges the field messages of the validation failures among
// errs, in order, into one EINVALID error, so a request hears of every bad
// field at once. Any other error is returned as it is.
func joinInvalid(errs ...error) error {
	var p mail.Problems
	for _, err := range errs {
		if err == nil {
			continue
		}
		var e *mail.Error
		if !errors.As(err, &e) || e.Code != mail.EINVALID || len(e.Fields) == 0 {
			return err
		}
		for _, k := range e.FieldNames() {
			for _, msg := range e.Fields[k] {
				p.Add(k, msg)
			}
		}
	}
	return p.Err()
}
