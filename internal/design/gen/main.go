// Command gen writes each design template's HTML from its json_code:
// templates/NAME.json -> templates/NAME.html, through design.Build. Run it
// with go generate in internal/design after editing a document; a test in
// package design fails while a checked-in HTML file differs from what
// Build makes.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/mailroom/mailroom/internal/design"
)

func main() {
	dir := flag.String("dir", "templates", "directory of the NAME.json documents")
	flag.Parse()
	if err := run(*dir); err != nil {
		log.Fatal(err)
	}
}

func run(dir string) error {
	docs, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return fmt.Errorf("no documents in %s", dir)
	}
	for _, p := range docs {
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		html, err := design.Build(src)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		out := strings.TrimSuffix(p, ".json") + ".html"
		if old, err := os.ReadFile(out); err == nil && string(old) == html {
			continue
		}
		if err := os.WriteFile(out, []byte(html), 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", out)
	}
	return nil
}
