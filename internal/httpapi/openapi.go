package httpapi

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
)

// The API's description (docs/api.md): an OpenAPI 3.1 document kept by hand
// beside the router and embedded, served without keys, and a page that
// renders it. A test fails while a route of the router is missing from the
// document or the document names one the router lacks.

//go:embed openapi/openapi.json
var openAPIJSON []byte

//go:embed openapi/docs.html
var docsHTML []byte

// openAPIPath is the document's address: under /api, but outside the group
// that checks keys.
const openAPIPath = "/api/openapi.json"

func (s *Server) docRoutes(r *gin.Engine) {
	r.GET(openAPIPath, s.openAPIDocument)
	r.GET("/docs", s.docsPage)
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

// docsCSP allows the page's one inline script and one inline style, by
// their hashes, and requests to its own origin (the document); nothing
// else: no remote resource, no other script, no form, no framing.
var docsCSP = sync.OnceValue(func() string {
	return "default-src 'none'; script-src '" + inlineHash(docsHTML, "script") + "'; style-src '" +
		inlineHash(docsHTML, "style") + "'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
})

// docsPage answers GET /docs: the static page that fetches the document
// and lists its operations.
func (s *Server) docsPage(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", docsCSP())
	h.Set("Cache-Control", "no-cache")
	h.Set("Referrer-Policy", "no-referrer")
	c.Data(http.StatusOK, "text/html; charset=utf-8", docsHTML)
}

// inlineHash is the CSP source ('sha256-…') of the text of page's first
// <tag> element. It panics when there is none: the page is embedded, so
// that is a bug the tests meet first.
func inlineHash(page []byte, tag string) string {
	_, rest, ok := bytes.Cut(page, []byte("<"+tag+">"))
	text, _, closed := bytes.Cut(rest, []byte("</"+tag+">"))
	if !ok || !closed {
		panic("httpapi: docs.html has no <" + tag + "> element")
	}
	sum := sha256.Sum256(text)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// etagOf is a strong ETag of b.
func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}
