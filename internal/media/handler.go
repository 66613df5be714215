package media

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
)

// Handler serves a Store's images by key, the request's path once the
// caller has stripped its prefix (http.StripPrefix("/media/", h)). It
// answers GET and HEAD, with the type the key's extension names, the key's
// hash as a strong ETag (If-None-Match answers 304), ranges, a year's
// immutable caching, nosniff and a sandboxing CSP, so that a file is only
// ever shown as an image. A key that ValidKey refuses or that holds nothing
// is a 404.
type Handler struct {
	store Store
	log   *slog.Logger
}

// NewHandler returns the Handler of s; log receives the store's failures.
func NewHandler(s Store, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{store: s, log: log}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/")
	ct := contentTypeOf(key)
	if ct == "" {
		http.NotFound(w, r)
		return
	}
	obj, err := h.store.Open(r.Context(), key)
	if errors.Is(err, ErrNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		h.log.ErrorContext(r.Context(), "serving an image failed", "key", key, "err", err)
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	defer obj.Close()
	hdr.Set("Content-Type", ct)
	hdr.Set("Cache-Control", CacheControl)
	hdr.Set("ETag", `"`+key[:64]+`"`)
	http.ServeContent(w, r, key, obj.ModTime, obj)
}
