package smtp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/smtp"
)

func TestOutboxWritesWholeFiles(t *testing.T) {
	t.Parallel()
	o := &smtp.Outbox{Dir: filepath.Join(t.TempDir(), "outbox")}
	for _, to := range []string{"a@example.com", "b@example.com"} {
		if res := o.Send(context.Background(), message(to, "hello")); res.Class != smtp.Accepted {
			t.Fatal(res.Err)
		}
	}
	files, err := os.ReadDir(o.Dir)
	if err != nil || len(files) != 2 {
		t.Fatalf("%v %v", files, err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".eml") {
			t.Fatalf("left %s", f.Name())
		}
		b, _ := os.ReadFile(filepath.Join(o.Dir, f.Name()))
		if !strings.HasPrefix(string(b), "X-Envelope-From: <sender@example.com>\r\nX-Envelope-To: <") || !strings.HasSuffix(string(b), "hello\r\n") {
			t.Fatalf("%q", b)
		}
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]smtp.Config{
		"smtp://mail.example.com":                         {Addr: "mail.example.com:25"},
		"smtp://u:p%40ss@mail.example.com:587?starttls=1": {Addr: "mail.example.com:587", Security: smtp.StartTLS, Username: "u", Password: "p@ss"},
		"smtps://u:p@mail.example.com?pool=32":            {Addr: "mail.example.com:465", Security: smtp.TLS, Username: "u", Password: "p", Size: 32},
		"smtp://127.0.0.1:2525?starttls=false&pool=1":     {Addr: "127.0.0.1:2525", Size: 1},
	} {
		got, err := smtp.ParseURL(raw)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"http://x", "smtp://", "smtp://x?starttls=maybe", "smtp://x?pool=0", "smtp://x?pool=lots"} {
		if _, err := smtp.ParseURL(raw); err == nil {
			t.Errorf("%s: no error", raw)
		}
	}
}
