package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

func (s *Server) templateRoutes(api *gin.RouterGroup) {
	api.GET("/get-dynamic/content", s.dynamicContent)
	api.GET("/get-design/template", s.designTemplates)
}

// dynamicContent answers GET /get-dynamic/content: the 21 placeholder
// names templates may use, in the contract's order, for every account.
func (s *Server) dynamicContent(c *gin.Context) {
	ok(c, gin.H{"contents": mail.DynamicContent})
}
