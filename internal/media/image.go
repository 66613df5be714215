// Package media checks images uploaded for mails, names them by their
// content, stores them on disk or in an S3-compatible bucket, and serves
// them back over HTTP.
package media

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"strconv"

	"golang.org/x/image/webp"

	"github.com/mailroom/mailroom/internal/mail"
)

// Default limits, used where a field of Limits is zero.
const (
	DefaultMaxBytes  = 5 << 20    // 5 MiB
	DefaultMaxSide   = 4000       // pixels, each of width and height
	DefaultMaxPixels = 16_000_000 // width × height
)

// Limits bounds what Check accepts. A zero field takes its default.
type Limits struct {
	MaxBytes  int64 // size of the file
	MaxSide   int   // width and height each
	MaxPixels int64 // width × height
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxSide <= 0 {
		l.MaxSide = DefaultMaxSide
	}
	if l.MaxPixels <= 0 {
		l.MaxPixels = DefaultMaxPixels
	}
	return l
}

// Image is an uploaded file that Check accepted.
type Image struct {
	Key         string // sha256 of Data in hex, then Ext: the name it is stored under
	ContentType string // image/png, image/jpeg, image/gif or image/webp
	Ext         string // .png, .jpg, .gif or .webp
	Width       int
	Height      int
	Data        []byte
}

// format is one accepted image type.
type format struct {
	contentType string
	ext         string
	config      func(io.Reader) (image.Config, error)
	decode      func(io.Reader) (image.Image, error)
}

// formats are the accepted types, keyed by what http.DetectContentType says.
var formats = map[string]format{
	"image/png":  {"image/png", ".png", png.DecodeConfig, png.Decode},
	"image/jpeg": {"image/jpeg", ".jpg", jpeg.DecodeConfig, jpeg.Decode},
	"image/gif":  {"image/gif", ".gif", gif.DecodeConfig, decodeGIF},
	"image/webp": {"image/webp", ".webp", webp.DecodeConfig, webp.Decode},
}

// Messages of the files Check refuses, shown as they are under the form's
// field. The size and pixel messages depend on the limits.
const (
	MessageType    = "The file must be a PNG, JPEG, GIF or WebP image."
	MessageEmpty   = "The file is empty."
	MessageDamaged = "The image is damaged or incomplete."
)

// Check reads an uploaded file from r and returns it as an Image when it is a
// PNG, JPEG, GIF or WebP image within limits. It reads at most
// limits.MaxBytes+1 bytes, tells the type from the content (never from a
// file name), reads the width and height from the header and refuses an
// image too large before decoding any pixel, then decodes the image to
// prove it is whole. A refused file is a mail.Message, fit to show under the
// form's field; any other error is the reader's.
func Check(r io.Reader, limits Limits) (Image, error) {
	l := limits.withDefaults()
	data, err := io.ReadAll(io.LimitReader(r, l.MaxBytes+1))
	if err != nil {
		return Image{}, fmt.Errorf("media: read upload: %w", err)
	}
	if int64(len(data)) > l.MaxBytes {
		return Image{}, mail.Message("The image must be at most " + formatBytes(l.MaxBytes) + ".")
	}
	if len(data) == 0 {
		return Image{}, mail.Message(MessageEmpty)
	}
	f, ok := formats[http.DetectContentType(data)]
	if !ok {
		return Image{}, mail.Message(MessageType)
	}
	cfg, err := f.config(bytes.NewReader(data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return Image{}, mail.Message(MessageDamaged)
	}
	if cfg.Width > l.MaxSide || cfg.Height > l.MaxSide {
		return Image{}, mail.Message(fmt.Sprintf("The image must be at most %d pixels wide and high.", l.MaxSide))
	}
	if int64(cfg.Width)*int64(cfg.Height) > l.MaxPixels {
		return Image{}, mail.Message("The image must be at most " + formatPixels(l.MaxPixels) + ".")
	}
	if _, err := f.decode(bytes.NewReader(data)); err != nil {
		return Image{}, mail.Message(MessageDamaged)
	}
	sum := sha256.Sum256(data)
	return Image{
		Key:         hex.EncodeToString(sum[:]) + f.ext,
		ContentType: f.contentType,
		Ext:         f.ext,
		Width:       cfg.Width,
		Height:      cfg.Height,
		Data:        data,
	}, nil
}

// ValidKey reports whether key has the form Check gives: 64 lower-case hex
// digits and .png, .jpg, .gif or .webp. No other name is ever stored or
// served, so a key can never reach outside its directory or prefix.
func ValidKey(key string) bool {
	return contentTypeOf(key) != ""
}

// contentTypeOf is the content type a valid key's extension names, "" for an
// invalid key.
func contentTypeOf(key string) string {
	if len(key) < 65 || key[64] != '.' {
		return ""
	}
	for i := 0; i < 64; i++ {
		if c := key[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	for _, f := range formats {
		if key[64:] == f.ext {
			return f.contentType
		}
	}
	return ""
}

// decodeGIF decodes a GIF's first frame, as gif.Decode does, after walking
// all its blocks, since gif.Decode stops at the first frame and would take
// a file cut after it.
func decodeGIF(r io.Reader) (image.Image, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if err := walkGIF(data); err != nil {
		return nil, err
	}
	return gif.Decode(bytes.NewReader(data))
}

var errGIF = errors.New("media: gif: truncated or malformed")

// walkGIF checks that a GIF's blocks run to its trailer and that every frame
// lies within the logical screen, without decoding pixels.
func walkGIF(b []byte) error {
	if len(b) < 13 {
		return errGIF
	}
	sw, sh := int(b[6])|int(b[7])<<8, int(b[8])|int(b[9])<<8
	i := 13
	if b[10]&0x80 != 0 {
		i += 3 << (b[10]&7 + 1) // global color table
	}
	subBlocks := func() bool {
		for i < len(b) {
			n := int(b[i])
			i += 1 + n
			if n == 0 {
				return true
			}
		}
		return false
	}
	for i < len(b) {
		switch b[i] {
		case 0x21: // extension: label, then sub-blocks
			i += 2
			if !subBlocks() {
				return errGIF
			}
		case 0x2C: // image descriptor, color table, LZW code size, sub-blocks
			if i+10 > len(b) {
				return errGIF
			}
			d := b[i+1 : i+10]
			x, y := int(d[0])|int(d[1])<<8, int(d[2])|int(d[3])<<8
			w, h := int(d[4])|int(d[5])<<8, int(d[6])|int(d[7])<<8
			if x+w > sw || y+h > sh {
				return errGIF
			}
			i += 10
			if d[8]&0x80 != 0 {
				i += 3 << (d[8]&7 + 1)
			}
			i++ // LZW minimum code size
			if !subBlocks() {
				return errGIF
			}
		case 0x3B: // trailer
			return nil
		default:
			return errGIF
		}
	}
	return errGIF
}

// formatBytes writes n as "5 MB", "300 KB" or "1000 bytes".
func formatBytes(n int64) string {
	switch {
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MB"
	case n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// formatPixels writes n as "16 megapixels", "2.5 megapixels" or "1000 pixels".
func formatPixels(n int64) string {
	if n >= 100_000 {
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + " megapixels"
	}
	return strconv.FormatInt(n, 10) + " pixels"
}
