package mail

import (
	"strconv"
	"strings"
)

// Page is a list's optional paging: Number is 1-based, Size at most
// MaxPageSize.
type Page struct {
	Number int64
	Size   int64
	After  int64 // lists that take after_id: the id the list starts after
}

// Paging bounds.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Offset is the number of records before the page.
func (p Page) Offset() int64 { return (p.Number - 1) * p.Size }

// ParsePage reads the page and per_page parameters. Both empty is nil (the
// whole list); either given turns paging on, the other defaulting to page 1
// or DefaultPageSize records.
func ParsePage(page, perPage string) (*Page, error) {
	page, perPage = strings.TrimSpace(page), strings.TrimSpace(perPage)
	if page == "" && perPage == "" {
		return nil, nil
	}
	p := Page{Number: 1, Size: DefaultPageSize}
	var probs Problems
	if page != "" {
		n, err := strconv.ParseInt(page, 10, 64)
		switch {
		case err != nil:
			probs.Add("page", "The page must be an integer.")
		case n < 1:
			probs.Add("page", "The page must be at least 1.")
		default:
			p.Number = n
		}
	}
	if perPage != "" {
		n, err := strconv.ParseInt(perPage, 10, 64)
		switch {
		case err != nil:
			probs.Add("per_page", "The per page must be an integer.")
		case n < 1:
			probs.Add("per_page", "The per page must be at least 1.")
		case n > MaxPageSize:
			probs.Add("per_page", "The per page may not be greater than 1000.")
		default:
			p.Size = n
		}
	}
	if err := probs.Err(); err != nil {
		return nil, err
	}
	if p.Number > (1<<63-1)/p.Size {
		return nil, Invalid("page", "The page is too large.")
	}
	return &p, nil
}

// ParsePageAfter is ParsePage for the long lists, which also take after_id:
// a keyset cursor, the id the list starts after (0, the default, starts at
// the first record). Any of the three turns paging on; page numbers then
// count from the cursor, so a client walks a list of any length in pages
// of equal cost by sending the last id it received.
func ParsePageAfter(page, perPage, afterID string) (*Page, error) {
	afterID = strings.TrimSpace(afterID)
	p, err := ParsePage(page, perPage)
	var after int64
	var afterErr error
	if afterID != "" {
		n, perr := strconv.ParseInt(afterID, 10, 64)
		switch {
		case perr != nil:
			afterErr = Invalid("after_id", "The after id must be an integer.")
		case n < 0:
			afterErr = Invalid("after_id", "The after id must be at least 0.")
		default:
			after = n
		}
	}
	if err := JoinInvalid(err, afterErr); err != nil {
		return nil, err
	}
	if p == nil {
		if afterID == "" {
			return nil, nil
		}
		p = &Page{Number: 1, Size: DefaultPageSize}
	}
	p.After = after
	return p, nil
}
