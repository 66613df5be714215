package media

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
)

// picture is a w×h image with some variety, so encoders have work to do.
func picture(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m.Set(x, y, color.NRGBA{uint8(x * 7), uint8(y * 13), uint8(x ^ y), 255})
		}
	}
	return m
}

func pngFile(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, picture(w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegFile(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, picture(w, h), &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gifFile is an animation of frames w×h frames.
func gifFile(t testing.TB, w, h, frames int) []byte {
	t.Helper()
	g := &gif.GIF{}
	for i := 0; i < frames; i++ {
		m := image.NewPaletted(image.Rect(0, 0, w, h), palette.Plan9)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				m.SetColorIndex(x, y, uint8(x+y+i*40))
			}
		}
		g.Image = append(g.Image, m)
		g.Delay = append(g.Delay, 10)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// webpFile is a 3×2 lossy WebP, made by `cwebp -q 80` from a 3×2 PNG (the
// standard library and x/image only decode WebP).
var webpFile, _ = hex.DecodeString("" +
	"524946465200000057454250565038204600000" + "0f001009d012a030002000140" +
	"2625a80274ba000308f78a0000fed2a72857ebfb5fa597ff5ce1867cffc4d9ff" +
	"2efa26d2f614ff8fe381f7ffe4dff2df4ae831f7ffe4dfd54000")

// pngHeader is a PNG whose IHDR claims w×h 8-bit grayscale pixels, written by
// hand, followed by an IDAT that inflates 1 MiB of zeros and an IEND: a
// decompression bomb's shape.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8] = 8 // bit depth; color type 0 (gray), no interlace
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return b.Bytes()
}

func TestCheckAccepts(t *testing.T) {
	t.Parallel()
	small := pngFile(t, 3, 2)
	tests := []struct {
		name   string
		data   []byte
		limits Limits
		ct     string
		ext    string
		w, h   int
	}{
		{"png", pngFile(t, 40, 30), Limits{}, "image/png", ".png", 40, 30},
		{"jpeg", jpegFile(t, 64, 48), Limits{}, "image/jpeg", ".jpg", 64, 48},
		{"gif", gifFile(t, 1, 1, 1), Limits{}, "image/gif", ".gif", 1, 1},
		{"animated gif", gifFile(t, 20, 10, 3), Limits{}, "image/gif", ".gif", 20, 10},
		{"webp", webpFile, Limits{}, "image/webp", ".webp", 3, 2},
		{"exactly the limits", small, Limits{MaxBytes: int64(len(small)), MaxSide: 3, MaxPixels: 6}, "image/png", ".png", 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			img, err := Check(bytes.NewReader(tt.data), tt.limits)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(tt.data)
			if want := hex.EncodeToString(sum[:]) + tt.ext; img.Key != want {
				t.Errorf("Key = %q, want %q", img.Key, want)
			}
			if !ValidKey(img.Key) {
				t.Errorf("ValidKey(%q) = false", img.Key)
			}
			if img.ContentType != tt.ct || img.Ext != tt.ext || img.Width != tt.w || img.Height != tt.h {
				t.Errorf("got %s %s %dx%d, want %s %s %dx%d", img.ContentType, img.Ext, img.Width, img.Height, tt.ct, tt.ext, tt.w, tt.h)
			}
			if !bytes.Equal(img.Data, tt.data) {
				t.Error("Data differs from the upload")
			}
		})
	}
}

func TestCheckRefuses(t *testing.T) {
	t.Parallel()
	p := pngFile(t, 40, 30)
	j := jpegFile(t, 64, 48)
	g := gifFile(t, 20, 10, 3)
	// g cut where its third frame starts: g and g2 have the same first two frames.
	g2 := gifFile(t, 20, 10, 2)
	twoFrames := g[:len(g2)-1]
	if !bytes.Equal(twoFrames, g2[:len(g2)-1]) {
		t.Fatal("gif files differ before the third frame")
	}
	noisy := pngFile(t, 400, 300) // over 1 KB
	wideFrame := bytes.Clone(g)   // the third frame claims 65535 pixels of width
	if d := len(g2) - 1 + 8; wideFrame[d] == 0x2C {
		wideFrame[d+5], wideFrame[d+6] = 0xff, 0xff
	} else {
		t.Fatal("no image descriptor after the second frame's graphic control")
	}
	big := append(pngFile(t, 3, 2), make([]byte, DefaultMaxBytes)...)
	badCRC := bytes.Clone(p)
	badCRC[len(badCRC)-20] ^= 0xff // inside IDAT
	const (
		wide  = "The image must be at most 4000 pixels wide and high."
		nType = MessageType
		bad   = MessageDamaged
	)
	tests := []struct {
		name   string
		data   []byte
		limits Limits
		want   string
	}{
		{"empty", nil, Limits{}, MessageEmpty},
		{"over 5 MiB", big, Limits{}, "The image must be at most 5 MB."},
		{"over a limit in KB", noisy, Limits{MaxBytes: 1 << 10}, "The image must be at most 1 KB."},
		{"over a limit in bytes", noisy, Limits{MaxBytes: 1000}, "The image must be at most 1000 bytes."},
		{"pixel bomb 100000x100000", pngHeader(100000, 100000), Limits{}, wide},
		{"4001 wide", pngHeader(4001, 1), Limits{}, wide},
		{"4001 high", pngHeader(1, 4001), Limits{}, wide},
		{"over the megapixels", pngHeader(5000, 5000), Limits{MaxSide: 100000}, "The image must be at most 16 megapixels."},
		{"over a pixel limit", p, Limits{MaxPixels: 1199}, "The image must be at most 1199 pixels."},
		{"over a side limit", p, Limits{MaxSide: 39}, "The image must be at most 39 pixels wide and high."},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>`), Limits{}, nType},
		{"svg with an xml declaration", []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>`), Limits{}, nType},
		{"html", []byte("<!DOCTYPE html><html><body><script>alert(document.cookie)</script>"), Limits{}, nType},
		{"html after spaces", []byte("  \n<html><img src=x onerror=alert(1)>"), Limits{}, nType},
		{"text", []byte("not an image at all"), Limits{}, nType},
		{"bmp", append([]byte("BM"), make([]byte, 60)...), Limits{}, nType},
		{"pdf", []byte("%PDF-1.7\n"), Limits{}, nType},
		{"png signature only", p[:8], Limits{}, bad},
		{"png header only", p[:33], Limits{}, bad},
		{"png cut in half", p[:len(p)/2], Limits{}, bad},
		{"png without IEND", p[:len(p)-12], Limits{}, bad},
		{"png cut in IEND", p[:len(p)-1], Limits{}, bad},
		{"png with a bad checksum", badCRC, Limits{}, bad},
		{"png of zero width", pngHeader(0, 10), Limits{}, bad},
		{"jpeg cut in half", j[:len(j)/2], Limits{}, bad},
		{"jpeg without EOI", j[:len(j)-2], Limits{}, bad},
		{"gif cut in half", g[:len(g)/2], Limits{}, bad},
		{"gif cut after a frame", twoFrames, Limits{}, bad},
		{"gif with a frame wider than the screen", wideFrame, Limits{}, bad},
		{"gif without trailer", g[:len(g)-1], Limits{}, bad},
		{"webp cut", webpFile[:60], Limits{}, bad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Check(bytes.NewReader(tt.data), tt.limits)
			var m mail.Message
			if !errors.As(err, &m) {
				t.Fatalf("err = %v, want a mail.Message", err)
			}
			if string(m) != tt.want {
				t.Errorf("message = %q, want %q", m, tt.want)
			}
		})
	}
}

// countingReader is an endless file: a PNG signature, then zeros.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
		if off := r.n + int64(i); off < 8 {
			p[i] = "\x89PNG\r\n\x1a\n"[off]
		}
	}
	r.n += int64(len(p))
	return len(p), nil
}

func TestCheckReadsAtMostTheLimitAndOne(t *testing.T) {
	t.Parallel()
	r := &countingReader{}
	_, err := Check(r, Limits{MaxBytes: 100_000})
	if err == nil || err.Error() != "The image must be at most 100000 bytes." {
		t.Fatalf("err = %v", err)
	}
	if r.n != 100_001 {
		t.Errorf("read %d bytes, want 100001", r.n)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestCheckPassesReadErrors(t *testing.T) {
	t.Parallel()
	_, err := Check(failingReader{}, Limits{})
	var m mail.Message
	if errors.As(err, &m) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want the reader's error, not a message", err)
	}
}

func TestValidKey(t *testing.T) {
	t.Parallel()
	h := strings.Repeat("0123456789abcdef", 4)
	for key, want := range map[string]bool{
		h + ".png":                  true,
		h + ".jpg":                  true,
		h + ".gif":                  true,
		h + ".webp":                 true,
		h + ".jpeg":                 false,
		h + ".svg":                  false,
		h + ".PNG":                  false,
		h + ".png/":                 false,
		h + ".png/../x":             false,
		strings.ToUpper(h) + ".png": false,
		h[:63] + ".png":             false,
		h + "0.png":                 false,
		h:                           false,
		"":                          false,
		"../x":                      false,
		"../" + h + ".png":          false,
		"ab/" + h + ".png":          false,
		"/" + h + ".png":            false,
		h[:62] + "/..png":           false,
		h[:63] + "g.png":            false,
	} {
		if got := ValidKey(key); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", key, got, want)
		}
	}
}
