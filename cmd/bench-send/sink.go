package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mailroom/mailroom/internal/smtp/smtptest"
)

// mailSink is where the send's mails go: Postfix's smtp-sink, a real
// receiving MTA in its own process (the default), or the project's
// in-process sink (-sink inproc).
type mailSink interface {
	Addr() string
	Mails() int64     // mails accepted since the last Reset
	First() time.Time // when the first of them was accepted
	Reset()
	Close() error
	PID() int // the sink's process; 0: this one
	// Recipients counts the mails each address got, when the sink was
	// started to keep them (the drills).
	Recipients() map[string]int
}

type inprocSink struct{ *smtptest.Sink }

func (s inprocSink) Addr() string { return s.Sink.Addr }
func (s inprocSink) PID() int     { return 0 }
func (s inprocSink) Close() error { s.Sink.Close(); return nil }

// postfixSink runs smtp-sink -c and reads its running counters
// ("sess=1 quit=1 mesg=3\r"), which move at every message's end.
type postfixSink struct {
	cmd  *exec.Cmd
	addr string
	dump string // the folder of the dump files (-D) the drills count recipients in; "" none

	mu    sync.Mutex
	mesg  int64 // as smtp-sink counts
	base  int64 // mesg at the last Reset
	first time.Time
}

// startPostfixSink starts smtp-sink on a free port, installing Debian's
// postfix first when it is missing and this is root (as .ci/run installs
// Chromium). With dump set, every mail transaction is appended to a file
// in that folder (-D; smtp-sink names its files), which Recipients reads.
func startPostfixSink(pipelining bool, dump string) (*postfixSink, error) {
	if _, err := exec.LookPath("smtp-sink"); err != nil {
		if os.Getuid() != 0 {
			return nil, fmt.Errorf("no smtp-sink (Debian's postfix package): install it, or run with -sink inproc")
		}
		fmt.Println("bench-send: installing postfix for its smtp-sink …")
		install := exec.Command("apt-get", "install", "-y", "-q", "postfix")
		install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := install.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("installing postfix: %v\n%s", err, out)
		}
		exec.Command("sh", "-c", "systemctl stop postfix || service postfix stop").Run()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	args := []string{"-c", "-u", "nobody", "-m", "1024"}
	if !pipelining {
		args = append(args, "-p")
	}
	if dump != "" {
		// smtp-sink writes as nobody: a folder it may write in.
		if err := os.MkdirAll(dump, 0o777); err != nil {
			return nil, err
		}
		if err := os.Chmod(dump, 0o777); err != nil {
			return nil, err
		}
		args = append(args, "-D", filepath.Join(dump, "mails"))
	}
	s := &postfixSink{addr: addr, dump: dump, cmd: exec.Command("smtp-sink", append(args, addr, "1024")...)}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.cmd.Stderr = os.Stderr
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("smtp-sink: %w", err)
	}
	go s.read(out)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Close()
			return nil, fmt.Errorf("smtp-sink did not listen on %s", addr)
		}
	}
}

// readEvery paces the reading of smtp-sink's counters: it writes a line
// at every message's end, and a reader woken for each line cost this
// process about 22 µs a mail (a sixth of the machine's CPU during a send
// on 2 cores, under the engine's send and the bare client's alike).
// Read every 20 ms, the pipe holds what came meanwhile (about 8 KB at
// 15,000 mails/s; it holds 64 KB) and only the last count is parsed; the
// first mail is seen up to 20 ms late.
const readEvery = 20 * time.Millisecond

func (s *postfixSink) read(r io.Reader) {
	buf := make([]byte, 256<<10)
	var line []byte // the last line so far, unended
	for {
		n, err := r.Read(buf)
		data := buf[:n]
		// The last ended line holds the latest count; a line cut by the
		// read is completed by the next.
		if i := bytes.LastIndexAny(data, "\r\n"); i >= 0 {
			last := append(line, data[:i]...)
			if j := bytes.LastIndexAny(last, "\r\n"); j >= 0 {
				last = last[j+1:]
			}
			s.count(last)
			line = append(line[:0], data[i+1:]...)
		} else {
			line = append(line, data...)
		}
		if err != nil {
			s.count(line)
			return
		}
		time.Sleep(readEvery)
	}
}

// settle waits until smtp-sink's counters read so far include every mail
// it took before the call (the in-process sink counts at once).
func settle(sink mailSink) {
	if sink.PID() != 0 {
		time.Sleep(3 * readEvery)
	}
}

// count takes the mesg= count of one counter line.
func (s *postfixSink) count(line []byte) {
	i := bytes.Index(line, []byte("mesg="))
	if i < 0 {
		return
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(line[i+5:])), 10, 64)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.first.IsZero() && n > s.base {
		s.first = time.Now()
	}
	s.mesg = n
	s.mu.Unlock()
}

func (s *postfixSink) Addr() string { return s.addr }
func (s *postfixSink) PID() int     { return s.cmd.Process.Pid }

func (s *postfixSink) Mails() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mesg - s.base
}

func (s *postfixSink) First() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

func (s *postfixSink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base, s.first = s.mesg, time.Time{}
}

func (s *postfixSink) Close() error {
	s.cmd.Process.Kill()
	return s.cmd.Wait()
}

// Recipients counts the X-Rcpt-Args records of the dump files: one per
// RCPT TO of a mail transaction smtp-sink completed.
func (s *postfixSink) Recipients() map[string]int {
	got := map[string]int{}
	if s.dump == "" {
		return got
	}
	files, _ := filepath.Glob(filepath.Join(s.dump, "mails*"))
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("X-Rcpt-Args: ")); ok {
				got[rcptAddress(string(rest))]++
			}
		}
		f.Close()
	}
	return got
}

// rcptAddress is the address of RCPT TO's arguments ("TO:<a@b> …").
func rcptAddress(args string) string {
	if i := strings.IndexByte(args, '<'); i >= 0 {
		if j := strings.IndexByte(args[i:], '>'); j > 0 {
			return args[i+1 : i+j]
		}
	}
	return args
}
