package httpapi

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// Statistics (docs/statistics.md): beside the contract, in its envelope.
// Not found reads as each resource's details route does.
func (s *Server) statsRoutes(api *gin.RouterGroup) {
	api.GET("/single-send/stats", notFoundText(recordNotFoundLower), s.stats(s.db.SingleSendStats))
	api.GET("/automations/stats", s.stats(s.db.AutomationStats))
	api.GET("/single-send/providers", notFoundText(recordNotFoundLower), s.sendProviders)
	api.GET("/providers", s.accountProviders)
}

// sendProviders answers GET /single-send/providers?utr=: the send's
// outcomes by receiving provider (docs/deliverability.md).
func (s *Server) sendProviders(c *gin.Context) {
	utr, err := readUTR(c.Query("utr"))
	var out []mail.ProviderStats
	if err == nil {
		out, err = s.db.SendProviders(c.Request.Context(), userID(c), utr)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"providers": out})
}

// accountProviders answers GET /providers?from=&to=: the account's
// outcomes by receiving provider over the days from and to (UTC dates,
// both included; the last 30 days when absent).
func (s *Server) accountProviders(c *gin.Context) {
	from, to, err := mail.ParseReportDays(c.Query("from"), c.Query("to"), time.Now())
	var out []mail.ProviderStats
	if err == nil {
		out, err = s.db.AccountProviders(c.Request.Context(), userID(c), from, to.AddDate(0, 0, 1))
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, struct {
		From      string               `json:"from"`
		To        string               `json:"to"`
		Providers []mail.ProviderStats `json:"providers"`
	}{from.Format(time.DateOnly), to.Format(time.DateOnly), out})
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
