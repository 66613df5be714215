package httpapi

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// Statistics (docs/statistics.md): beside the contract, in its envelope.
// Not found reads as each resource's details route does.
func (s *Server) statsRoutes(api *gin.RouterGroup) {
	api.GET("/single-send/stats", notFoundText(recordNotFoundLower), s.stats(s.db.SingleSendStats))
	api.GET("/automations/stats", s.stats(s.db.AutomationStats))
}

// stats answers GET …/stats?utr= with the totals, the clicks by link and
// the hourly timeline of the record read.
func (s *Server) stats(read func(ctx context.Context, userID int64, utr string) (mail.Stats, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		utr, err := readUTR(c.Query("utr"))
		var st mail.Stats
		if err == nil {
			st, err = read(c.Request.Context(), userID(c), utr)
		}
		if err != nil {
			s.fail(c, err)
			return
		}
		ok(c, st)
	}
}
