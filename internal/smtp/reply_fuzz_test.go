package smtp_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/smtp"
)

// script is what a fuzzed server answers, raw, per command: "" drops
// the connection instead.
type script struct {
	greeting, ehlo, helo, auth, mail, rcpt, data, dot, rset string
}

// reply is one scripted answer as the client's parser (textproto) reads
// it: whole means exactly one complete reply, its last line ended by LF,
// and nothing after it (at the end of its input textproto takes a last
// line without LF; on a live connection the client waits for the LF).
type reply struct {
	drop  bool
	whole bool
	code  int
	msg   string
}

func parseReply(s string) reply {
	if s == "" {
		return reply{drop: true, whole: true}
	}
	br := bufio.NewReader(strings.NewReader(s))
	code, msg, err := textproto.NewReader(br).ReadResponse(0)
	if err != nil || !strings.HasSuffix(s, "\n") {
		return reply{code: code}
	}
	_, rest := br.ReadByte()
	return reply{whole: rest == io.EOF, code: code, msg: msg}
}

// fuzzServer serves one connection from sc: each command gets its
// scripted answer; after an answer that is not one whole reply (or an
// empty one) it hangs up, so the client never waits on a server that
// waits on it. It records whether a message's end was read and answered.
type fuzzServer struct {
	addr string
	done chan struct{}

	mu       sync.Mutex
	conn     net.Conn
	gotEnd   bool   // the message's final "." was read
	endReply string // what it was answered
}

func serveScript(t *testing.T, sc script) *fuzzServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fuzzServer{addr: l.Addr().String(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		c, err := l.Accept()
		l.Close()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conn = c
		s.mu.Unlock()
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		say := func(raw string) bool { // false: hung up
			if raw != "" {
				c.Write([]byte(raw))
			}
			return parseReply(raw).whole && raw != ""
		}
		if !say(sc.greeting) {
			return
		}
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			verb := strings.ToUpper(strings.Fields(line + " x")[0])
			var raw string
			switch verb {
			case "EHLO":
				raw = sc.ehlo
			case "HELO":
				raw = sc.helo
			case "AUTH":
				raw = sc.auth
			case "MAIL":
				raw = sc.mail
			case "RCPT":
				raw = sc.rcpt
			case "DATA":
				raw = sc.data
			case "RSET":
				raw = sc.rset
			case "QUIT":
				c.Write([]byte("221 bye\r\n"))
				return
			default: // "*" cancelling an AUTH, anything else
				raw = "501 no\r\n"
			}
			if !say(raw) {
				return
			}
			if p := parseReply(raw); verb != "DATA" || p.code != 354 {
				continue
			}
			for { // the message, up to its final "."
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if line == ".\r\n" {
					break
				}
			}
			s.mu.Lock()
			s.gotEnd, s.endReply = true, sc.dot
			s.mu.Unlock()
			if !say(sc.dot) {
				return
			}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		s.mu.Lock()
		if s.conn != nil {
			s.conn.Close()
		}
		s.mu.Unlock()
		<-s.done
	})
	return s
}

// expected is the documented outcome for a script of whole replies: the
// first step not answered as it should be decides (docs/deliveries.md,
// RFC 5321 codes). ok is false when a reply is not whole: then only the
// general rules hold.
func expected(sc script, auth, noPipelining bool) (want smtp.Result, ok bool) {
	fail := func(stage smtp.Stage, code int) (smtp.Result, bool) {
		class := smtp.Temporary
		if code >= 500 && code < 600 {
			class = smtp.Permanent
		}
		return smtp.Result{Class: class, Code: code, Stage: stage}, true
	}
	whole := func(rs ...reply) bool {
		for _, r := range rs {
			if !r.whole {
				return false
			}
		}
		return true
	}
	g := parseReply(sc.greeting)
	if !g.whole {
		return smtp.Result{}, false
	}
	if g.drop || g.code != 220 {
		return fail(smtp.StageConnect, g.code)
	}
	e := parseReply(sc.ehlo)
	if !e.whole {
		return smtp.Result{}, false
	}
	if e.drop {
		return fail(smtp.StageConnect, 0) // HELO then meets a closed connection
	}
	pipelining := false
	if e.code != 250 {
		h := parseReply(sc.helo)
		if !h.whole {
			return smtp.Result{}, false
		}
		if h.drop || h.code != 250 {
			return fail(smtp.StageConnect, e.code) // the EHLO refusal is reported
		}
	} else {
		for _, l := range strings.Split(e.msg, "\n")[1:] {
			pipelining = pipelining || strings.SplitN(l, " ", 2)[0] == "PIPELINING"
		}
		pipelining = pipelining && !noPipelining
	}
	if auth {
		a := parseReply(sc.auth)
		switch {
		case !a.whole:
			return smtp.Result{}, false
		case a.drop || a.code == 334: // a challenge PLAIN cannot answer
			return fail(smtp.StageConnect, 0)
		case a.code != 235:
			return fail(smtp.StageConnect, a.code)
		}
	}
	m, r, d := parseReply(sc.mail), parseReply(sc.rcpt), parseReply(sc.data)
	if !m.whole || pipelining && !whole(r, d) {
		return smtp.Result{}, false
	}
	// MAIL FROM's success is 250 (RFC 5321); the pipelined reader takes
	// any 25x, go-mail's step-by-step Mail only 250 (docs/fuzzing.md).
	if m.drop || m.code != 250 && !(pipelining && m.code/10 == 25) {
		return fail(smtp.StageSender, m.code)
	}
	if !r.whole {
		return smtp.Result{}, false
	}
	if r.drop || r.code/10 != 25 {
		return fail(smtp.StageRecipient, r.code)
	}
	if !d.whole {
		return smtp.Result{}, false
	}
	if d.drop || d.code != 354 {
		return fail(smtp.StageData, d.code)
	}
	end := parseReply(sc.dot)
	if !end.whole {
		return smtp.Result{}, false
	}
	if end.drop || end.code/100 != 2 { // any 2xx: sent (docs/deliveries.md)
		return fail(smtp.StageData, end.code)
	}
	return smtp.Result{Class: smtp.Accepted, Code: 250}, true
}

// FuzzReplies sends a mail to a server answering whatever the fuzzer
// scripts, pipelined or not, with AUTH or without: Send and Close never
// panic or hang; the class always agrees with the code (5xx permanent,
// anything else temporary, accepted only without error, as 250) and the
// code is the textproto error's; for a script of whole replies the class,
// code and stage are exactly those of the first step answered wrongly,
// and an accepted mail was read to its end and answered 250.
func FuzzReplies(f *testing.F) {
	ok := script{"220 hi\r\n", "250-hi\r\n250-AUTH PLAIN\r\n250 PIPELINING\r\n", "250 hi\r\n", "235 ok\r\n",
		"250 ok\r\n", "250 ok\r\n", "354 go\r\n", "250 queued\r\n", "250 ok\r\n"}
	with := func(change func(*script)) script {
		sc := ok
		change(&sc)
		return sc
	}
	for _, seed := range []struct {
		sc           script
		auth, noPipe bool
	}{
		{ok, false, false},
		{ok, true, true},
		{with(func(s *script) { s.greeting = "554 5.7.1 blocked\r\n" }), false, false},
		{with(func(s *script) { s.ehlo = "500 what\r\n" }), false, false},
		{with(func(s *script) { s.ehlo, s.helo = "500 what\r\n", "421 busy\r\n" }), false, false},
		{with(func(s *script) { s.auth = "535 5.7.8 bad credentials\r\n" }), true, false},
		{with(func(s *script) { s.auth = "334 \r\n" }), true, false},
		{with(func(s *script) { s.mail = "550 5.7.1 sender refused\r\n" }), false, false},
		{with(func(s *script) { s.mail = "451 later\r\n"; s.data = "503 no\r\n" }), false, true},
		{with(func(s *script) { s.rcpt = "550 5.1.1 no such user\r\n"; s.data = "503 need RCPT\r\n" }), false, false},
		{with(func(s *script) { s.rcpt = "452-4.2.2 mailbox\r\n452 full\r\n" }), false, false},
		{with(func(s *script) { s.data = "554 no\r\n" }), false, false},
		{with(func(s *script) { s.dot = "552 5.3.4 too big\r\n" }), false, false},
		{with(func(s *script) { s.dot = "" }), false, false},
		{with(func(s *script) { s.mail = "" }), false, false},
		{with(func(s *script) { s.data = "" }), false, false},
		{with(func(s *script) { s.mail = "251 ok\r\n" }), false, false},
		{with(func(s *script) { s.mail = "251 ok\r\n" }), false, true},
		{with(func(s *script) { s.dot = "251 queued elsewhere\r\n" }), false, false},
		{with(func(s *script) { s.dot = "299 fine\r\n" }), false, true},
		{with(func(s *script) { s.dot = "250-x\r\n" }), false, true},
		{with(func(s *script) { s.rcpt = "25" }), false, false},
		{with(func(s *script) { s.mail = "250 ok\r\n550 extra\r\n" }), false, false},
		{with(func(s *script) { s.ehlo = "250-hi\n250-SIZE 10\n250 PIPELINING\n" }), false, false},
	} {
		sc := seed.sc
		f.Add(sc.greeting, sc.ehlo, sc.helo, sc.auth, sc.mail, sc.rcpt, sc.data, sc.dot, sc.rset, seed.auth, seed.noPipe)
	}
	f.Fuzz(func(t *testing.T, greeting, ehlo, helo, auth, mail, rcpt, data, dot, rset string, withAuth, noPipelining bool) {
		sc := script{greeting, ehlo, helo, auth, mail, rcpt, data, dot, rset}
		srv := serveScript(t, sc)
		cfg := smtp.Config{Addr: srv.addr, Size: 1, Timeout: 30 * time.Second, NoPipelining: noPipelining}
		if withAuth {
			cfg.Username, cfg.Password = "u", "p"
		}
		p := smtp.NewPool(cfg)
		done := make(chan smtp.Result, 1)
		go func() {
			res := p.Send(context.Background(), message("ann@example.com", "Hello\r\n.dot"))
			p.Close()
			done <- res
		}()
		var res smtp.Result
		select {
		case res = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Send or Close still waiting after 10 s for %#v", sc)
		}
		_ = res.Class.String() + res.Stage.String()

		// The general rules.
		var tp *textproto.Error
		switch {
		case (res.Class == smtp.Accepted) != (res.Err == nil):
			t.Fatalf("%v with error %v", res.Class, res.Err)
		case res.Class == smtp.Accepted && res.Code != 250:
			t.Fatalf("accepted with code %d", res.Code)
		case res.Class == smtp.Permanent && (res.Code < 500 || res.Code > 599):
			t.Fatalf("permanent with code %d: %v", res.Code, res.Err)
		case res.Class == smtp.Temporary && res.Code >= 500 && res.Code <= 599:
			t.Fatalf("temporary with code %d: %v", res.Code, res.Err)
		case res.Err != nil && errors.As(res.Err, &tp) && tp.Code != res.Code:
			t.Fatalf("code %d, error %v", res.Code, res.Err)
		case res.Err != nil && !errors.As(res.Err, &tp) && res.Code != 0:
			t.Fatalf("code %d without a reply: %v", res.Code, res.Err)
		}

		want, exact := expected(sc, withAuth, noPipelining)
		if !exact {
			return
		}
		if res.Class != want.Class || res.Code != want.Code || res.Class != smtp.Accepted && res.Stage != want.Stage {
			t.Fatalf("%v %d at %v (%v), want %v %d at %v", res.Class, res.Code, res.Stage, res.Err, want.Class, want.Code, want.Stage)
		}
		if res.Class == smtp.Accepted {
			<-srv.done
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if !srv.gotEnd || parseReply(srv.endReply).code/100 != 2 {
				t.Fatalf("accepted, but the server read the end %v and answered %q", srv.gotEnd, srv.endReply)
			}
		}
	})
}
