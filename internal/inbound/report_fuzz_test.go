package inbound

import (
	"github.com/mailroom/mailroom/internal/mail"

	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// FuzzParse hands any bytes to the report parser: it never panics; what
// it answers stays within its limits (recipients, field lengths, a status
// code that is one, lower-case addresses); and the memory one call
// allocates is bounded by a constant times the input plus a constant
// (every part is decoded once, no deeper than maxDepth, no more than
// maxParts of them).
func FuzzParse(f *testing.F) {
	names, err := filepath.Glob(filepath.Join("testdata", "*.*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, ".md") {
			continue
		}
		f.Add(sample(f, filepath.Base(name), sampleValues))
	}
	f.Add([]byte("From: a@b\r\nContent-Type: multipart/report; boundary=x\r\n\r\n--x\r\nContent-Type: multipart/mixed; boundary=y\r\n\r\n--y\r\n" +
		"Content-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\n--y--\r\n--x--\r\n"))
	var before, after runtime.MemStats
	f.Fuzz(func(t *testing.T, raw []byte) {
		runtime.ReadMemStats(&before)
		r, err := Parse(raw)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(64*len(raw))+4<<20 {
			t.Fatalf("%d bytes allocated for %d bytes of input", grew, len(raw))
		}
		if err != nil {
			if r != nil || err != ErrNotMail {
				t.Fatalf("Parse = %v, %v", r, err)
			}
			return
		}
		if len(r.Recipients) > maxParts {
			t.Fatalf("%d recipients", len(r.Recipients))
		}
		for _, rc := range r.Recipients {
			if len(rc.Diagnostic) > maxField || (rc.Status != "" && statusCode(rc.Status) != rc.Status) ||
				rc.Final != strings.ToLower(rc.Final) || rc.Original != strings.ToLower(rc.Original) {
				t.Fatalf("recipient %+v", rc)
			}
		}
		switch r.Format {
		case FormatNone, FormatDSN, FormatARF, FormatText:
		default:
			t.Fatalf("format %q", r.Format)
		}
		if r.Format == FormatText && (len(r.Recipients) != 1 || r.Recipients[0].Status == "") {
			t.Fatalf("a text bounce without its status: %+v", r.Recipients)
		}
		if r.Format != FormatARF && r.Feedback.Type != "" {
			t.Fatalf("feedback type %q outside a feedback report", r.Feedback.Type)
		}
		// Whatever the report, the listener's reading of it does not panic.
		failure(r.Recipients)
		unsignedMessageID(r.Original.MessageID)
		recipientCount(r)
		fuzzSigner.OpenMessageID(r.Original.MessageID)
		unsubscribeTokens(r.Original.ListUnsubscribe)
	})
}

var fuzzSigner = mail.NewTokenSigner(make([]byte, 32))
