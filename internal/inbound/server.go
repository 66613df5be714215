package inbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/emersion/go-smtp"
	"golang.org/x/time/rate"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

// Config is the listener's setting (docs/bounces.md).
type Config struct {
	// VERP reads the return paths bounces+{token}@VERP.Domain; a Domain
	// of "" takes no bounce mail.
	VERP mail.VERP
	// Mailto is UNSUBSCRIBE_MAILTO: a mail to it whose subject holds
	// unsubscribe-{token} unsubscribes; "" takes none.
	Mailto string
	// Signer opens the unsubscribe tokens (the mailto's, and those of the
	// List-Unsubscribe quoted in a report).
	Signer *mail.TokenSigner

	MaxBytes      int64 // a message's size; 4 MiB when 0
	MaxRecipients int   // RCPT TO per message; 10 when 0
	// MaxConns caps the connections served at once, MaxConnsPerIP those
	// from one address (an IPv6 /64 counts as one; loopback is not
	// special). A connection past MaxConnsPerIP is answered 421 at once
	// and closed. One past MaxConns takes the slot of a connection that
	// has said no command yet, else of one idle between transactions
	// (which is answered 421 and closed), and is answered 421 itself only
	// when every connection is inside a transaction: connections that say
	// nothing never keep a sender out. 1,000 and 10 when 0.
	MaxConns      int
	MaxConnsPerIP int
	// GreetingTimeout is how long a connection has from the greeting to
	// its first command; 5 s when 0. Then Timeout applies.
	GreetingTimeout time.Duration
	Timeout         time.Duration // each later command's read (a message's data too), each reply's write; 1 min when 0
	SessionTimeout  time.Duration // a connection's whole life; 10 min when 0
	Keep            time.Duration // how long kept messages stay; 30 days when 0
	// KeepPerHour caps the messages kept for inspection (the port takes
	// mail from anyone): at most this many an hour, a tenth of them at
	// once; past it they are dropped and counted. 1,000 when 0.
	KeepPerHour int
}

func (c Config) withDefaults() Config {
	if c.MaxBytes <= 0 {
		c.MaxBytes = 4 << 20
	}
	if c.MaxRecipients <= 0 {
		c.MaxRecipients = 10
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 1000
	}
	if c.MaxConnsPerIP <= 0 {
		c.MaxConnsPerIP = 10
	}
	if c.GreetingTimeout <= 0 {
		c.GreetingTimeout = 5 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = time.Minute
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Minute
	}
	if c.Keep <= 0 {
		c.Keep = 30 * 24 * time.Hour
	}
	if c.KeepPerHour <= 0 {
		c.KeepPerHour = 1000
	}
	return c
}

// Server is the inbound SMTP listener: it takes mail for the return paths
// and the unsubscribe mailto only, and acts on each message before it
// answers its DATA (a 4xx when the database failed, so the sender tries
// again).
type Server struct {
	db    *postgres.DB
	log   *slog.Logger
	cfg   Config
	srv   *smtp.Server
	parse func([]byte) (*Report, error) // Parse; tests make it panic
	// evictGrace is how long a connection that has said nothing yet is
	// spared while an idle one can make way (limitListener.grace): a
	// second; tests set it before Listen.
	evictGrace time.Duration

	mu       sync.Mutex
	ln       *limitListener
	closing  bool
	busy     sync.WaitGroup // messages being read or acted on
	stopKeep chan struct{}
	kept     sync.WaitGroup

	keepLimit   *rate.Limiter // Config.KeepPerHour
	keepDropped atomic.Int64  // messages not kept since the last warning
	keepWarned  atomic.Int64  // when that warning was logged (unix seconds)

	cuts      cuts             // connections cut or refused, logged once a minute
	errLogged atomic.Int64     // when go-smtp's last unexpected error was logged in full (unix seconds)
	now       func() time.Time // time.Now; tests move it
	cutSeen   func(cutReason)  // nil; tests learn of each cut counted
}

// New makes a listener over d; Listen starts it.
func New(d *postgres.DB, log *slog.Logger, cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{db: d, log: log, cfg: cfg, parse: Parse, evictGrace: time.Second, stopKeep: make(chan struct{}), now: time.Now,
		keepLimit: rate.NewLimiter(rate.Limit(float64(cfg.KeepPerHour)/3600), max(1, cfg.KeepPerHour/10))}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		lc, _ := c.Conn().(*limitConn)
		return &session{s: s, remote: c.Conn().RemoteAddr().String(), conn: lc}, nil
	}))
	s.srv.Domain = cfg.VERP.Domain
	if s.srv.Domain == "" {
		_, s.srv.Domain, _ = strings.Cut(cfg.Mailto, "@")
	}
	s.srv.MaxMessageBytes = cfg.MaxBytes
	s.srv.MaxRecipients = cfg.MaxRecipients
	s.srv.ReadTimeout = cfg.Timeout
	s.srv.WriteTimeout = cfg.Timeout
	s.srv.ErrorLog = errorLog{s}
	return s
}

// Listen starts serving on addr (host:port; port 0 picks a free one) and
// answers the address it listens on.
func (s *Server) Listen(addr string) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ll := &limitListener{Listener: l, max: s.cfg.MaxConns, perIP: s.cfg.MaxConnsPerIP, greeting: s.cfg.GreetingTimeout, grace: s.evictGrace,
		life: s.cfg.SessionTimeout, domain: s.srv.Domain, cut: s.cut, from: map[netip.Addr]int{}, conns: map[*limitConn]struct{}{}}
	s.mu.Lock()
	s.ln = ll
	s.mu.Unlock()
	go func() {
		if err := s.srv.Serve(ll); err != nil && !errors.Is(err, net.ErrClosed) {
			s.log.Error("inbound SMTP listener stopped", "err", err)
		}
	}()
	s.kept.Add(2)
	go s.prune()
	go s.reportEvery(10 * time.Second)
	return l.Addr(), nil
}

// Shutdown stops taking connections and messages (a message begun after
// it is answered 421: its sender tries again), waits until the messages
// in hand are acted on or ctx ends, then closes every connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	ln := s.ln
	s.mu.Unlock()
	close(s.stopKeep)
	if ln != nil {
		ln.Close()
	}
	done := make(chan struct{})
	go func() {
		s.busy.Wait()
		s.kept.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.srv.Close()
	return err
}

// prune deletes the kept messages past Keep, hourly.
func (s *Server) prune() {
	defer s.kept.Done()
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if n, err := s.db.PruneInbound(ctx, s.cfg.Keep); err != nil {
			s.log.Warn("pruning kept inbound messages", "err", err)
		} else if n > 0 {
			s.log.Info("kept inbound messages pruned", "n", n)
		}
		cancel()
		select {
		case <-s.stopKeep:
			return
		case <-t.C:
		}
	}
}

// begin counts a message in hand; false once Shutdown began.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.busy.Add(1)
	return true
}

// rcptKind is what an accepted recipient is.
type rcptKind int

const (
	rcptVERP    rcptKind = iota // bounces+{token}@BOUNCE_DOMAIN: a delivery's return path
	rcptReports                 // bounces@ or postmaster@BOUNCE_DOMAIN: feedback loops, the postmaster
	rcptMailto                  // UNSUBSCRIBE_MAILTO
)

type rcpt struct {
	addr     string
	kind     rcptKind
	send, id int64 // rcptVERP: the delivery
}

// Replies to RCPT TO and DATA.
var (
	errNoMailbox = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such recipient here"}
	errNoRelay   = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Relaying denied"}
	errStopping  = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "Shutting down, try again later"}
	errTryLater  = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Temporary failure, try again later"}
	errEvicted   = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "Too many connections, closing an idle one, try again later"}
)

// accept sorts a RCPT TO address: the return paths (with a token that
// opens) and the bounces mailbox of BOUNCE_DOMAIN, the unsubscribe
// mailto, and postmaster (RFC 5321 4.5.1) at either domain (go-smtp's
// parser refuses a bare <postmaster>); anything else is refused.
func (s *Server) accept(addr string) (rcpt, error) {
	a := strings.ToLower(strings.Trim(strings.TrimSpace(addr), "<>"))
	local, domain, _ := strings.Cut(a, "@")
	mailto := strings.ToLower(s.cfg.Mailto)
	_, mailtoDomain, _ := strings.Cut(mailto, "@")
	verp := s.cfg.VERP.On() && domain == s.cfg.VERP.Domain
	ours := verp || (mailtoDomain != "" && domain == mailtoDomain)
	switch {
	case mailto != "" && a == mailto:
		return rcpt{addr: a, kind: rcptMailto}, nil
	case (ours && local == "postmaster") || (verp && local == "bounces"):
		return rcpt{addr: a, kind: rcptReports}, nil
	case verp:
		if send, id, ok := s.cfg.VERP.Parse(a); ok {
			return rcpt{addr: a, kind: rcptVERP, send: send, id: id}, nil
		}
		return rcpt{}, errNoMailbox
	case ours:
		return rcpt{}, errNoMailbox
	}
	return rcpt{}, errNoRelay
}

// session is one connection's transaction.
type session struct {
	s      *Server
	remote string
	conn   *limitConn // its connection (nil when not from Listen), told when a transaction begins and ends
	from   string
	rcpts  []rcpt
}

// Reset ends a transaction: go-smtp calls it on RSET, a new EHLO, and
// after it wrote the reply to a message's data.
func (se *session) Reset() {
	se.from, se.rcpts = "", nil
	se.conn.end()
}

func (se *session) Logout() error { return nil }

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if !se.conn.begin() {
		return errEvicted
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	r, err := se.s.accept(to)
	if err != nil {
		se.s.log.Debug("inbound recipient refused", "rcpt", to, "remote", se.remote)
		return err
	}
	se.rcpts = append(se.rcpts, r)
	return nil
}

// Data reads the message (go-smtp refuses it past MaxBytes) and acts on
// it for each recipient. A database failure answers 451: nothing is lost,
// the sender tries again (a hard bounce or complaint counts once anyway).
func (se *session) Data(r io.Reader) error {
	s := se.s
	if !s.begin() {
		io.Copy(io.Discard, r)
		return errStopping
	}
	defer s.busy.Done()
	raw, err := io.ReadAll(r)
	if err != nil {
		return err // too large (552), or the connection broke
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, rc := range se.rcpts {
		if err := s.handle(ctx, se.from, se.remote, rc, raw); err != nil {
			s.log.Error("inbound message not recorded: answered 451", "rcpt", rc.addr, "remote", se.remote, "err", err)
			return errTryLater
		}
	}
	return nil
}

// notKept counts a message dropped past Config.KeepPerHour, and warns
// at most once a minute with the count since the last warning.
func (s *Server) notKept(rcpt, reason string) {
	n := s.keepDropped.Add(1)
	now := time.Now().Unix()
	if last := s.keepWarned.Load(); now-last >= 60 && s.keepWarned.CompareAndSwap(last, now) {
		s.keepDropped.Add(-n)
		s.log.Warn("inbound messages not kept: more than INBOUND_KEEP_PER_HOUR", "dropped", n, "per_hour", s.cfg.KeepPerHour,
			"last_rcpt", rcpt, "last_reason", reason)
	}
}

// handle acts on one message for one recipient, or keeps it for
// inspection; only a database failure is an error. A panic of the parser
// is recovered and the message kept with its stack's first lines.
func (s *Server) handle(ctx context.Context, from, remote string, rc rcpt, raw []byte) error {
	keep := func(reason string, send, id int64) error {
		if !s.keepLimit.Allow() {
			s.notKept(rc.addr, reason)
			return nil
		}
		_, err := s.db.KeepInbound(ctx, mail.InboundMessage{MailFrom: from, Rcpt: rc.addr, Reason: reason, SendID: send, DeliveryID: id,
			Size: len(raw), Raw: raw})
		if err == nil {
			s.log.Info("inbound message kept for inspection", "rcpt", rc.addr, "reason", reason, "size", len(raw))
		}
		return err
	}
	if rc.kind == rcptMailto {
		return s.unsubscribe(ctx, rc, raw, keep)
	}
	rep, reason := s.safeParse(raw)
	if rep == nil {
		return keep(reason, rc.send, rc.id)
	}
	if rep.Format == FormatNone && rep.AutoReply {
		// An out-of-office note to the return path (RFC 3834): nothing
		// to act on, and too common to keep.
		s.log.Debug("inbound auto-reply dropped", "rcpt", rc.addr, "send_id", rc.send)
		return nil
	}
	f, why := s.feedback(rc, rep)
	if f == nil {
		return keep(why, rc.send, rc.id)
	}
	res, err := s.db.RecordFeedback(ctx, *f)
	if err != nil {
		return err
	}
	if !res.Found {
		return keep(fmt.Sprintf("%s for delivery %d of send %d: no such delivery, or not to the address the report names", f.Kind, f.DeliveryID, f.SendID),
			f.SendID, f.DeliveryID)
	}
	s.log.Info("inbound report acted on", "kind", f.Kind.String(), "via", f.Via, "named_by", f.NamedBy, "user_id", res.UserID,
		"send_id", f.SendID, "delivery_id", f.DeliveryID, "status", f.Status, "counted", res.Counted, "remote", remote)
	return nil
}

// safeParse is s.parse with a panic turned into a reason to keep the
// message.
func (s *Server) safeParse(raw []byte) (rep *Report, reason string) {
	defer func() {
		if p := recover(); p != nil {
			stack := string(debug.Stack())
			if len(stack) > 300 {
				stack = stack[:300]
			}
			s.log.Error("inbound parser panicked: message kept", "panic", fmt.Sprint(p))
			rep, reason = nil, fmt.Sprintf("parser panic: %v\n%s", p, stack)
		}
	}()
	rep, err := s.parse(raw)
	if err != nil {
		return nil, "unparseable: " + err.Error()
	}
	return rep, ""
}

// feedback is what a report says about which delivery, or why nothing
// can be done with it. A report is acted on only through what an
// outsider cannot make (docs/bounces.md): the delivery is the one the
// recipient's return path names; else the one of the return path quoted
// in the report (the original's Return-Path, an ARF's Original-Mail-From),
// acted on only when its address is one the report names, if it names
// any; else the one the quoted Message-ID names when its MAC opens (it covers
// the domain too), acted on only when its address is one the report names
// (or its quoted List-Unsubscribe token's). A report about more than one
// recipient acts on none: a mail of ours has one.
func (s *Server) feedback(rc rcpt, rep *Report) (*mail.Feedback, string) {
	f := &mail.Feedback{Via: string(rep.Format)}
	switch rep.Format {
	case FormatNone:
		return nil, "not a report (no delivery-status or feedback-report part, no bounce in plain words)"
	case FormatARF:
		if !complaint(rep.Feedback.Type) {
			return nil, fmt.Sprintf("feedback report of type %q: not a complaint", rep.Feedback.Type)
		}
		f.Kind, f.Reason = mail.Complaint, rep.Feedback.Type
	default:
		r, ok := failure(rep.Recipients)
		if !ok {
			return nil, "delivery status notification without a failed or delayed recipient"
		}
		f.Kind, f.Status, f.Reason = mail.SoftBounce, r.Status, r.Diagnostic
		if r.Action == "failed" && hard(r.Status) {
			f.Kind = mail.HardBounce
		}
		if f.Reason == "" {
			f.Reason = r.Status
		}
	}
	if n := recipientCount(rep); n > 1 {
		return nil, fmt.Sprintf("report about %d recipients: a mail of ours has one, so it names no delivery", n)
	}
	switch {
	case rc.kind == rcptVERP:
		f.SendID, f.DeliveryID, f.NamedBy = rc.send, rc.id, "return path"
	default:
		// The quoted message's Return-Path, or the envelope sender a
		// feedback report names (Original-Mail-From). It is signed, but
		// whoever received the mail has it: when the report names
		// addresses, the delivery's must be one of them (a provider that
		// redacts them names none).
		if send, id, ok := s.cfg.VERP.Parse(rep.Original.ReturnPath); ok {
			f.SendID, f.DeliveryID, f.NamedBy, f.Match = send, id, "quoted return path", s.named(rep, send)
			break
		}
		if send, id, ok := s.cfg.VERP.Parse(rep.Feedback.MailFrom); ok {
			f.SendID, f.DeliveryID, f.NamedBy, f.Match = send, id, "original mail from", s.named(rep, send)
			break
		}
		var send, id int64
		ok := s.cfg.Signer != nil
		if ok {
			send, id, ok = s.cfg.Signer.OpenMessageID(rep.Original.MessageID)
		}
		if !ok {
			if unsignedMessageID(rep.Original.MessageID) {
				return nil, "no delivery named: the quoted Message-ID has the unsigned <send.delivery@domain> form, which anyone can write"
			}
			return nil, "no delivery named: no return path of ours, no Message-ID of ours in the quoted message"
		}
		f.SendID, f.DeliveryID, f.NamedBy = send, id, "message-id"
		f.Match = s.named(rep, send)
		if len(f.Match) == 0 {
			return nil, fmt.Sprintf("delivery %d of send %d named by Message-ID alone: no address in the report to confirm it", id, send)
		}
	}
	return f, ""
}

// recipientCount is how many recipients a report is about: its DSN
// recipients (each by its Final-Recipient, else its Original-Recipient)
// and an ARF's Original-Rcpt-To addresses, each counted once.
func recipientCount(rep *Report) int {
	var seen []string
	add := func(a string) {
		if a != "" && !contains(seen, a) {
			seen = append(seen, a)
		}
	}
	for _, r := range rep.Recipients {
		if r.Final != "" {
			add(r.Final)
		} else {
			add(r.Original)
		}
	}
	for _, a := range rep.Feedback.RcptTo {
		add(a)
	}
	return len(seen)
}

// named are the addresses a report names (lower case): its recipients,
// the quoted To, and the address of the quoted List-Unsubscribe token
// when it was made for send.
func (s *Server) named(rep *Report, send int64) []string {
	var out []string
	add := func(a string) {
		if a != "" && !contains(out, a) {
			out = append(out, a)
		}
	}
	for _, a := range rep.Feedback.RcptTo {
		add(a)
	}
	for _, r := range rep.Recipients {
		add(r.Final)
		add(r.Original)
	}
	add(address(rep.Original.To))
	if s.cfg.Signer != nil {
		for _, tok := range unsubscribeTokens(rep.Original.ListUnsubscribe) {
			if t, ok := s.cfg.Signer.Open(tok); ok && t.SendID == send {
				add(strings.ToLower(string(t.Email)))
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// failure picks the recipient a bounce is about: the first that failed,
// else the first delayed.
func failure(rs []Recipient) (Recipient, bool) {
	for _, want := range []string{"failed", "delayed"} {
		for _, r := range rs {
			if r.Action == want {
				return r, true
			}
		}
	}
	return Recipient{}, false
}

// hard reports whether a failed recipient's status says the address
// itself is no good: class 5, except what concerns the message or the
// mailbox's state rather than the address (5.2.2 mailbox full, 5.2.3
// message too long for it, 5.3.4 message too big, 5.6.x content, 5.7.x
// policy: spam, reputation, authentication), which are soft. The same line
// as at RCPT TO, where 5.7.x fails the mail without suppressing.
func hard(status string) bool {
	if !strings.HasPrefix(status, "5.") {
		return false
	}
	switch {
	case strings.HasPrefix(status, "5.7."), strings.HasPrefix(status, "5.6."),
		status == "5.2.2", status == "5.2.3", status == "5.3.4":
		return false
	}
	return true
}

// complaint reports whether a feedback type is a recipient's complaint
// (abuse, fraud, virus: RFC 5965); not-spam, auth-failure and other are
// kept for inspection.
func complaint(typ string) bool { return typ == "abuse" || typ == "fraud" || typ == "virus" }

// unsignedMessageID reports whether v has the form of the Message-IDs
// mailroom wrote before they were signed, <send.delivery@domain>: a
// report quoting one is kept, not acted on.
func unsignedMessageID(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < 2 || v[0] != '<' || v[len(v)-1] != '>' {
		return false
	}
	left, _, found := strings.Cut(v[1:len(v)-1], "@")
	a, b, dot := strings.Cut(left, ".")
	if !found || !dot {
		return false
	}
	_, err1 := strconv.ParseUint(a, 10, 63)
	_, err2 := strconv.ParseUint(b, 10, 63)
	return err1 == nil && err2 == nil
}

// unsubscribeTokens are the tokens of a List-Unsubscribe value: the
// link's last path segment (…/unsubscribe/{token}) and the mailto's
// subject (unsubscribe-{token}).
func unsubscribeTokens(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		item = strings.Trim(strings.TrimSpace(item), "<>")
		if i := strings.Index(item, mail.UnsubscribePath); i >= 0 {
			out = append(out, tokenText(item[i+len(mail.UnsubscribePath):]))
		} else if i := strings.Index(item, "subject=unsubscribe-"); i >= 0 {
			out = append(out, tokenText(item[i+len("subject=unsubscribe-"):]))
		}
	}
	return out
}

// tokenText is the base64url run at the start of s.
func tokenText(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return s[:i]
		}
	}
	return s
}

// unsubscribe acts on a mail to the List-Unsubscribe mailto: the token of
// its subject (unsubscribe-{token}, as the header's mailto sets it; a
// client may add "Re:" or encode the subject) unsubscribes as one click
// does. Anything else is kept.
func (s *Server) unsubscribe(ctx context.Context, rc rcpt, raw []byte, keep func(string, int64, int64) error) error {
	subject := ""
	if h := headerOf(raw); h != nil {
		subject = decodeHeader(h.Get("Subject"))
	}
	i := strings.Index(strings.ToLower(subject), "unsubscribe-")
	if i < 0 || s.cfg.Signer == nil {
		return keep("mail to the unsubscribe address without unsubscribe-{token} in its subject", 0, 0)
	}
	t, ok := s.cfg.Signer.Open(tokenText(subject[i+len("unsubscribe-"):]))
	if !ok {
		return keep("mail to the unsubscribe address: the subject's token is not valid", 0, 0)
	}
	added, err := s.db.UnsubscribeOneClick(ctx, t, mail.ViaMailto)
	if err != nil {
		return err
	}
	s.log.Info("unsubscribed by mail", "send_id", t.SendID, "automation_id", t.AutomationID, "added", added)
	return nil
}

// errorLog routes go-smtp's own error lines (a connection that ended in
// an error, a panic, an accept error) to Server.smtpError.
type errorLog struct{ s *Server }

func (e errorLog) Printf(format string, v ...any) {
	e.s.smtpError(fmt.Sprintf(format, v...), v)
}

func (e errorLog) Println(v ...any) {
	e.s.smtpError(strings.TrimSpace(fmt.Sprintln(v...)), v)
}

// smtpError counts an error line of go-smtp in the once-a-minute line of
// connections cut: a connection the peer reset or whose pipe broke
// (anyone can make those, and they say nothing wrong here) as
// reset_by_peer, anything else as error, the first of which each minute
// is also logged in full. v are the line's arguments: go-smtp passes the
// connection's address and the error as values.
func (s *Server) smtpError(detail string, v []any) {
	var from netip.Addr
	var err error
	for _, x := range v {
		switch x := x.(type) {
		case net.Addr:
			from = addressKey(x)
		case error:
			err = x
		}
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		s.cut(cutReset, from)
		return
	}
	now := s.now().Unix()
	if last := s.errLogged.Load(); now-last >= 60 && s.errLogged.CompareAndSwap(last, now) {
		s.log.Warn("inbound SMTP", "detail", detail)
	}
	s.cut(cutError, from)
}
