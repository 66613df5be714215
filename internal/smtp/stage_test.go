package smtp_test

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/smtp"
)

// scripted is an SMTP server that answers each command by its verb from
// replies (250 ok for the others); "." is the reply to the end of a
// message, which it reads after a 354; a reply "drop" hangs up instead.
func scripted(t *testing.T, greeting string, replies map[string]string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				c.Write([]byte(greeting))
				r := bufio.NewReader(c)
				inData := false
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if inData {
						if line == ".\r\n" {
							inData = false
							reply := replies["."]
							if reply == "" {
								reply = "250 ok\r\n"
							}
							c.Write([]byte(reply))
						}
						continue
					}
					verb := strings.ToUpper(strings.Fields(line + " x")[0])
					reply, ok := replies[verb]
					if !ok {
						reply = "250 ok\r\n"
					}
					if reply == "drop" {
						return
					}
					if strings.HasPrefix(reply, "354") {
						inData = true
					}
					c.Write([]byte(reply))
				}
			}(c)
		}
	}()
	return l.Addr().String()
}

// Every failure says where it happened: only a refusal at RCPT TO is
// about the recipient's address (a hard bounce); a refused greeting,
// login or sender is the connection's or the sender's trouble, a refused
// message the message's.
func TestFailureStages(t *testing.T) {
	t.Parallel()
	ok := map[string]string{"EHLO": "250-hi\r\n250 PIPELINING\r\n", "DATA": "354 go\r\n"}
	with := func(more map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range ok {
			m[k] = v
		}
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name     string
		greeting string
		replies  map[string]string
		user     string
		class    smtp.Class
		stage    smtp.Stage
	}{
		{"greeting refused (IP blocked)", "554 5.7.1 blocked\r\n", ok, "", smtp.Permanent, smtp.StageConnect},
		{"login refused", "220 hi\r\n", with(map[string]string{"EHLO": "250-hi\r\n250 AUTH PLAIN\r\n", "AUTH": "535 5.7.8 bad credentials\r\n"}), "u", smtp.Permanent, smtp.StageConnect},
		{"sender refused", "220 hi\r\n", with(map[string]string{"MAIL": "550 5.7.1 sender not allowed\r\n", "RCPT": "503 need MAIL\r\n", "DATA": "503 need RCPT\r\n"}), "", smtp.Permanent, smtp.StageSender},
		{"recipient refused", "220 hi\r\n", with(map[string]string{"RCPT": "550 5.1.1 no such user\r\n", "DATA": "503 need RCPT\r\n"}), "", smtp.Permanent, smtp.StageRecipient},
		{"sender dropped", "220 hi\r\n", with(map[string]string{"MAIL": "drop"}), "", smtp.Temporary, smtp.StageSender},
		{"recipient dropped", "220 hi\r\n", with(map[string]string{"RCPT": "drop"}), "", smtp.Temporary, smtp.StageRecipient},
		{"recipient later", "220 hi\r\n", with(map[string]string{"RCPT": "452 4.2.2 mailbox full\r\n", "DATA": "503 need RCPT\r\n"}), "", smtp.Temporary, smtp.StageRecipient},
		{"message refused", "220 hi\r\n", with(map[string]string{".": "552 5.3.4 too big\r\n"}), "", smtp.Permanent, smtp.StageData},
		{"accepted", "220 hi\r\n", ok, "", smtp.Accepted, smtp.StageConnect},
		{"accepted with another 2xx", "220 hi\r\n", with(map[string]string{".": "251 queued elsewhere\r\n"}), "", smtp.Accepted, smtp.StageConnect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, noPipe := range []bool{false, true} {
				p := smtp.NewPool(smtp.Config{Addr: scripted(t, tt.greeting, tt.replies), Size: 1, Timeout: 2 * time.Second,
					Username: tt.user, Password: "p", NoPipelining: noPipe})
				res := p.Send(context.Background(), message("ann@example.com", "hi"))
				p.Close()
				if res.Class != tt.class || (res.Class != smtp.Accepted && res.Stage != tt.stage) {
					t.Errorf("pipelining off %v: %v at %v (%v), want %v at %v", noPipe, res.Class, res.Stage, res.Err, tt.class, tt.stage)
				}
			}
		})
	}
}
