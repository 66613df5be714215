package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// pagination is what a list called with page or per_page adds to its
// message.
type pagination struct {
	Page    int64 `json:"page"`
	PerPage int64 `json:"per_page"`
	Total   int64 `json:"total"`
}

// readPage reads a list's optional ?page=&per_page= (nil: the whole list).
func readPage(c *gin.Context) (*mail.Page, error) {
	return mail.ParsePage(c.Query("page"), c.Query("per_page"))
}

// readCursorPage is readPage for the lists that grow with the audience
// (contacts, segment recipients, global unsubscribes, group recipients,
// notification recipients), which also take ?after_id=: the keyset cursor
// whose pages cost the same however deep (docs/counts.md).
func readCursorPage(c *gin.Context) (*mail.Page, error) {
	return mail.ParsePageAfter(c.Query("page"), c.Query("per_page"), c.Query("after_id"))
}

// paged is the pagination of a page of total records; nil when p is nil,
// so the key is left out of unpaged lists.
func paged(p *mail.Page, total int64) *pagination {
	if p == nil {
		return nil
	}
	return &pagination{Page: p.Number, PerPage: p.Size, Total: total}
}
