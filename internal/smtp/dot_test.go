package smtp

import (
	"bufio"
	"bytes"
	"net/textproto"
	"strings"
	"testing"
)

// appendDotStuffed makes what textproto's DotWriter writes, for every
// input without a bare CR.
func TestAppendDotStuffed(t *testing.T) {
	t.Parallel()
	inputs := []string{"", "a", "a\r\n", ".a\r\n", "a\n.b\n", "..\r\n", "\r\n.\r\n", "a\r\nb", "\n\n", ".", ".\r\n.",
		"From: x\r\n\r\n.hidden\r\n..two\r\nend", strings.Repeat("line .\r\n.", 5000)}
	for _, in := range inputs {
		var want bytes.Buffer
		ww := bufio.NewWriter(&want)
		dw := textproto.NewWriter(ww).DotWriter()
		dw.Write([]byte(in))
		dw.Close()
		ww.Flush()

		got := appendDotStuffed([]byte("x"), []byte(in))[1:]
		if string(got) != want.String() {
			t.Errorf("%q:\n got %q\nwant %q", in, got, want.String())
		}
	}
}

func FuzzAppendDotStuffed(f *testing.F) {
	f.Add([]byte("a\r\n.b\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.IndexByte(in, '\r') >= 0 {
			in = bytes.ReplaceAll(in, []byte("\r"), nil) // bare CRs are not ours to send
		}
		var want bytes.Buffer
		ww := bufio.NewWriter(&want)
		dw := textproto.NewWriter(ww).DotWriter()
		dw.Write(in)
		dw.Close()
		ww.Flush()
		if got := appendDotStuffed(nil, in); string(got) != want.String() {
			t.Errorf("%q:\n got %q\nwant %q", in, got, want.String())
		}
	})
}
