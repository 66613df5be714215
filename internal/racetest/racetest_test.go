package racetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every test heavy.txt lists is in its package and calls Heavy, so what
// skips under the race detector is what make test runs without it.
func TestListedTestsCallHeavy(t *testing.T) {
	n := 0
	for line := range strings.Lines(heavy) {
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasPrefix(f[0], "./") {
			continue
		}
		n++
		files, _ := filepath.Glob(filepath.Join("..", "..", f[0], "*_test.go"))
		found := false
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			if i := strings.Index(src, "func "+f[1]+"(t *testing.T) {\n"); i >= 0 {
				found = strings.HasPrefix(strings.TrimSpace(src[i+len("func "+f[1]+"(t *testing.T) {\n"):]), "racetest.Heavy(t)")
				break
			}
		}
		if !found {
			t.Errorf("%s %s: no such test, or it does not begin with racetest.Heavy(t)", f[0], f[1])
		}
	}
	if n == 0 {
		t.Fatal("heavy.txt lists no test")
	}
	if !listed("TestMailMemoryBudget") || listed("TestNothing") || listed("package") {
		t.Fatal("listed")
	}
}
