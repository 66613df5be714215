// Package smtptest is a real SMTP server for tests, in the test's own
// process (emersion/go-smtp on 127.0.0.1:0): it keeps what it receives,
// signals each message on a channel, and misbehaves on cue — a 4xx or 5xx
// to chosen recipients, a connection dropped in the middle of DATA, no
// PIPELINING or no SMTPUTF8 in its EHLO answer — so the transport's failure classes are
// tested against the protocol, not a mock.
package smtptest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Message is one message the server accepted.
type Message struct {
	From string
	To   []string
	Data []byte
	At   time.Time // when its DATA ended
	UTF8 bool      // MAIL FROM carried SMTPUTF8 (RFC 6531)
	Body string    // MAIL FROM's BODY= ("8BITMIME"), "" when none
}

// Options say how the server misbehaves.
type Options struct {
	// Reply, when set, answers RCPT TO for an address: nil accepts it; a
	// *smtp.SMTPError (Temporary or Permanent) refuses it.
	Reply func(rcpt string) error
	// Sender, when set, answers MAIL FROM as Reply answers RCPT TO.
	Sender func(from string) error
	// DropInData, when set, closes the connection once this many bytes of
	// a message whose first recipient it names have been read.
	DropInData func(rcpt string) (afterBytes int, drop bool)
	// NoPipelining hides PIPELINING from the EHLO answer.
	NoPipelining bool
	// NoSMTPUTF8 leaves SMTPUTF8 out of the EHLO answer (it is offered
	// otherwise); a MAIL FROM with SMTPUTF8 then gets a 504, as from a
	// server without it.
	NoSMTPUTF8 bool
	// Discard keeps no message, only counts them (for benchmarks).
	Discard bool
	// Inspect, when set, reads each message's DATA as it arrives, and
	// nothing of it is kept but the count: a test of mails too big to
	// hold looks at them here. An error refuses the message (554).
	Inspect func(from string, to []string, data io.Reader) error
}

// Server is a running test server.
type Server struct {
	Addr string

	opts     Options
	srv      *smtp.Server
	ln       net.Listener
	gone     atomic.Bool // GoAway: MAIL FROM refused, no new connection
	conns    []net.Conn  // the connections taken, under mu (CloseConnections)
	mu       sync.Mutex
	messages []Message
	count    int
	received chan struct{}
}

// New starts a server that t stops.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Start starts a server on 127.0.0.1 at a free port.
func Start(opts Options) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: l.Addr().String(), opts: opts, ln: l, received: make(chan struct{}, 1)}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		s.mu.Lock()
		s.conns = append(s.conns, c.Conn())
		s.mu.Unlock()
		return &session{s: s, conn: c.Conn()}, nil
	}))
	s.srv.Domain = "smtptest.local"
	s.srv.AllowInsecureAuth = true
	s.srv.ReadTimeout = time.Minute
	s.srv.WriteTimeout = time.Minute
	s.srv.MaxRecipients = 1000
	s.srv.EnableSMTPUTF8 = !opts.NoSMTPUTF8
	if opts.NoPipelining {
		l = &hidePipelining{Listener: l}
	}
	go s.srv.Serve(l)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// CloseConnections closes every connection open now, as a server does
// with connections idle past its timeout; it goes on taking new ones.
func (s *Server) CloseConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// GoAway makes the server go away as a relay taken down does: it stops
// listening (a dial is refused) and answers the MAIL FROM of the
// connections still open 421 (service not available), so every mail
// from now on fails before its recipient and none is half taken.
func (s *Server) GoAway() {
	s.gone.Store(true)
	s.ln.Close()
}

// Messages returns the messages received so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Count is how many messages were received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// Wait returns once n messages were received in all, or false after
// timeout.
func (s *Server) Wait(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for s.Count() < n {
		select {
		case <-s.received:
		case <-deadline.C:
			return s.Count() >= n
		}
	}
	return true
}

func (s *Server) keep(m Message) {
	s.mu.Lock()
	s.count++
	if !s.opts.Discard && s.opts.Inspect == nil {
		s.messages = append(s.messages, m)
	}
	s.mu.Unlock()
	select {
	case s.received <- struct{}{}:
	default:
	}
}

// session is one connection's transaction state.
type session struct {
	s    *Server
	conn net.Conn
	from string
	to   []string
	utf8 bool
	body string
}

func (se *session) Reset() { se.from, se.to, se.utf8, se.body = "", nil, false, "" }

func (se *session) Logout() error { return nil }

func (se *session) Mail(from string, opts *smtp.MailOptions) error {
	if se.s.gone.Load() {
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "going away"}
	}
	if f := se.s.opts.Sender; f != nil {
		if err := f(from); err != nil {
			return err
		}
	}
	se.from = from
	if opts != nil {
		se.utf8, se.body = opts.UTF8, string(opts.Body)
	}
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if se.s.opts.Reply != nil {
		if err := se.s.opts.Reply(to); err != nil {
			return err
		}
	}
	se.to = append(se.to, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	if f := se.s.opts.DropInData; f != nil && len(se.to) > 0 {
		if n, drop := f(se.to[0]); drop {
			io.CopyN(io.Discard, r, int64(n))
			se.conn.Close()
			return errors.New("smtptest: connection dropped in DATA")
		}
	}
	var b bytes.Buffer
	if f := se.s.opts.Inspect; f != nil {
		err := f(se.from, se.to, r)
		// What it left unread; a message cut short (the connection gone
		// before its end) is not kept.
		if _, cerr := io.Copy(io.Discard, r); cerr != nil {
			return cerr
		}
		if err != nil {
			return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: err.Error()}
		}
		se.s.keep(Message{From: se.from, To: se.to, At: time.Now(), UTF8: se.utf8, Body: se.body})
		return nil
	}
	if se.s.opts.Discard {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return err
		}
	} else if _, err := io.Copy(&b, r); err != nil {
		return err
	}
	se.s.keep(Message{From: se.from, To: se.to, Data: b.Bytes(), At: time.Now(), UTF8: se.utf8, Body: se.body})
	return nil
}

// Closing is a 421 refusal for Options.Sender (4.3.2): a server going
// away, as its MAIL FROM answers.
func Closing(msg string) error {
	return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: msg}
}

// Temporary is a 4xx refusal for Options.Reply.
func Temporary(msg string) error {
	return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: msg}
}

// TryLater is a 421 refusal for Options.Reply (4.7.0): what a provider
// answers a sender it throttles; the connection stays open.
func TryLater(msg string) error {
	return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: msg}
}

// Permanent is a 5xx refusal for Options.Reply.
func Permanent(msg string) error {
	return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: msg}
}

// hidePipelining removes the PIPELINING line from what the server writes
// (go-smtp always offers it).
type hidePipelining struct{ net.Listener }

func (l *hidePipelining) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &hidingConn{Conn: c}, nil
}

type hidingConn struct{ net.Conn }

func (c *hidingConn) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("PIPELINING")) {
		q := strings.ReplaceAll(string(p), "250-PIPELINING\r\n", "")
		if _, err := c.Conn.Write([]byte(q)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}
