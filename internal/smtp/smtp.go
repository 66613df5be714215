// Package smtp hands mails to an SMTP server: a pool of kept connections
// dialled through go-mail's smtp.Client (EHLO, STARTTLS and AUTH once per
// connection), MAIL FROM, RCPT TO and DATA written in one flush and their
// replies read together when the server offers PIPELINING (RFC 2920), a
// waiting mail's envelope written behind the message under way (one write
// and one round trip a mail while mails wait for connections), no NOOP or
// RSET per message, and every outcome sorted once into accepted,
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
	"sync"
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
	// chain takes a mail from a sender waiting for a connection to one
	// that is sending: its envelope goes behind the message under way
	// (RFC 2920 lets a message's content lead a group of commands), and
	// the connection passes to its sender once that message's reply is
	// read (chained).
	chain chan *chained

	// For Stats, touched only when a connection is dialled or closed,
	// and chained when a connection passes to a chained mail's sender.
	open, dials, dialErrors, chained atomic.Int64
}

// Stats is a pool's state, for metrics.
type Stats struct {
	Size       int   // connections at most (Config.Size)
	InUse      int   // slots carrying a mail now, or dialling for one
	Open       int64 // connections dialled and kept (idle or in use)
	Dials      int64 // dial attempts so far, handshake included
	DialErrors int64 // dial attempts that failed
	Chained    int64 // mails sent chained behind another on its connection
}

// Stats reads the pool's state. It costs the senders nothing: InUse is
// read from the idle channel's length, the rest are counters kept when
// a connection is dialled or closed.
func (p *Pool) Stats() Stats {
	return Stats{Size: p.cfg.Size, InUse: p.cfg.Size - len(p.conns), Open: p.open.Load(),
		Dials: p.dials.Load(), DialErrors: p.dialErrors.Load(), Chained: p.chained.Load()}
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
	p := &Pool{cfg: cfg, conns: make(chan *conn, cfg.Size), chain: make(chan *chained)}
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
	chain := p.chain
	for tries := 0; ; tries++ {
		res, stale := p.sendOnce(ctx, m, usable, chain)
		if errors.Is(res.Err, errChainBroken) && ctx.Err() == nil {
			// Not tried: the mail it was chained behind broke its
			// connection. Again, on a connection of its own (so never
			// behind another failing mail twice), not counted as a try.
			chain, tries = nil, tries-1
			continue
		}
		if !stale || tries >= p.cfg.Size || ctx.Err() != nil {
			return res
		}
	}
}

// sendOnce is one try of send; stale says it failed before the recipient
// on a kept connection that broke. It waits for an idle connection, or
// for a connection under way to take its mail behind the one it is
// sending (chained): on a server that offers PIPELINING a connection
// with senders waiting goes from mail to mail with one write and one
// round trip each, not two.
func (p *Pool) sendOnce(ctx context.Context, m *Message, usable func() bool, chain chan *chained) (res Result, stale bool) {
	var c *conn
	ch := chainedPool.Get().(*chained)
	ch.ctx, ch.m, ch.usable = ctx, m, usable
	select {
	case c = <-p.conns:
		ch.release()
	case chain <- ch: // nil: not chained
		// Taken, the mail waits for the message before it (at most the
		// pool's Timeout).
		<-ch.done
		res, stale, c = ch.res, ch.stale, ch.c
		ch.release()
		if c == nil {
			return res, stale // not sent, or refused before a write
		}
		if err := ctx.Err(); err != nil {
			// Its context ended meanwhile: it is not sent. Its envelope
			// went out, so the connection is given up (the server drops
			// a transaction whose connection ends before its message).
			p.drop(c)
			return Result{Class: Temporary, Err: err}, false
		}
		return p.run(c, m, true, true)
	case <-ctx.Done():
		ch.release()
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
	return p.run(c, m, false, kept)
}

// run sends m on c (written: its envelope went out already, chained
// behind the mail before) and then gives c back, or passes it to the
// sender of the mail chained behind m.
func (p *Pool) run(c *conn, m *Message, written, kept bool) (res Result, stale bool) {
	res, next := c.send(m, p.cfg.Timeout, written, p.chain)
	if c.broken {
		stale = kept && res.Class != Accepted && res.Stage <= StageSender
		p.drop(c)
		if next != nil {
			// Its envelope went out on a connection that broke before
			// any reply to it: not sent, tried again on another.
			next.finish(Result{Class: Temporary, Stage: StageSender, Err: errChainBroken}, true)
		}
		return res, stale
	}
	if next != nil {
		p.chained.Add(1)
		next.c = c
		next.done <- struct{}{}
		return res, false
	}
	p.conns <- c
	return res, false
}

// drop closes c and frees its slot, which the next send redials.
func (p *Pool) drop(c *conn) {
	c.client.Close()
	p.open.Add(-1)
	p.conns <- nil
}

// chained is a mail a sender hands to a connection under way, and what
// became of it: c set, the connection passes to its sender with the
// mail's envelope written and its replies to read; else res (and stale)
// is its outcome.
type chained struct {
	ctx    context.Context
	m      *Message
	usable func() bool
	done   chan struct{} // one value: the mail's sender goes on
	res    Result
	stale  bool
	c      *conn
}

func (ch *chained) finish(res Result, stale bool) {
	ch.res, ch.stale = res, stale
	ch.done <- struct{}{}
}

// release gives ch back to chainedPool, emptied, once no holder has it.
func (ch *chained) release() {
	*ch = chained{done: ch.done}
	chainedPool.Put(ch)
}

var chainedPool = sync.Pool{New: func() any { return &chained{done: make(chan struct{}, 1)} }}

// errChainBroken is the outcome of a mail whose envelope was chained
// behind another's message on a connection that then broke.
var errChainBroken = errors.New("smtp: the connection broke before the chained mail's replies")

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

// send runs one mail transaction; written says its MAIL FROM, RCPT TO and
// DATA went out already (chained behind the mail before), their replies
// still to read. After a refusal the transaction is reset (RSET) so the
// connection stays usable, unless a mail is chained behind (a message's
// final reply ends its transaction; an RSET would go after the chained
// DATA); after a network failure the connection is marked broken. next is
// a mail taken from chain while this one's message went (pipelining
// only), its envelope written behind the message and its replies unread.
func (c *conn) send(m *Message, timeout time.Duration, written bool, chain <-chan *chained) (res Result, next *chained) {
	if !written {
		utf8, refused, ok := c.refuses(m)
		if ok {
			return refused, nil
		}
		c.cmd = c.mailFrom(c.cmd[:0], m.From, utf8)
	}
	if err := c.client.UpdateDeadline(timeout); err != nil {
		c.broken = true
		return classify(err), nil
	}
	var err error
	if c.pipelining {
		next, err = c.pipelined(m, written, chain)
	} else {
		err = c.stepwise(m)
	}
	res = classify(err)
	var tp *textproto.Error
	switch {
	case err == nil:
	case errors.As(err, &tp):
		// A refusal: the connection is fine, the transaction is not.
		if next != nil {
			// No RSET behind a chained envelope; a 421 closes the
			// connection (RFC 5321 3.8): the chained mail goes on another,
			// untried.
			c.broken = tp.Code == 421
			break
		}
		if rerr := c.client.Reset(); rerr != nil {
			c.broken = true
		}
	default:
		c.broken = true
	}
	return res, next
}

// refuses says whether m needs SMTPUTF8, and, with ok, the outcome of a
// mail this connection cannot take, sent nowhere: a line break in its
// envelope, or a need of SMTPUTF8 the server does not meet.
func (c *conn) refuses(m *Message) (utf8 bool, res Result, ok bool) {
	if strings.ContainsAny(m.From, "\r\n") || strings.ContainsAny(m.To, "\r\n") {
		return false, Result{Class: Permanent, Stage: StageRecipient, Err: errors.New("smtp: an envelope address holds a line break")}, true
	}
	utf8 = m.needsUTF8()
	if utf8 && !c.smtputf8 {
		return utf8, Result{Class: Permanent, Stage: StageData, Err: ErrNoSMTPUTF8}, true
	}
	return utf8, Result{}, false
}

// refusesChained is refuses for a mail taken from chain, which first
// goes nowhere when its context is done or its relay is out (usable).
func (c *conn) refusesChained(ch *chained) (utf8 bool, res Result, ok bool) {
	if err := ch.ctx.Err(); err != nil {
		return false, Result{Class: Temporary, Err: err}, true
	}
	if ch.usable != nil && !ch.usable() {
		return false, Result{Class: Temporary, Stage: StageConnect, Err: errRelayOut}, true
	}
	return c.refuses(ch.m)
}

// appendRcptData appends the RCPT TO line for to and the DATA line: with
// the MAIL FROM line before them, a pipelined envelope.
func appendRcptData(dst []byte, to string) []byte {
	dst = append(dst, "RCPT TO:<"...)
	dst = append(dst, to...)
	return append(dst, ">\r\nDATA\r\n"...)
}

// pipelined writes MAIL FROM, RCPT TO and DATA in one flush (unless
// written: chained, they went already) and reads their three replies,
// then writes the message and, when a sender waits on chain, that
// sender's envelope behind it in the same flush, and reads the message's
// reply.
func (c *conn) pipelined(m *Message, written bool, chain <-chan *chained) (*chained, error) {
	t := c.client.Text
	if !written {
		t.W.Write(appendRcptData(c.cmd, m.To))
		if err := t.W.Flush(); err != nil {
			return nil, err
		}
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
				return nil, err
			}
			if dataErr == nil {
				// DATA was accepted although MAIL or RCPT was not (a server
				// that should not): end the empty message.
				if _, werr := io.WriteString(t.W, ".\r\n"); werr != nil {
					return nil, werr
				}
				t.W.Flush()
				t.ReadResponse(250)
			}
			return nil, err
		}
	}
	// The message and the chained envelope go in one buffer, so in one
	// write (bufio writes a buffer longer than its own straight through).
	c.data = appendDotStuffed(c.data[:0], m.Data)
	var next *chained
	select {
	case ch := <-chain:
		if utf8, refused, ok := c.refusesChained(ch); ok {
			ch.finish(refused, false)
		} else {
			c.data = appendRcptData(c.mailFrom(c.data, ch.m.From, utf8), ch.m.To)
			next = ch
		}
	default:
	}
	c.writeData()
	return next, at(StageData, c.reply())
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

// body writes the message, dot-stuffed, and reads the server's verdict.
// The stuffed message is assembled first, so that bufio hands it to the
// socket in one write (line by line, a 4 KB mail took two).
func (c *conn) body(m *Message) error {
	c.data = appendDotStuffed(c.data[:0], m.Data)
	c.writeData()
	return c.reply()
}

// writeData writes c.data, unflushed.
func (c *conn) writeData() {
	c.client.Text.W.Write(c.data)
	if cap(c.data) > 1<<20 {
		c.data = nil // do not keep a rare huge mail's buffer
	}
}

// reply flushes what is written and reads the message's reply: any 2xx
// is accepted (RFC 5321 4.2.1: the first digit decides; a 251 taken for a
// failure was sent again, up to five times).
func (c *conn) reply() error {
	t := c.client.Text
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
