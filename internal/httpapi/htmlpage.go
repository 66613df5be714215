package httpapi

import (
	"bytes"
	"html/template"
	"net/http"

	"github.com/gin-gonic/gin"
)

// The public HTML pages (outside /api, reached from links in mails): one
// layout, small, accessible, no script, no remote resources.
var pages = template.Must(template.New("layout").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a;background:#fff}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}h3{font-size:1rem;margin:0}
ul{list-style:none;padding:0}li{border:1px solid #d0d4da;border-radius:6px;padding:.75rem 1rem;margin:.5rem 0}
li p{margin:.25rem 0 .5rem;color:#444}
button{font:inherit;padding:.45rem .9rem;border:1px solid #1f4fa3;border-radius:4px;background:#1f4fa3;color:#fff;cursor:pointer}
button.quiet{background:#fff;color:#1f4fa3}
button:focus-visible{outline:3px solid #f2a900;outline-offset:2px}
.status{padding:.6rem .9rem;border-radius:4px;background:#e7f4ea;border:1px solid #8cc79a}
.muted{color:#555}
</style>
</head><body><main>
<h1>{{.Title}}</h1>
{{template "body" .}}
</main></body></html>
`))

// message is a page of one paragraph.
var messagePage = template.Must(template.Must(pages.Clone()).Parse(`{{define "body"}}<p>{{.Text}}</p>{{end}}`))

type messageData struct{ Title, Text string }

// writePage answers an HTML page: not cached or framed, no referrer
// (the URL holds a token), nothing but inline styles allowed.
func writePage(c *gin.Context, status int, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		panic(err) // our own templates and data: a failure is a bug
	}
	h := c.Writer.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Abort()
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// writeMessage answers a one-paragraph page.
func writeMessage(c *gin.Context, status int, title, text string) {
	writePage(c, status, messagePage, messageData{title, text})
}

// pageNotFound is the page of a link that is not (or no longer) valid.
func pageNotFound(c *gin.Context, text string) {
	writeMessage(c, http.StatusNotFound, "Link not valid", text)
}
