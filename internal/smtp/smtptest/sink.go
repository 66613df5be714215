package smtptest

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Sink is an SMTP server that accepts every mail with as little work as
// the protocol allows: PIPELINING offered (unless NoPipelining), replies
// written when the client's pipelined commands are all read, DATA read a
// line at a time up to ".", nothing kept but counts. It is the receiving
// end of the transport and send benchmarks, so that they measure the
// client; Server (go-smtp) is the one tests inspect.
type Sink struct {
	Addr string

	ln     net.Listener
	noPipe bool
	mails  atomic.Int64
	bytes  atomic.Int64
	first  atomic.Int64 // unix nanoseconds of the first mail's end
	last   atomic.Int64

	keep bool // count mails per recipient (KeepRecipients)
	mu   sync.Mutex
	rcpt map[string]int
}

// KeepRecipients makes the sink count accepted mails per recipient
// address (Recipients): the drills check who got what. Call it before
// mail arrives.
func (s *Sink) KeepRecipients() {
	s.mu.Lock()
	s.keep, s.rcpt = true, map[string]int{}
	s.mu.Unlock()
}

// Recipients is how many accepted mails each recipient address got (with
// KeepRecipients).
func (s *Sink) Recipients() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.rcpt))
	for k, v := range s.rcpt {
		out[k] = v
	}
	return out
}

// StartSink listens on addr ("127.0.0.1:0" for a free port).
func StartSink(addr string, noPipelining bool) (*Sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Sink{Addr: ln.Addr().String(), ln: ln, noPipe: noPipelining}
	go s.serve()
	return s, nil
}

// Close stops accepting connections.
func (s *Sink) Close() error { return s.ln.Close() }

// Mails is how many mails were accepted; Bytes their DATA bytes.
func (s *Sink) Mails() int64 { return s.mails.Load() }

// Bytes is the DATA bytes of the accepted mails.
func (s *Sink) Bytes() int64 { return s.bytes.Load() }

// First and Last are when the first and the latest mail were accepted
// (zero before any).
func (s *Sink) First() time.Time { return unixNano(s.first.Load()) }

// Last is when the latest mail was accepted.
func (s *Sink) Last() time.Time { return unixNano(s.last.Load()) }

// Reset forgets the counts.
func (s *Sink) Reset() {
	s.mails.Store(0)
	s.bytes.Store(0)
	s.first.Store(0)
	s.last.Store(0)
}

func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (s *Sink) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.conn(c)
	}
}

func (s *Sink) conn(c net.Conn) {
	defer c.Close()
	r, w := bufio.NewReaderSize(c, 64<<10), bufio.NewWriter(c)
	s.mu.Lock()
	keep := s.keep
	s.mu.Unlock()
	var rcpts []string // of the mail in progress, with keep
	w.WriteString("220 sink ESMTP\r\n")
	w.Flush()
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		switch cmd := strings.ToUpper(string(line[:min(4, len(line))])); cmd {
		case "EHLO":
			if s.noPipe {
				w.WriteString("250-sink\r\n250 8BITMIME\r\n")
			} else {
				w.WriteString("250-sink\r\n250-PIPELINING\r\n250 8BITMIME\r\n")
			}
		case "HELO":
			w.WriteString("250 sink\r\n")
		case "DATA":
			w.WriteString("354 go on\r\n")
			w.Flush()
			n := int64(0)
			for {
				l, err := r.ReadSlice('\n')
				n += int64(len(l))
				if err == bufio.ErrBufferFull {
					continue // a long line goes on: it is not the end
				}
				if err != nil {
					return
				}
				if string(l) == ".\r\n" {
					break
				}
			}
			now := time.Now().UnixNano()
			s.first.CompareAndSwap(0, now)
			s.last.Store(now)
			s.bytes.Add(n)
			s.mails.Add(1)
			if keep {
				s.mu.Lock()
				for _, a := range rcpts {
					s.rcpt[a]++
				}
				s.mu.Unlock()
				rcpts = rcpts[:0]
			}
			w.WriteString("250 ok\r\n")
		case "MAIL", "RSET":
			rcpts = rcpts[:0]
			w.WriteString("250 ok\r\n")
		case "RCPT":
			if keep {
				a := strings.TrimSpace(string(line[4:]))
				a = strings.TrimPrefix(strings.TrimPrefix(a, "TO:"), "to:")
				rcpts = append(rcpts, strings.ToLower(strings.Trim(strings.TrimSpace(a), "<>")))
			}
			w.WriteString("250 ok\r\n")
		case "QUIT":
			w.WriteString("221 bye\r\n")
			w.Flush()
			return
		default:
			w.WriteString("250 ok\r\n")
		}
		if r.Buffered() == 0 {
			w.Flush()
		}
	}
}
