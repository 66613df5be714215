package httpapi

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
)

// The API's description (docs/api.md): an OpenAPI 3.1 document kept by hand
// beside the router and embedded, served without keys. A test fails while a
// route of the router is missing from the document or the document names
// one the router lacks.

//go:embed openapi/openapi.json
var openAPIJSON []byte

// openAPIPath is the document's address: under /api, but outside the group
// that checks keys.
const openAPIPath = "/api/openapi.json"

func (s *Server) docRoutes(r *gin.Engine) {
	r.GET(openAPIPath, s.openAPIDocument)
}

var openAPIETag = sync.OnceValue(func() string { return etagOf(openAPIJSON) })

// openAPIDocument answers GET /api/openapi.json: the embedded document as
// it is, with an ETag (a matching If-None-Match gets 304). no-cache: a
// client revalidates, so a new release is seen at once.
func (s *Server) openAPIDocument(c *gin.Context) {
	etag := openAPIETag()
	h := c.Writer.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	if match := c.GetHeader("If-None-Match"); match == etag || match == "W/"+etag || match == "*" {
		c.AbortWithStatus(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", openAPIJSON)
}

// etagOf is a strong ETag of b.
func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}
