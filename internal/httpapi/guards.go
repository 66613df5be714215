package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// Reputation guards (docs/deliverability.md): the account's thresholds
// at which a running single send is paused.
func (s *Server) guardRoutes(api *gin.RouterGroup) {
	api.GET("/reputation-guards", s.reputationGuards)
	api.POST("/reputation-guards/save", s.saveReputationGuards)
}

// reputationGuards answers GET /reputation-guards.
func (s *Server) reputationGuards(c *gin.Context) {
	g, err := s.db.AccountGuards(c.Request.Context(), userID(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"guards": g})
}

// saveReputationGuards answers POST /reputation-guards/save: bounce_rate,
// bounce_after, complaint_rate, complaint_after, every one required.
func (s *Server) saveReputationGuards(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	g, err := mail.ParseReputationGuards(f.str("bounce_rate"), f.str("bounce_after"), f.str("complaint_rate"), f.str("complaint_after"))
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.SaveAccountGuards(c.Request.Context(), userID(c), g); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Reputation Guards Saved Successfully")
}
