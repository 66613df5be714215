// Package smtp hands mails to an SMTP server: a pool of kept connections
// dialled through go-mail's smtp.Client (EHLO, STARTTLS and AUTH once per
// connection), MAIL FROM, RCPT TO and DATA written in one flush and their
// replies read together when the server offers PIPELINING (RFC 2920), no
// NOOP or RSET per message, and every outcome sorted once into accepted,
// temporary or permanent. A mail with a UTF-8 address, in its envelope or
// its header (RFC 6532), goes with SMTPUTF8 (RFC 6531) and only to a
// server that offers it.
package smtp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	gsmtp "github.com/wneessen/go-mail/smtp"
)

// Message is one mail: its envelope and its whole RFC 5322 text (CRLF
// line ends, headers first). The envelope addresses are as they go out
// (mail.Email.Wire: an internationalized domain as its A-label); when
// one of them, or the header, holds more than ASCII, the mail needs
// SMTPUTF8.
type Message struct {
	From string
	To   string
	Data []byte
	// Route chooses the relay among several (Relays); a Pool ignores it.
	Route Route
}

// Class sorts a send's outcome.
type Class int

// The outcomes of a send.
const (
	Accepted  Class = iota
	Temporary       // 4xx, a timeout, a dropped connection: try again later
	Permanent       // 5xx: the address bounced
)

func (c Class) String() string {
	return [...]string{"accepted", "temporary", "permanent"}[c]
}

// Stage is the step of a mail transaction a failure happened at: only a
// refusal at RCPT TO says something about the recipient's address.
type Stage int

// The steps of sending one mail.
const (
	StageConnect   Stage = iota // dialling, greeting, EHLO, STARTTLS, AUTH: the connection's trouble
	StageSender                 // MAIL FROM: the sender's (or the relay's) trouble
	StageRecipient              // RCPT TO: the recipient's address
	StageData                   // DATA and the message: this message
)

func (s Stage) String() string {
	return [...]string{"connect", "sender", "recipient", "data"}[s]
}

// Result is a send's outcome; Code is the SMTP reply code when there was
// one, Stage where a failure happened.
type Result struct {
	Class Class
	Code  int
	Stage Stage
	Err   error
}

// stageError is a failure with the transaction step it happened at.
type stageError struct {
	stage Stage
	err   error
}

func (e *stageError) Error() string { return e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

func at(stage Stage, err error) error {
	if err == nil {
		return nil
	}
	return &stageError{stage, err}
}

// ErrNoSMTPUTF8 is the failure of a mail that needs SMTPUTF8 (a UTF-8
// address) on a connection to a server that does not offer it: nothing is
// sent, and the result is permanent, at StageData (the mail, not the
// address, cannot go there: the recipient is not suppressed, and the
// connection stays in use).
var ErrNoSMTPUTF8 = errors.New("smtp: the receiving server does not support SMTPUTF8, needed for a non-ASCII address")

// classify sorts a failure: a reply code of 5xx is permanent, anything
// else (4xx, network errors, timeouts) temporary; the stage is where it
// happened (a failure without one happened connecting).
func classify(err error) Result {
	if err == nil {
		return Result{Class: Accepted, Code: 250}
	}
	res := Result{Class: Temporary, Err: err, Stage: StageConnect}
	var se *stageError
	if errors.As(err, &se) {
		res.Stage = se.stage
	}
	var tp *textproto.Error
	if errors.As(err, &tp) {
		res.Code = tp.Code
		if tp.Code >= 500 && tp.Code < 600 {
			res.Class = Permanent
		}
	}
	return res
}

// Security is how a connection is protected.
type Security int

// Connection security modes.
const (
	Plain    Security = iota // no TLS (a local relay, a test server)
	StartTLS                 // STARTTLS after EHLO, required
	TLS                      // TLS from the first byte (smtps)
)

// Config is what a pool dials.
type Config struct {
	Addr      string // host:port
	Security  Security
	Username  string // AUTH PLAIN when set
	Password  string
	LocalName string        // EHLO name; "localhost" when empty
	Size      int           // connections; 16 when 0
	Timeout   time.Duration // per command and per message; 30 s when 0
	// NoPipelining sends step by step even when the server offers
	// PIPELINING (for comparison).
	NoPipelining bool
	TLSConfig    *tls.Config // nil: ServerName from Addr
}

// Pool keeps up to Size connections and sends each message on one of
// them. It is safe for concurrent use; a connection carries one message
// at a time.
type Pool struct {
	cfg   Config
	conns chan *conn // idle connections; nil entries are free slots to dial

	// For Stats, touched only when a connection is dialled or closed,
	// never per mail.
	open, dials, dialErrors atomic.Int64
}

// Stats is a pool's state, for metrics.
type Stats struct {
	Size       int   // connections at most (Config.Size)
	InUse      int   // slots carrying a mail now, or dialling for one
	Open       int64 // connections dialled and kept (idle or in use)
	Dials      int64 // dial attempts so far, handshake included
	DialErrors int64 // dial attempts that failed
}

// Stats reads the pool's state. It costs the senders nothing: InUse is
// read from the idle channel's length, the rest are counters kept when
// a connection is dialled or closed.
func (p *Pool) Stats() Stats {
	return Stats{Size: p.cfg.Size, InUse: p.cfg.Size - len(p.conns), Open: p.open.Load(),
		Dials: p.dials.Load(), DialErrors: p.dialErrors.Load()}
}

// NewPool makes a pool; it dials lazily.
func NewPool(cfg Config) *Pool {
	if cfg.Size <= 0 {
		// 16: into Postfix's smtp-sink on 2 cores a send went at 9,391
		// mails/s (median of 3) with 16 connections, 8,113 with 8
		// (docs/performance.md).
		cfg.Size = 16
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.LocalName == "" {
		cfg.LocalName = "localhost"
	}
	p := &Pool{cfg: cfg, conns: make(chan *conn, cfg.Size)}
	for range cfg.Size {
		p.conns <- nil
	}
	return p
}

// Send hands m to the server on a pooled connection.
func (p *Pool) Send(ctx context.Context, m *Message) Result { return p.send(ctx, m, nil) }

// send is Send, which once it has a connection's slot gives it back
// untried (errRelayOut) when usable (nil: always) says the server is not
// to be used now. A kept connection the server had closed meanwhile
// (an idle timeout: the mail failed before its recipient and the
// connection broke) is no failure of the server's: the mail is tried
// again on the next connection, up to the pool's size.
func (p *Pool) send(ctx context.Context, m *Message, usable func() bool) Result {
	for tries := 0; ; tries++ {
		res, stale := p.sendOnce(ctx, m, usable)
		if !stale || tries >= p.cfg.Size || ctx.Err() != nil {
			return res
		}
	}
}

// sendOnce is one try of send; stale says it failed before the recipient
// on a kept connection that broke.
func (p *Pool) sendOnce(ctx context.Context, m *Message, usable func() bool) (res Result, stale bool) {
	var c *conn
	select {
	case c = <-p.conns:
	case <-ctx.Done():
		return Result{Class: Temporary, Err: ctx.Err()}, false
	}
	if usable != nil && !usable() {
		p.conns <- c
		return Result{Class: Temporary, Stage: StageConnect, Err: errRelayOut}, false
	}
	kept := c != nil
	if c == nil {
		var err error
		p.dials.Add(1)
		if c, err = p.dial(ctx); err != nil {
			p.dialErrors.Add(1)
			p.conns <- nil
			return classify(fmt.Errorf("smtp: dial %s: %w", p.cfg.Addr, err)), false
		}
		p.open.Add(1)
	}
	res = c.send(m, p.cfg.Timeout)
	if c.broken {
		stale = kept && res.Class != Accepted && res.Stage <= StageSender
		c.client.Close()
		p.open.Add(-1)
		c = nil // the slot is redialled by the next send
	}
	p.conns <- c
	return res, stale
}

// Close says QUIT on the idle connections and closes them.
func (p *Pool) Close() error {
	for range p.cfg.Size {
		if c := <-p.conns; c != nil {
			c.client.UpdateDeadline(p.cfg.Timeout)
			c.client.Quit()
			c.client.Close()
			p.open.Add(-1)
		}
	}
	return nil
}

// conn is one kept connection.
type conn struct {
	client     *gsmtp.Client
	pipelining bool
	smtputf8   bool   // the server offers SMTPUTF8
	eightbit   bool   // the server offers 8BITMIME
	broken     bool   // a network failure: close, do not reuse
	data       []byte // the dot-stuffed message being sent, reused
	cmd        []byte // the MAIL FROM line being sent, reused
}

func (p *Pool) dial(ctx context.Context) (*conn, error) {
	host, _, err := net.SplitHostPort(p.cfg.Addr)
	if err != nil {
		return nil, err
	}
	tlsConfig := p.cfg.TLSConfig
	if tlsConfig == nil {
		tlsConfig = &tls.Config{ServerName: host}
	}
	d := &net.Dialer{Timeout: p.cfg.Timeout}
	var nc net.Conn
	if p.cfg.Security == TLS {
		nc, err = (&tls.Dialer{NetDialer: d, Config: tlsConfig}).DialContext(ctx, "tcp", p.cfg.Addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", p.cfg.Addr)
	}
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(time.Now().Add(p.cfg.Timeout))
	client, err := gsmtp.NewClient(nc, host)
	if err != nil {
		nc.Close()
		return nil, err
	}
	fail := func(err error) (*conn, error) {
		client.Close()
		return nil, err
	}
	if err := client.Hello(p.cfg.LocalName); err != nil {
		return fail(err)
	}
	if p.cfg.Security == StartTLS {
		if ok, _ := client.Extension("STARTTLS"); !ok {
			return fail(errors.New("the server does not offer STARTTLS"))
		}
		if err := client.StartTLS(tlsConfig); err != nil {
			return fail(err)
		}
	}
	if p.cfg.Username != "" {
		auth := gsmtp.PlainAuth("", p.cfg.Username, p.cfg.Password, host, p.cfg.Security == Plain)
		if err := client.Auth(auth); err != nil {
			return fail(err)
		}
	}
	pipelining, _ := client.Extension("PIPELINING")
	smtputf8, _ := client.Extension("SMTPUTF8")
	eightbit, _ := client.Extension("8BITMIME")
	return &conn{client: client, pipelining: pipelining && !p.cfg.NoPipelining, smtputf8: smtputf8, eightbit: eightbit}, nil
}

// send runs one mail transaction. After a refusal the transaction is
// reset (RSET) so the connection stays usable; after a network failure
// the connection is marked broken.
func (c *conn) send(m *Message, timeout time.Duration) Result {
	if strings.ContainsAny(m.From, "\r\n") || strings.ContainsAny(m.To, "\r\n") {
		return Result{Class: Permanent, Stage: StageRecipient, Err: errors.New("smtp: an envelope address holds a line break")}
	}
	utf8 := m.needsUTF8()
	if utf8 && !c.smtputf8 {
		return Result{Class: Permanent, Stage: StageData, Err: ErrNoSMTPUTF8}
	}
	c.cmd = c.mailFrom(c.cmd[:0], m.From, utf8)
	if err := c.client.UpdateDeadline(timeout); err != nil {
		c.broken = true
		return classify(err)
	}
	var err error
	if c.pipelining {
		err = c.pipelined(m)
	} else {
		err = c.stepwise(m)
	}
	res := classify(err)
	var tp *textproto.Error
	switch {
	case err == nil:
	case errors.As(err, &tp):
		// A refusal: the connection is fine, the transaction is not.
		if rerr := c.client.Reset(); rerr != nil {
			c.broken = true
		}
	default:
		c.broken = true
	}
	return res
}

// pipelined writes MAIL FROM, RCPT TO and DATA in one flush and reads
// their three replies, then the body and its reply.
func (c *conn) pipelined(m *Message) error {
	t := c.client.Text
	t.W.Write(c.cmd)
	t.W.WriteString("RCPT TO:<")
	t.W.WriteString(m.To)
	t.W.WriteString(">\r\nDATA\r\n")
	if err := t.W.Flush(); err != nil {
		return err
	}
	// Every reply is read, so the next transaction starts in step; the
	// first refusal is the one that counts.
	_, _, mailErr := t.ReadResponse(25)
	_, _, rcptErr := t.ReadResponse(25)
	_, _, dataErr := t.ReadResponse(354)
	mailErr, rcptErr, dataErr = at(StageSender, mailErr), at(StageRecipient, rcptErr), at(StageData, dataErr)
	for _, err := range []error{mailErr, rcptErr, dataErr} {
		if err != nil {
			if !isReply(err) {
				// The connection failed reading this reply: the failure
				// is this step's, as step by step (a drop at RCPT TO is
				// the recipient's, counted; one at MAIL FROM is not).
				return err
			}
			if dataErr == nil {
				// DATA was accepted although MAIL or RCPT was not (a server
				// that should not): end the empty message.
				if _, werr := io.WriteString(t.W, ".\r\n"); werr != nil {
					return werr
				}
				t.W.Flush()
				t.ReadResponse(250)
			}
			return err
		}
	}
	return at(StageData, c.body(m))
}

// stepwise is the same transaction a command at a time. The commands are
// written by hand, as pipelined writes them: go-mail's Mail would ask for
// SMTPUTF8 and 8BITMIME whenever the server offers them, and its Data's
// Close wants 250 exactly.
func (c *conn) stepwise(m *Message) error {
	t := c.client.Text
	t.W.Write(c.cmd)
	if err := t.W.Flush(); err != nil {
		return at(StageSender, err)
	}
	if _, _, err := t.ReadResponse(250); err != nil { // 250 exactly, as go-mail's Mail read it
		return at(StageSender, err)
	}
	t.W.WriteString("RCPT TO:<")
	t.W.WriteString(m.To)
	t.W.WriteString(">\r\n")
	if err := t.W.Flush(); err != nil {
		return at(StageRecipient, err)
	}
	if _, _, err := t.ReadResponse(25); err != nil {
		return at(StageRecipient, err)
	}
	t.W.WriteString("DATA\r\n")
	if err := t.W.Flush(); err != nil {
		return at(StageData, err)
	}
	if _, _, err := t.ReadResponse(354); err != nil {
		return at(StageData, err)
	}
	return at(StageData, c.body(m))
}

// mailFrom appends the MAIL FROM line (CRLF included): with SMTPUTF8 when
// the mail needs it, and then BODY=8BITMIME when the server offers it (its
// header holds 8-bit text). A mail that needs neither asks for neither, so
// it goes out as it always did.
func (c *conn) mailFrom(dst []byte, from string, utf8 bool) []byte {
	dst = append(dst, "MAIL FROM:<"...)
	dst = append(dst, from...)
	dst = append(dst, '>')
	if utf8 {
		if c.eightbit {
			dst = append(dst, " BODY=8BITMIME"...)
		}
		dst = append(dst, " SMTPUTF8"...)
	}
	return append(dst, "\r\n"...)
}

// needsUTF8 reports whether m needs SMTPUTF8: an envelope address or its
// header holds a byte past ASCII (a UTF-8 address, RFC 6532). The body is
// not looked at: mailroom's bodies are quoted-printable. The header is
// read eight bytes at a time, as this runs for every mail.
func (m *Message) needsUTF8() bool {
	if !ascii(m.From) || !ascii(m.To) {
		return true
	}
	head := m.Data
	if i := bytes.Index(head, []byte("\r\n\r\n")); i >= 0 {
		head = head[:i]
	}
	for len(head) >= 8 {
		if binary.LittleEndian.Uint64(head)&0x8080808080808080 != 0 {
			return true
		}
		head = head[8:]
	}
	for _, c := range head {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// body writes the message, dot-stuffed, and reads the server's verdict:
// any 2xx is accepted (RFC 5321 4.2.1: the first digit decides; a 251
// taken for a failure was sent again, up to five times).
// The stuffed message is assembled first, so that bufio hands it to the
// socket in one write (line by line, a 4 KB mail took two).
func (c *conn) body(m *Message) error {
	t := c.client.Text
	c.data = appendDotStuffed(c.data[:0], m.Data)
	t.W.Write(c.data)
	if cap(c.data) > 1<<20 {
		c.data = nil // do not keep a rare huge mail's buffer
	}
	if err := t.W.Flush(); err != nil {
		return err
	}
	_, _, err := t.ReadResponse(2)
	return err
}

// appendDotStuffed appends data as the DATA section (RFC 5321 4.5.2):
// every line ending in CRLF (a bare LF becomes CRLF), a line starting
// with "." gets another, then the closing ".". It does what textproto's
// DotWriter does, a line at a time instead of a byte at a time (a third
// of the client's CPU per mail was DotWriter's).
func appendDotStuffed(dst, data []byte) []byte {
	dst = slices.Grow(dst, len(data)+len(data)/64+5)
	if len(data) == 0 {
		dst = append(dst, "\r\n"...) // an empty message is one empty line
	}
	for len(data) > 0 {
		line := data
		rest := []byte(nil)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, rest = data[:i], data[i+1:]
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) > 0 && line[0] == '.' {
			dst = append(dst, '.')
		}
		dst = append(dst, line...)
		dst = append(dst, "\r\n"...)
		data = rest
	}
	return append(dst, ".\r\n"...)
}

func isReply(err error) bool {
	var tp *textproto.Error
	return errors.As(err, &tp)
}
