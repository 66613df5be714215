package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

// pixel is a transparent 1×1 GIF.
var pixel = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

func (s *Server) trackRoutes(r *gin.Engine) {
	r.GET(mail.OpenPath+":list/:token", s.openPixel)
}

// openPixel answers GET /o/{list token}/{token}: a mail was opened. The
// open counts when the token is one mailroom signed and the list token is
// the send's for the delivery's list; the answer is the same pixel either
// way (it tells a prober nothing) and is never cached, so each open asks.
func (s *Server) openPixel(c *gin.Context) {
	c.Header("Cache-Control", "no-store, max-age=0")
	c.Header("Referrer-Policy", "no-referrer")
	defer c.Data(http.StatusOK, "image/gif", pixel)
	signer, err := s.signer(c.Request.Context())
	if err != nil {
		s.log.WarnContext(c.Request.Context(), "open pixel: no signing key", "err", err)
		return
	}
	sendID, id, ok := signer.OpenOpen(strings.TrimSuffix(c.Param("token"), ".gif"))
	if !ok {
		return
	}
	if _, err := s.db.RecordOpen(c.Request.Context(), sendID, id, c.Param("list")); err != nil {
		s.log.WarnContext(c.Request.Context(), "open pixel", "send_id", sendID, "delivery_id", id, "err", err)
	}
}
