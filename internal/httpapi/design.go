package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/design"
)

// designTemplateJSON is a built-in design template as interface.md lists
// it. Built-ins have no stored row, so their timestamps are null.
type designTemplateJSON struct {
	ID           int64   `json:"id"`
	TemplateName string  `json:"template_name"`
	PreviewImage string  `json:"preview_image"`
	JSONCode     string  `json:"json_code"`
	HTMLCode     string  `json:"html_code"`
	IsBlank      int     `json:"is_blank"`
	CreatedAt    *string `json:"created_at"`
	UpdatedAt    *string `json:"updated_at"`
}

// designCatalogue is the catalogue in its response shape, built once: it
// is embedded and never changes while the process runs.
var designCatalogue = sync.OnceValue(func() []designTemplateJSON {
	ts := design.Templates()
	out := make([]designTemplateJSON, len(ts))
	for i, t := range ts {
		out[i] = designTemplateJSON{ID: t.ID, TemplateName: t.Name, PreviewImage: t.Preview,
			JSONCode: t.JSON, HTMLCode: t.HTML}
		if t.Blank {
			out[i].IsBlank = 1
		}
	}
	return out
})

// designPreviewETags are the previews' ETags by file name.
var designPreviewETags = sync.OnceValue(func() map[string]string {
	m := make(map[string]string)
	for _, t := range design.Templates() {
		b, _ := design.Preview(t.Preview)
		sum := sha256.Sum256(b)
		m[t.Preview] = `"` + hex.EncodeToString(sum[:16]) + `"`
	}
	return m
})

// designTemplates answers GET /get-design/template: the built-in
// catalogue, the same for every account (docs/templates.md).
func (s *Server) designTemplates(c *gin.Context) {
	ok(c, gin.H{"templates": designCatalogue()})
}

// designPreview answers GET /design/previews/:file (outside /api, no
// keys): a catalogue template's preview_image. Only the catalogue's own
// file names are served, so no other name reaches a file.
func (s *Server) designPreview(c *gin.Context) {
	name := c.Param("file")
	b, found := design.Preview(name)
	if !found {
		failed(c, http.StatusNotFound, "Not Found")
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "image/png")
	h.Set("Cache-Control", "public, max-age=604800")
	h.Set("ETag", designPreviewETags()[name])
	// ServeContent answers If-None-Match with 304 and serves ranges.
	http.ServeContent(c.Writer, c.Request, name, time.Time{}, bytes.NewReader(b))
}
