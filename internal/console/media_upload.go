package console

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"path"
	"strconv"
	"strings"
	"unicode"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/media"
)

// mediaDecodes is how many uploads a process checks at once.
const mediaDecodes = 2

// mediaBodyLimit caps an upload's body: the largest image media.Check
// takes, and room for the multipart form around it.
const mediaBodyLimit = media.DefaultMaxBytes + 1<<20

// uploadJSON is the answer to an upload, read by the editor's script.
type uploadJSON struct {
	URL    string `json:"url"` // {PUBLIC_URL}/media/{key}: the image block's src
	Key    string `json:"key"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Name   string `json:"name"` // the file's name without its extension: a start for the alt text
}

// uploadFailure is a refused upload: the message for the file field.
type uploadFailure struct {
	Errors map[string][]string `json:"errors"`
}

// mediaUpload answers POST /design/editor/media, a multipart form with
// the image in "file" (the CSRF token in the X-CSRF-Token header, or a
// csrf field before the file): the image is checked (media.Check: type
// by content, size, pixels before decoding) and stored, and its address
// answered as JSON. A refused file answers 422 with media's message.
func (h *Handler) mediaUpload(w http.ResponseWriter, r *http.Request) {
	refuse := func(status int, msg string) {
		answerJSON(w, status, uploadFailure{Errors: map[string][]string{"file": {msg}}})
	}
	if h.deps.Media == nil {
		refuse(http.StatusServiceUnavailable, "Image uploads are not set up on this server.")
		return
	}
	file, name, err := uploadedFile(r)
	if err != nil {
		refuse(http.StatusUnprocessableEntity, "The file field is required.")
		return
	}
	defer file.Close()
	// An accepted image is decoded whole (up to 128 MB for a 16-bit
	// 4000×4000 PNG of a few KB), so a process checks mediaDecodes at once
	// and the others wait their turn (or their client's going).
	select {
	case h.decodes <- struct{}{}:
		defer func() { <-h.decodes }()
	case <-r.Context().Done():
		return
	}
	img, err := media.Check(file, media.Limits{})
	var msg mail.Message
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &msg):
		refuse(http.StatusUnprocessableEntity, string(msg))
		return
	case errors.As(err, &tooLarge):
		refuse(http.StatusRequestEntityTooLarge, "The image must be at most 5 MB.")
		return
	case err != nil:
		refuse(http.StatusBadRequest, "The upload did not arrive whole. Try again.")
		return
	}
	// The account's quota is taken before the image is stored: a failed
	// store leaves it counted, and the same image uploaded again is not
	// counted twice.
	used, ok, err := h.db.AddMediaUpload(r.Context(), session(r).AccountID, img.Key, int64(len(img.Data)), h.cfg.MediaQuota)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !ok {
		refuse(http.StatusUnprocessableEntity, "The account's images take "+approxBytes(used)+" of its "+
			approxBytes(h.cfg.MediaQuota)+": this one does not fit. Reuse an uploaded image by its address.")
		return
	}
	if err := media.Put(r.Context(), h.deps.Media, img); err != nil {
		h.log.ErrorContext(r.Context(), "image not stored", "key", img.Key, "err", err)
		refuse(http.StatusInternalServerError, "The image could not be stored. Try again later.")
		return
	}
	stateOf(r).target = img.Key
	answerJSON(w, http.StatusOK, uploadJSON{URL: h.cfg.PublicURL + "/media/" + img.Key, Key: img.Key,
		Width: img.Width, Height: img.Height, Name: fileTitle(name)})
}

// uploadedFile is the form's "file" part and its file name, read as it
// streams in; or, when the CSRF check read the form already (a csrf
// field), from the parsed form.
func uploadedFile(r *http.Request) (io.ReadCloser, string, error) {
	if r.MultipartForm != nil {
		f, hd, err := r.FormFile("file")
		if err != nil {
			return nil, "", err
		}
		return f, hd.Filename, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, "", err
	}
	for {
		p, err := mr.NextPart()
		if err != nil {
			return nil, "", err
		}
		if p.FormName() == "file" {
			return p, p.FileName(), nil
		}
		p.Close()
	}
}

// fileTitle is a file name without its directory and extension, without
// control or format characters (a right-to-left override, a zero-width
// joiner), at most 100 characters.
func fileTitle(name string) string {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.TrimSuffix(name, path.Ext(name))
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, name)
	if r := []rune(strings.TrimSpace(name)); len(r) > 100 {
		return string(r[:100])
	}
	if name == "." || name == "/" {
		return ""
	}
	return strings.TrimSpace(name)
}

// approxBytes writes n to a tenth of its unit: "1 GB", "4.4 MB", "900
// bytes".
func approxBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, " GB"}, {1 << 20, " MB"}, {1 << 10, " KB"}} {
		if n >= u.size {
			return strconv.FormatFloat(math.Round(float64(n)*10/float64(u.size))/10, 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// answerJSON answers v as JSON (with <, > and & escaped).
func answerJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
