package httpapi

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/racetest"
)

// writeJSONString, a piece at a time, writes what encode writes whole,
// whatever falls across the pieces: runes of every width, escapes, HTML,
// U+2028, invalid UTF-8.
func TestWriteJSONStringMatchesEncode(t *testing.T) {
	racetest.Heavy(t)
	t.Parallel()
	alphabet := []string{"a", "é", "€", "😀", "\u2028", "\u2029", `"`, `\`, "\n", "\t", "\x00", "\x1f", "<", ">", "&",
		"\xff", "\xe2\x82", "\x80", "\ufffd"}
	r := rand.New(rand.NewPCG(1, 2))
	cases := []string{"", "x", strings.Repeat("é", jsonPiece), strings.Repeat("😀", jsonPiece/4+1),
		strings.Repeat("a", jsonPiece-1) + "€", strings.Repeat("a", jsonPiece-2) + "😀" + "b"}
	for range 200 {
		var b strings.Builder
		for b.Len() < 3*jsonPiece+r.IntN(jsonPiece) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		var want, got, scratch bytes.Buffer
		encode(&want, s)
		if err := writeJSONString(&got, &scratch, s); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%d-byte string: pieces differ from encode (%d vs %d bytes)", len(s), got.Len(), want.Len())
		}
	}
}
