package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/mailroom/mailroom/internal/logging"
)

// A line logged with a context carrying a request id holds it, through
// With and WithGroup too; a line without one has none.
func TestRequestIDInEveryLine(t *testing.T) {
	var buf bytes.Buffer
	log := logging.New(&buf, "info")
	ctx := logging.WithRequestID(context.Background(), "req-1")
	log.InfoContext(ctx, "one")
	log.With("k", "v").WithGroup("g").InfoContext(ctx, "two", "x", 1)
	log.Info("three")
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 || lines[0]["request_id"] != "req-1" || lines[2]["request_id"] != nil {
		t.Fatalf("lines %v", lines)
	}
	if g, _ := lines[1]["g"].(map[string]any); g == nil || g["request_id"] != "req-1" || lines[1]["k"] != "v" {
		t.Errorf("the second line %v: want request_id (in the group) and k", lines[1])
	}
}
