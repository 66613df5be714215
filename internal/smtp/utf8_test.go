package smtp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
)

// A mail with a UTF-8 address, in the envelope or only in its header,
// goes with SMTPUTF8 (and BODY=8BITMIME) to a server that offers it; an
// ASCII mail asks for neither. To a server without SMTPUTF8 such a mail
// fails for good at the message, before any command (nothing arrives),
// and the connection carries the next mail. Pipelined or not.
func TestSendSMTPUTF8(t *testing.T) {
	t.Parallel()
	utf8To := &smtp.Message{From: "sender@example.com", To: "ü-h@example.com",
		Data: []byte("From: sender@example.com\r\nTo: ü-h@example.com\r\nSubject: t\r\n\r\nhi\r\n")}
	utf8From := &smtp.Message{From: "bounces@example.com", To: "h@xn--bcher-kva.example",
		Data: []byte("From: \"N\" <ü@xn--bcher-kva.example>\r\nTo: h@xn--bcher-kva.example\r\nSubject: t\r\n\r\nhi\r\n")}
	ascii := message("h@xn--bcher-kva.example", "hi")
	for _, noPipelining := range []bool{false, true} {
		for _, offered := range []bool{true, false} {
			t.Run(fmt.Sprintf("no-pipelining=%v,smtputf8=%v", noPipelining, offered), func(t *testing.T) {
				t.Parallel()
				s := smtptest.New(t, smtptest.Options{NoPipelining: noPipelining, NoSMTPUTF8: !offered})
				p := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
				defer p.Close()
				ctx := context.Background()
				for _, m := range []*smtp.Message{utf8To, ascii, utf8From, ascii} {
					res := p.Send(ctx, m)
					want := smtp.Result{Class: smtp.Accepted, Code: 250}
					if !offered && m != ascii {
						want = smtp.Result{Class: smtp.Permanent, Stage: smtp.StageData, Err: smtp.ErrNoSMTPUTF8}
					}
					if res.Class != want.Class || res.Code != want.Code || res.Stage != want.Stage || !errors.Is(res.Err, want.Err) {
						t.Errorf("to %s: %+v, want %+v", m.To, res, want)
					}
				}
				n := 4
				if !offered {
					n = 2
				}
				if !s.Wait(n, 5*time.Second) || s.Count() != n {
					t.Fatalf("%d mails received, want %d", s.Count(), n)
				}
				for _, m := range s.Messages() {
					utf8 := m.To[0] == "ü-h@example.com" || bytes.Contains(m.Data, []byte("ü@"))
					if m.UTF8 != utf8 || (m.Body == "8BITMIME") != utf8 {
						t.Errorf("to %s: SMTPUTF8 %v, BODY=%q", m.To[0], m.UTF8, m.Body)
					}
				}
				if got := s.Messages()[0].To[0]; offered && got != "ü-h@example.com" {
					t.Errorf("first RCPT %q", got)
				}
			})
		}
	}
}

// Compose writes the domain as its A-label in the envelope and header, a
// UTF-8 local part as UTF-8; the outbox file holds the same envelope and
// message bytes a server receives.
func TestComposeInternational(t *testing.T) {
	t.Parallel()
	m, err := smtp.Compose(`mailroom <n@bücher.example>`, "ü@bücher.example", "Verify", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if m.From != "n@xn--bcher-kva.example" || m.To != "ü@xn--bcher-kva.example" {
		t.Fatalf("envelope %q -> %q", m.From, m.To)
	}
	h, err := netmail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		t.Fatal(err)
	}
	if from, to := h.Header.Get("From"), h.Header.Get("To"); from != `"mailroom" <n@xn--bcher-kva.example>` || to != "<ü@xn--bcher-kva.example>" {
		t.Fatalf("From %q, To %q", from, to)
	}

	o := &smtp.Outbox{Dir: filepath.Join(t.TempDir(), "outbox")}
	if res := o.Send(context.Background(), m); res.Class != smtp.Accepted {
		t.Fatal(res.Err)
	}
	s := smtptest.New(t, smtptest.Options{})
	p := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	defer p.Close()
	if res := p.Send(context.Background(), m); res.Class != smtp.Accepted || !s.Wait(1, 5*time.Second) {
		t.Fatalf("%+v", res)
	}
	got := s.Messages()[0]
	files, _ := os.ReadDir(o.Dir)
	if len(files) != 1 {
		t.Fatalf("%d files", len(files))
	}
	b, _ := os.ReadFile(filepath.Join(o.Dir, files[0].Name()))
	want := "X-Envelope-From: <" + got.From + ">\r\nX-Envelope-To: <" + got.To[0] + ">\r\n" + string(got.Data)
	// DATA ends the message's last line, which Compose leaves open.
	if string(b)+"\r\n" != want || !got.UTF8 {
		t.Fatalf("outbox file\n%q\nreceived (SMTPUTF8 %v)\n%q", b, got.UTF8, want)
	}
}
