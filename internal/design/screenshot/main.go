// Command screenshot makes the design templates' preview images:
// templates/NAME.html -> previews/NAME.png. Each template is rendered
// through internal/render with a sample recipient and sender (so a preview
// reads "Hello Ada", not "Hello ((first_name))"), opened in headless
// Chromium 640 px wide (wider than the templates' 620 px phone breakpoint,
// so the desktop layout shows), and the screenshot is cut to the 600 px
// content column, from its top to just below the footer.
// scripts/design-previews.sh runs it from the repository root; see
// docs/templates.md.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/render"
)

const (
	window    = 640  // the window's width: above the phone breakpoint (620)
	width     = 600  // the templates' width: previews are 1:1, never scaled
	top       = 24   // the page's padding above the content column
	maxHeight = 3000 // the window's height; a longer template fails
	margin    = 24   // page colour kept below the footer
)

func main() {
	dir := flag.String("dir", "internal/design", "the design package: templates/*.html in, previews/*.png out")
	chromium := flag.String("chromium", "/usr/bin/chromium", "headless Chromium binary")
	flag.Parse()
	if err := run(*dir, *chromium); err != nil {
		log.Fatal(err)
	}
}

// The sample contact and sender the previews show.
var (
	recipient = mail.Recipient{
		Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace", Country: "United Kingdom", City: "London",
		Custom: map[string]string{"company_name": "Analytical Engines Ltd", "designation": "Engineer"},
		Tokens: mail.Tokens{PreferencesURL: "https://example.com/preferences"},
	}
	sender = mail.Sender{FromName: "Northwind Studio", FromEmail: "hello@example.com",
		Address: "12 Harbour Street", City: "Bristol", State: "England", Country: "United Kingdom"}
)

func run(dir, chromium string) error {
	pages, err := filepath.Glob(filepath.Join(dir, "templates", "*.html"))
	if err != nil {
		return err
	}
	if len(pages) == 0 {
		return fmt.Errorf("no templates in %s/templates", dir)
	}
	tmp, err := os.MkdirTemp("", "design-previews")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, p := range pages {
		name := strings.TrimSuffix(filepath.Base(p), ".html")
		out := filepath.Join(dir, "previews", name+".png")
		n, err := shoot(p, out, tmp, chromium)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("%s: %d bytes\n", out, n)
	}
	return nil
}

// shoot renders the template at src, screenshots it and writes the cut
// PNG to out, returning its size.
func shoot(src, out, tmp, chromium string) (int, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return 0, err
	}
	t, err := render.Compile("", "", string(b))
	if err != nil {
		return 0, err
	}
	var buf render.Buffer
	t.Render(&buf, &recipient, &sender)
	page, err := filepath.Abs(filepath.Join(tmp, filepath.Base(src)))
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(page, buf.HTML, 0o644); err != nil {
		return 0, err
	}
	shot := filepath.Join(tmp, "shot.png")
	profile, err := os.MkdirTemp(tmp, "profile")
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--hide-scrollbars", fmt.Sprintf("--window-size=%d,%d", window, maxHeight),
		"--screenshot="+shot, "file://"+page)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("chromium: %w\n%s", err, msg)
	}
	f, err := os.Open(shot)
	if err != nil {
		return 0, err
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		return 0, err
	}
	preview, err := cut(img)
	if err != nil {
		return 0, err
	}
	var enc bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&enc, preview); err != nil {
		return 0, err
	}
	return enc.Len(), os.WriteFile(out, enc.Bytes(), 0o644)
}

// cut keeps the centred content column and drops the page colour below
// the last row holding anything else, keeping margin rows of it. A
// template reaching the window's bottom is an error: its preview would be
// cut off.
func cut(img image.Image) (image.Image, error) {
	b := img.Bounds()
	if b.Dx() != window {
		return nil, fmt.Errorf("screenshot is %d px wide, want %d", b.Dx(), window)
	}
	left := b.Min.X + (window-width)/2
	r := image.Rect(left, b.Min.Y+top, left+width, b.Max.Y)
	page := img.At(r.Min.X, r.Max.Y-1)
	last := -1
	for y := r.Max.Y - 1; y >= r.Min.Y && last < 0; y-- {
		for x := r.Min.X; x < r.Max.X; x++ {
			if !same(img.At(x, y), page) {
				last = y
				break
			}
		}
	}
	if last < 0 {
		return nil, fmt.Errorf("screenshot is empty")
	}
	if last+margin >= r.Max.Y-1 {
		return nil, fmt.Errorf("template is taller than %d px", maxHeight)
	}
	// An NRGBA of opaque pixels encodes as RGB, without alpha.
	out := image.NewNRGBA(image.Rect(0, 0, width, last+1+margin-r.Min.Y))
	draw.Draw(out, out.Bounds(), img, r.Min, draw.Src)
	return out, nil
}

func same(a, b color.Color) bool {
	r1, g1, b1, _ := a.RGBA()
	r2, g2, b2, _ := b.RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2
}
