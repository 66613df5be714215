package smtptest_test

import (
	"errors"
	"net/smtp"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/smtp/smtptest"
)

func TestServerReceivesAndRefusesOnCue(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		switch {
		case strings.HasPrefix(rcpt, "later"):
			return smtptest.Temporary("try later")
		case strings.HasPrefix(rcpt, "gone"):
			return smtptest.Permanent("no such user")
		}
		return nil
	}})
	if err := smtptest.Deliver(s.Addr, "from@example.com", []string{"ann@example.com"}, []byte("Subject: hi\r\n\r\nhello\r\n")); err != nil {
		t.Fatal(err)
	}
	if !s.Wait(1, 5*time.Second) {
		t.Fatal("no message")
	}
	m := s.Messages()[0]
	if m.From != "from@example.com" || len(m.To) != 1 || m.To[0] != "ann@example.com" || !strings.Contains(string(m.Data), "hello") {
		t.Fatalf("%+v", m)
	}
	for rcpt, code := range map[string]int{"later@example.com": 451, "gone@example.com": 550} {
		var tpErr *textproto.Error
		if err := smtptest.Deliver(s.Addr, "from@example.com", []string{rcpt}, []byte("x\r\n")); !errors.As(err, &tpErr) || tpErr.Code != code {
			t.Errorf("%s: %v, want %d", rcpt, err, code)
		}
	}
	if s.Count() != 1 {
		t.Fatalf("%d messages", s.Count())
	}
}

func TestServerWithoutPipelining(t *testing.T) {
	t.Parallel()
	for _, hide := range []bool{false, true} {
		s := smtptest.New(t, smtptest.Options{NoPipelining: hide})
		c, err := smtp.Dial(s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Hello("client.test"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := c.Extension("PIPELINING"); ok == hide {
			t.Errorf("hide %v: PIPELINING offered %v", hide, ok)
		}
		if ok, _ := c.Extension("8BITMIME"); !ok {
			t.Errorf("hide %v: the other extensions went too", hide)
		}
		c.Close()
	}
}

// SMTPUTF8 is offered unless NoSMTPUTF8, and a message says whether its
// MAIL FROM asked for it (net/smtp asks whenever it is offered).
func TestServerSMTPUTF8(t *testing.T) {
	t.Parallel()
	for _, hide := range []bool{false, true} {
		s := smtptest.New(t, smtptest.Options{NoSMTPUTF8: hide})
		err := smtptest.Deliver(s.Addr, "from@example.com", []string{"ü@example.com"}, []byte("Subject: hi\r\n\r\nhello\r\n"))
		if err != nil || !s.Wait(1, 5*time.Second) {
			t.Fatalf("hide %v: %v", hide, err)
		}
		if m := s.Messages()[0]; m.UTF8 == hide || m.Body != "8BITMIME" || m.To[0] != "ü@example.com" {
			t.Errorf("hide %v: received %+v", hide, m)
		}
	}
}

func TestServerDropsInData(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.Options{DropInData: func(rcpt string) (int, bool) { return 10, rcpt == "drop@example.com" }})
	if err := smtptest.Deliver(s.Addr, "from@example.com", []string{"drop@example.com"}, []byte(strings.Repeat("x", 100000)+"\r\n")); err == nil {
		t.Fatal("a dropped connection reported success")
	}
	if s.Count() != 0 {
		t.Fatal("a dropped message was kept")
	}
	if err := smtptest.Deliver(s.Addr, "from@example.com", []string{"keep@example.com"}, []byte("ok\r\n")); err != nil || !s.Wait(1, 5*time.Second) {
		t.Fatalf("after a drop: %v", err)
	}
}

// The sink accepts and counts every mail, with PIPELINING offered or not,
// including bodies with lines longer than its read buffer.
func TestSink(t *testing.T) {
	t.Parallel()
	for _, noPipe := range []bool{false, true} {
		s, err := smtptest.StartSink("127.0.0.1:0", noPipe)
		if err != nil {
			t.Fatal(err)
		}
		c, err := smtp.Dial(s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Hello("client.test"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := c.Extension("PIPELINING"); ok == noPipe {
			t.Errorf("noPipelining %v: PIPELINING offered %v", noPipe, ok)
		}
		c.Close()
		before := time.Now()
		if err := smtptest.Deliver(s.Addr, "from@example.com", []string{"a@example.com"}, []byte("Subject: x\r\n\r\nshort\r\n")); err != nil {
			t.Fatal(err)
		}
		if err := smtptest.Deliver(s.Addr, "from@example.com", []string{"b@example.com"}, []byte("Subject: y\r\n\r\n"+strings.Repeat("z", 200<<10)+"\r\n")); err != nil {
			t.Fatal(err)
		}
		if s.Mails() != 2 || s.Bytes() < 200<<10 || s.First().Before(before) || s.Last().Before(s.First()) {
			t.Errorf("mails %d bytes %d first %v last %v", s.Mails(), s.Bytes(), s.First(), s.Last())
		}
		s.Reset()
		if s.Mails() != 0 || !s.First().IsZero() {
			t.Error("Reset kept counts")
		}
		s.Close()
	}
}
