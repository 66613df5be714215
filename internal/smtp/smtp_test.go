package smtp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
)

func message(to string, body string) *smtp.Message {
	return &smtp.Message{From: "sender@example.com", To: to,
		Data: []byte("From: sender@example.com\r\nTo: " + to + "\r\nSubject: test\r\n\r\n" + body + "\r\n")}
}

// refusing answers 451 to later*, 550 to gone*, and drops the connection
// in DATA for drop*.
func refusing(noPipelining bool) smtptest.Options {
	return smtptest.Options{
		NoPipelining: noPipelining,
		Reply: func(rcpt string) error {
			switch {
			case strings.HasPrefix(rcpt, "later"):
				return smtptest.Temporary("try later")
			case strings.HasPrefix(rcpt, "gone"):
				return smtptest.Permanent("no such user")
			}
			return nil
		},
		DropInData: func(rcpt string) (int, bool) { return 20, strings.HasPrefix(rcpt, "drop") },
	}
}

// Each outcome is sorted once, the connection stays usable after a
// refusal and is redialled after a drop, pipelined or not.
func TestSendClassifies(t *testing.T) {
	t.Parallel()
	for _, noPipelining := range []bool{false, true} {
		t.Run(fmt.Sprint("no-pipelining=", noPipelining), func(t *testing.T) {
			t.Parallel()
			s := smtptest.New(t, refusing(noPipelining))
			p := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
			defer p.Close()
			ctx := context.Background()
			for _, tc := range []struct {
				to    string
				class smtp.Class
				code  int
			}{
				{"ann@example.com", smtp.Accepted, 250},
				{"later@example.com", smtp.Temporary, 451},
				{"bob@example.com", smtp.Accepted, 250},
				{"gone@example.com", smtp.Permanent, 550},
				{"cy@example.com", smtp.Accepted, 250},
				{"drop@example.com", smtp.Temporary, 0},
				{"di@example.com", smtp.Accepted, 250},
			} {
				res := p.Send(ctx, message(tc.to, "Hello "+tc.to+"\r\n.leading dot"))
				if res.Class != tc.class || res.Code != tc.code {
					t.Errorf("%s: %v %d (%v), want %v %d", tc.to, res.Class, res.Code, res.Err, tc.class, tc.code)
				}
			}
			if !s.Wait(4, 5*time.Second) {
				t.Fatalf("%d messages received", s.Count())
			}
			var got []string
			for _, m := range s.Messages() {
				got = append(got, m.To[0])
				if !strings.Contains(string(m.Data), "\r\n.leading dot") {
					t.Errorf("dot-stuffing lost: %q", m.Data)
				}
			}
			if strings.Join(got, " ") != "ann@example.com bob@example.com cy@example.com di@example.com" {
				t.Fatalf("received %v", got)
			}
		})
	}
}

// Many senders share a small pool; every message arrives once.
func TestPoolConcurrent(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.Options{})
	p := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 4, Timeout: 5 * time.Second})
	defer p.Close()
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res := p.Send(context.Background(), message(fmt.Sprintf("u%d@example.com", i), "x")); res.Class != smtp.Accepted {
				t.Errorf("%d: %v", i, res.Err)
			}
		}()
	}
	wg.Wait()
	if !s.Wait(200, 5*time.Second) {
		t.Fatalf("%d of 200", s.Count())
	}
	seen := map[string]bool{}
	for _, m := range s.Messages() {
		if seen[m.To[0]] {
			t.Fatalf("%s twice", m.To[0])
		}
		seen[m.To[0]] = true
	}
}

// On a server that offers PIPELINING, senders waiting for a connection
// have their mails chained behind the one under way (its envelope in the
// write of that mail's message); each mail still gets its own outcome, a
// refusal and a dropped connection included, and none is received twice:
// a mail chained on a connection that then breaks goes again on another,
// and a message refused after its content leaves the mail chained behind
// it in step. Without PIPELINING nothing is chained.
func TestPoolChains(t *testing.T) {
	t.Parallel()
	for _, noPipelining := range []bool{false, true} {
		opts := refusing(noPipelining)
		var mu sync.Mutex
		received := map[string]int{}
		opts.Inspect = func(_ string, to []string, _ io.Reader) error {
			if strings.HasPrefix(to[0], "spam") {
				return fmt.Errorf("content refused")
			}
			mu.Lock()
			received[to[0]]++
			mu.Unlock()
			return nil
		}
		s := smtptest.New(t, opts)
		p := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
		to := func(i int) string {
			prefix := map[int]string{7: "later", 13: "gone", 29: "drop", 41: "spam"}[i%50]
			if prefix == "" {
				prefix = "u"
			}
			return fmt.Sprintf("%s%d@example.com", prefix, i)
		}
		results := make([]smtp.Result, 400)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = p.Send(context.Background(), message(to(i), "x"))
			}()
		}
		wg.Wait()
		chained := p.Stats().Chained
		p.Close()
		accepted := 0
		for i, res := range results {
			var want smtp.Result
			switch strings.TrimRight(to(i)[:4], "0123456789") {
			case "late":
				want = smtp.Result{Class: smtp.Temporary, Code: 451, Stage: smtp.StageRecipient}
			case "gone":
				want = smtp.Result{Class: smtp.Permanent, Code: 550, Stage: smtp.StageRecipient}
			case "drop":
				want = smtp.Result{Class: smtp.Temporary, Stage: smtp.StageData}
			case "spam":
				want = smtp.Result{Class: smtp.Permanent, Code: 554, Stage: smtp.StageData}
			default:
				want = smtp.Result{Class: smtp.Accepted, Code: 250}
				accepted++
			}
			if res.Class != want.Class || res.Code != want.Code || res.Stage != want.Stage {
				t.Errorf("pipelining %v, %s: %v %d %v (%v), want %v %d %v", !noPipelining, to(i), res.Class, res.Code, res.Stage, res.Err,
					want.Class, want.Code, want.Stage)
			}
		}
		if !s.Wait(accepted, 5*time.Second) {
			t.Fatalf("%d of %d received", s.Count(), accepted)
		}
		mu.Lock()
		for to, n := range received {
			if n != 1 || !strings.HasPrefix(to, "u") {
				t.Errorf("%s received %d times", to, n)
			}
		}
		if len(received) != accepted {
			t.Errorf("%d received, %d accepted", len(received), accepted)
		}
		mu.Unlock()
		if noPipelining && chained != 0 || !noPipelining && chained == 0 {
			t.Errorf("pipelining %v: %d mails chained", !noPipelining, chained)
		}
	}
}

// A mail chained behind a message whose connection then breaks was not
// tried: it goes again on a connection of its own and is sent, however
// many of the mails before it break theirs (one connection, three mails
// in four dropped in DATA), and through relays none of those breaks takes
// the relay out.
func TestChainedBehindBrokenMessages(t *testing.T) {
	t.Parallel()
	to := func(i int) string {
		if i%4 == 0 {
			return fmt.Sprintf("u%d@example.com", i)
		}
		return fmt.Sprintf("drop%d@example.com", i)
	}
	check := func(name string, i int, res smtp.Result) {
		t.Helper()
		if strings.HasPrefix(to(i), "u") && res.Class != smtp.Accepted ||
			strings.HasPrefix(to(i), "drop") && (res.Class != smtp.Temporary || res.Stage != smtp.StageData) {
			t.Errorf("%s, %s: %v %v %d (%v)", name, to(i), res.Class, res.Stage, res.Code, res.Err)
		}
	}
	for _, noPipelining := range []bool{false, true} {
		name := fmt.Sprintf("pool, pipelining %v", !noPipelining)
		s := smtptest.New(t, refusing(noPipelining))
		p := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() { check(name, i, p.Send(context.Background(), message(to(i), "x"))) })
		}
		wg.Wait()
		p.Close()
		if s.Count() != 50 {
			t.Errorf("%s: %d received, want 50", name, s.Count())
		}
	}
	a, b := smtptest.New(t, refusing(false)), smtptest.New(t, smtptest.Options{})
	cfgs, err := smtp.ParseURLs("smtp://" + a.Addr + "?name=a&pool=1 smtp://" + b.Addr + "?name=b&pool=1&weight=0")
	if err != nil {
		t.Fatal(err)
	}
	rs := smtp.NewRelays(cfgs, nil)
	defer rs.Close()
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() { check("relays", i, rs.Send(context.Background(), message(to(i), "x"))) })
	}
	wg.Wait()
	if st := rs.Stats(); st[0].Out || st[0].Failovers != 0 || b.Count() != 0 {
		t.Errorf("relays: a out %v after %d failovers, the backup took %d", st[0].Out, st[0].Failovers, b.Count())
	}
}

// A mail chained behind a message whose context ends before that
// message's reply comes is not sent: its connection is given up.
func TestChainedContextDone(t *testing.T) {
	t.Parallel()
	atRcpt, gate := make(chan struct{}), make(chan struct{})
	atData, release := make(chan struct{}), make(chan struct{})
	s := smtptest.New(t, smtptest.Options{
		Reply: func(rcpt string) error {
			if strings.HasPrefix(rcpt, "hold") {
				atRcpt <- struct{}{}
				<-gate
			}
			return nil
		},
		Inspect: func(_ string, to []string, r io.Reader) error {
			if strings.HasPrefix(to[0], "hold") {
				io.Copy(io.Discard, r) // the message is in: the mail behind it is chained
				atData <- struct{}{}
				<-release
			}
			return nil
		},
	})
	p := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	defer p.Close()
	held := make(chan smtp.Result)
	go func() { held <- p.Send(context.Background(), message("hold@example.com", "x")) }()
	<-atRcpt // hold has the connection
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan smtp.Result)
	go func() { waiting <- p.Send(ctx, message("late@example.com", "x")) }()
	time.Sleep(100 * time.Millisecond) // late waits for a connection
	close(gate)
	<-atData // hold's message went, late's envelope behind it
	cancel()
	close(release)
	if res := <-held; res.Class != smtp.Accepted {
		t.Fatalf("hold: %+v", res)
	}
	if res := <-waiting; res.Class != smtp.Temporary || res.Err == nil {
		t.Fatalf("late, its context done: %+v", res)
	}
	if n, chained := s.Count(), p.Stats().Chained; n != 1 || chained != 1 {
		t.Errorf("%d received (want hold's alone), %d chained", n, chained)
	}
}

// A server that is not there is a temporary failure, and the pool keeps
// its slot.
func TestDialFailureIsTemporary(t *testing.T) {
	t.Parallel()
	p := smtp.NewPool(smtp.Config{Addr: "127.0.0.1:1", Size: 1, Timeout: time.Second})
	for range 2 {
		if res := p.Send(context.Background(), message("a@example.com", "x")); res.Class != smtp.Temporary || res.Err == nil {
			t.Fatalf("%+v", res)
		}
	}
	// An envelope with a line break is refused before the wire.
	s := smtptest.New(t, smtptest.Options{})
	p2 := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1})
	defer p2.Close()
	if res := p2.Send(context.Background(), message("a@example.com>\r\nRCPT TO:<b@example.com", "x")); res.Class != smtp.Permanent {
		t.Fatalf("%+v", res)
	}
}

// Stats follows the pool: a slot in use while its mail is on the wire,
// a connection open from its dial until it breaks or the pool closes,
// every dial and every failed one counted.
func TestPoolStats(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	s := smtptest.New(t, smtptest.Options{
		Reply: func(rcpt string) error {
			if strings.HasPrefix(rcpt, "hold") {
				entered <- struct{}{}
				<-release
			}
			return nil
		},
		DropInData: func(rcpt string) (int, bool) { return 20, strings.HasPrefix(rcpt, "drop") },
	})
	p := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 1, Timeout: 5 * time.Second})
	ctx := context.Background()
	if got := p.Stats(); got != (smtp.Stats{Size: 1}) {
		t.Fatalf("new pool: %+v", got)
	}
	done := make(chan smtp.Result)
	go func() { done <- p.Send(ctx, message("hold@example.com", "x")) }()
	<-entered // the server holds the mail at RCPT TO
	if got := p.Stats(); got != (smtp.Stats{Size: 1, InUse: 1, Open: 1, Dials: 1}) {
		t.Errorf("while a mail is on the wire: %+v", got)
	}
	close(release)
	if res := <-done; res.Class != smtp.Accepted {
		t.Fatal(res.Err)
	}
	if res := p.Send(ctx, message("drop@example.com", "x")); res.Class != smtp.Temporary {
		t.Fatalf("drop: %+v", res)
	}
	if got := p.Stats(); got != (smtp.Stats{Size: 1, Open: 0, Dials: 1}) {
		t.Errorf("after a dropped connection: %+v", got)
	}
	if res := p.Send(ctx, message("ann@example.com", "x")); res.Class != smtp.Accepted {
		t.Fatal(res.Err)
	}
	if got := p.Stats(); got != (smtp.Stats{Size: 1, Open: 1, Dials: 2}) {
		t.Errorf("redialled: %+v", got)
	}
	p.Close()
	if got := p.Stats(); got.Open != 0 {
		t.Errorf("closed: %+v", got)
	}

	down := smtp.NewPool(smtp.Config{Addr: "127.0.0.1:1", Size: 1, Timeout: time.Second})
	down.Send(ctx, message("a@example.com", "x"))
	down.Send(ctx, message("b@example.com", "x"))
	if got := down.Stats(); got != (smtp.Stats{Size: 1, Dials: 2, DialErrors: 2}) {
		t.Errorf("nothing listening: %+v", got)
	}
}

// BenchmarkPool pushes messages of ~4 KB through pools of 8, 16 and 32
// connections into the in-process server, pipelined and step by step.
// sinks are the servers the transport benchmarks send into, each in a
// child process: "go-smtp", emersion/go-smtp as the tests use it, and
// "raw", a minimal pipelining responder (smtptest.Sink) that costs little CPU,
// so that the client's own ceiling shows.
var sinks = []string{"raw", "go-smtp"}

func BenchmarkPool(b *testing.B) {
	body := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit.\r\n", 70)
	for _, kind := range sinks {
		for _, pipelined := range []bool{true, false} {
			for _, size := range []int{8, 16, 32} {
				b.Run(fmt.Sprintf("sink=%s/pipelined=%v/pool=%d", kind, pipelined, size), func(b *testing.B) {
					p := smtp.NewPool(smtp.Config{Addr: sink(b, kind), Size: size, NoPipelining: !pipelined})
					defer p.Close()
					sendAll(b, size, func(msgs <-chan int) {
						for i := range msgs {
							if res := p.Send(context.Background(), message(fmt.Sprintf("u%d@example.com", i), body)); res.Class != smtp.Accepted {
								b.Error(res.Err)
							}
						}
					})
				})
			}
		}
	}
}

// BenchmarkBareClient is the yardstick for BenchmarkPool: the same mails
// through the same server by a bare pipelining client (raw bytes on a
// bufio'd socket, no go-mail, no parsing beyond the reply codes), one
// connection per goroutine.
func BenchmarkBareClient(b *testing.B) {
	body := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit.\r\n", 70)
	for _, kind := range sinks {
		for _, size := range []int{8, 16, 32} {
			b.Run(fmt.Sprintf("sink=%s/conns=%d", kind, size), func(b *testing.B) {
				addr := sink(b, kind)
				sendAll(b, size, func(msgs <-chan int) {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						b.Error(err)
						return
					}
					defer c.Close()
					r, w := bufio.NewReader(c), bufio.NewWriter(c)
					reply := func() string {
						for {
							line, err := r.ReadString('\n')
							if err != nil {
								b.Error(err)
								return ""
							}
							if len(line) < 4 || line[3] != '-' {
								return line
							}
						}
					}
					reply() // greeting
					w.WriteString("EHLO bare\r\n")
					w.Flush()
					reply()
					for i := range msgs {
						fmt.Fprintf(w, "MAIL FROM:<sender@example.com>\r\nRCPT TO:<u%d@example.com>\r\nDATA\r\n", i)
						w.Flush()
						reply()
						reply()
						reply()
						fmt.Fprintf(w, "From: sender@example.com\r\nTo: u%d@example.com\r\nSubject: test\r\n\r\n%s\r\n.\r\n", i, body)
						w.Flush()
						if l := reply(); !strings.HasPrefix(l, "250") {
							b.Errorf("%q", l)
						}
					}
				})
			})
		}
	}
}

// sendAll runs workers goroutines of send, hands them the message numbers
// 0…b.N-1 with the timer running, and reports mails/s and the CPU this
// process spent per mail (user + system; the SMTP server is another
// process, see sink).
func sendAll(b *testing.B, workers int, send func(msgs <-chan int)) {
	msgs := make(chan int)
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	b.ResetTimer()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(msgs)
		}()
	}
	for i := 0; i < b.N; i++ {
		msgs <- i
	}
	close(msgs)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mails/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "client-µs/mail")
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sink starts a discarding SMTP server (PIPELINING offered) in a child
// process, this test binary run again with SMTP_SINK set, so that the
// benchmark's CPU figures hold the client alone. It stops with b.
func sink(b *testing.B, kind string) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SMTP_SINK="+kind)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("sink: %v", err)
	}
	return strings.TrimSpace(addr)
}

// TestMain runs a sink when SMTP_SINK names one: it prints its address
// and serves until its standard input closes.
func TestMain(m *testing.M) {
	kind := os.Getenv("SMTP_SINK")
	if kind == "" {
		os.Exit(m.Run())
	}
	var addr string
	switch kind {
	case "raw":
		s, err := smtptest.StartSink("127.0.0.1:0", false)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		addr = s.Addr
	default:
		s, err := smtptest.Start(smtptest.Options{Discard: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		addr = s.Addr
	}
	fmt.Println(addr)
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
