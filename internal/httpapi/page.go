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

// paged is the pagination of a page of total records; nil when p is nil,
// so the key is left out of unpaged lists.
func paged(p *mail.Page, total int64) *pagination {
	if p == nil {
		return nil
	}
	return &pagination{Page: p.Number, PerPage: p.Size, Total: total}
}
