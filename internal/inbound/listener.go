package inbound

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// cutReason is why the listener cut or refused a connection.
type cutReason int

const (
	cutFirstCommand  cutReason = iota // no command within GreetingTimeout of the greeting
	cutIdle                           // later, no command (or message data) within Timeout
	cutLife                           // open longer than SessionTimeout
	cutPerAddress                     // refused: MaxConnsPerIP already open from its address
	cutTotal                          // refused: MaxConns already open, none of them idle
	cutEvictedSilent                  // closed for a newcomer when MaxConns were open: it had said no command
	cutEvictedIdle                    // closed for a newcomer when MaxConns were open: idle between transactions
	cutReset                          // reset by the peer (or its pipe broke): go-smtp's error, counted not logged
	cutError                          // any other error go-smtp logged; the first of each minute is logged in full
	cutReasons
)

// cutNames are the reasons' attribute names in the log line.
var cutNames = [cutReasons]string{"no_command", "idle", "session_timeout", "over_per_ip", "over_total",
	"evicted_silent", "evicted_idle", "reset_by_peer", "error"}

// cuts counts the connections the listener cut or refused, logged at
// most once a minute with the counts since the line before.
type cuts struct {
	n      [cutReasons]atomic.Int64
	last   atomic.Pointer[string] // the address of the last one cut
	logged atomic.Int64           // when the last line was logged (unix seconds)
}

// cut counts a connection cut or refused, and logs the counts if the
// last line is a minute old. from is the zero Addr when unknown.
func (s *Server) cut(why cutReason, from netip.Addr) {
	s.cuts.n[why].Add(1)
	if from.IsValid() {
		a := from.String()
		s.cuts.last.Store(&a)
	}
	s.reportCuts()
	if s.cutSeen != nil {
		s.cutSeen(why)
	}
}

// reportCuts logs the connections cut or refused since the last line,
// if any were and that line is at least a minute old. Called on each
// cut, and every few seconds so the last counts are not held back.
func (s *Server) reportCuts() {
	now := s.now().Unix()
	last := s.cuts.logged.Load()
	if now-last < 60 {
		return
	}
	pending := false
	for i := range s.cuts.n {
		pending = pending || s.cuts.n[i].Load() > 0
	}
	if !pending || !s.cuts.logged.CompareAndSwap(last, now) {
		return
	}
	attrs := make([]any, 0, 2*cutReasons+10)
	for i := range s.cuts.n {
		attrs = append(attrs, cutNames[i], s.cuts.n[i].Swap(0))
	}
	if a := s.cuts.last.Load(); a != nil {
		attrs = append(attrs, "last_remote", *a)
	}
	attrs = append(attrs, "greeting_timeout", s.cfg.GreetingTimeout.String(), "timeout", s.cfg.Timeout.String(),
		"max_conns_per_ip", s.cfg.MaxConnsPerIP, "max_conns", s.cfg.MaxConns)
	s.log.Warn("inbound SMTP connections cut or refused", attrs...)
}

// reportEvery calls reportCuts every few seconds until Shutdown.
func (s *Server) reportEvery(d time.Duration) {
	defer s.kept.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.stopKeep:
			return
		case <-t.C:
			s.reportCuts()
		}
	}
}

// limitListener serves at most max connections at once, at most perIP of
// them from one address (an IPv6 /64 counts as one). A connection past
// perIP is answered 421 at once and closed. One past max takes the slot
// of an idle connection, which is answered 421 and closed (see victim);
// only when none is idle is the newcomer answered 421. So Accept never
// waits, and connections that say nothing never keep a sender out. Each
// connection it hands out must say its first command within greeting,
// and is closed after life.
type limitListener struct {
	net.Listener
	max, perIP     int
	greeting, life time.Duration
	// grace is how long a new connection that has said nothing is passed
	// over by victim while idle ones can make way: a sender says EHLO a
	// round trip after the greeting, and a flood of connections that say
	// EHLO at once must not push out each newcomer before it can.
	grace  time.Duration
	domain string
	cut    func(cutReason, netip.Addr)
	mu     sync.Mutex
	total  int
	from   map[netip.Addr]int
	conns  map[*limitConn]struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		now := time.Now()
		lc := &limitConn{Conn: c, l: l, key: addressKey(c.RemoteAddr()), firstBy: now.Add(l.greeting), accepted: now}
		lc.active.Store(now.UnixNano())
		why, victim, ok := l.admit(lc)
		if !ok {
			l.cut(why, lc.key)
			l.refuse(c, why)
			continue
		}
		if victim != nil {
			l.cut(why, victim.key)
			go l.evict(victim)
		}
		c.SetReadDeadline(lc.firstBy)
		lc.timer = time.AfterFunc(l.life, lc.expire)
		return lc, nil
	}
}

// admit takes a slot for c, or says which cap is full. When max
// connections are open it takes the slot of victim, the idle connection
// it answers with why, and leaves closing it to the caller.
func (l *limitListener) admit(c *limitConn) (why cutReason, victim *limitConn, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.from[c.key] >= l.perIP {
		return cutPerAddress, nil, false
	}
	if l.total >= l.max {
		if victim, why = l.victim(time.Now()); victim == nil {
			return cutTotal, nil, false
		}
		// Marked under l.mu, as begin checks it: from here the victim
		// cannot start a transaction, so no report it sends is acted on
		// before the 421 (evict) closes it.
		victim.evicted = true
		l.drop(victim)
	}
	l.conns[c] = struct{}{}
	l.from[c.key]++
	l.total++
	return why, victim, true
}

// victim picks the connection a newcomer replaces when max are open: one
// that has said no command for longer than grace (worth nothing to
// anyone), else one idle between transactions (no MAIL FROM in progress:
// its sender loses nothing but the connection), else one that has said
// nothing yet but is younger than grace; never one inside a transaction.
// Among those, one from the address holding the most connections, so
// that the addresses holding many lose theirs first; then the one silent
// longest. Called with l.mu held; nil when every connection is in a
// transaction.
func (l *limitListener) victim(now time.Time) (*limitConn, cutReason) {
	var best *limitConn
	var bestRank, bestN int
	var bestT int64
	for c := range l.conns {
		rank := 0 // silent past grace
		if c.started.Load() {
			if c.inTx {
				continue
			}
			rank = 1 // idle between transactions
		} else if now.Sub(c.accepted) < l.grace {
			rank = 2 // silent, but new
		}
		n, t := l.from[c.key], c.active.Load()
		if best == nil || rank < bestRank || rank == bestRank && (n > bestN || n == bestN && t < bestT) {
			best, bestRank, bestN, bestT = c, rank, n, t
		}
	}
	if best == nil {
		return nil, 0
	}
	if bestRank == 1 {
		return best, cutEvictedIdle
	}
	return best, cutEvictedSilent
}

// drop gives c's slot back, once; called with l.mu held.
func (l *limitListener) drop(c *limitConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	l.total--
	if l.from[c.key]--; l.from[c.key] <= 0 {
		delete(l.from, c.key)
	}
}

func (l *limitListener) release(c *limitConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop(c)
}

// evict answers a connection whose slot a newcomer took with 421, as RFC
// 5321 (3.8) asks of a server that closes a connection, and closes it;
// go-smtp's read then ends and it closes its side. The write waits at
// most a second, as a peer may read nothing.
func (l *limitListener) evict(c *limitConn) {
	msg := "Too many connections, closing an idle one, try again later"
	if l.domain != "" {
		msg = l.domain + " " + msg
	}
	c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	io.WriteString(c.Conn, "421 4.3.2 "+msg+"\r\n")
	c.Conn.Close()
}

// refuse answers a connection past a cap with a 421 greeting (RFC 5321
// 3.1: the sender tries again later) and closes it. The reply fits any
// new socket's send buffer, so the write does not wait on the peer.
func (l *limitListener) refuse(c net.Conn, why cutReason) {
	msg := "Too many connections, try again later"
	code := "4.3.2"
	if why == cutPerAddress {
		msg, code = "Too many connections from your address, try again later", "4.7.0"
	}
	if l.domain != "" {
		msg = l.domain + " " + msg
	}
	c.SetWriteDeadline(time.Now().Add(time.Second))
	io.WriteString(c, "421 "+code+" "+msg+"\r\n")
	c.Close()
}

// addressKey is the address a connection counts against: its IP (an
// IPv4-mapped one as IPv4), or its /64 for IPv6, which one host often
// holds whole. Loopback is not special: a relay on the same host counts
// as one address.
func addressKey(a net.Addr) netip.Addr {
	var ip netip.Addr
	if t, ok := a.(*net.TCPAddr); ok {
		ip = t.AddrPort().Addr()
	} else if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		ip = ap.Addr()
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		ip = p.Addr()
	}
	return ip
}

// limitConn is one connection held by a limitListener. Until a whole
// command line has arrived its read deadline is the greeting's
// (GreetingTimeout), whatever go-smtp asks (it sets Timeout before each
// command); then go-smtp's own applies.
type limitConn struct {
	net.Conn
	l        *limitListener
	key      netip.Addr
	firstBy  time.Time    // the first command's deadline
	active   atomic.Int64 // when it was accepted or last sent anything (unix ns)
	started  atomic.Bool  // a whole command line has arrived
	accepted time.Time
	// inTx (a MAIL FROM was taken and its transaction is not over) and
	// evicted (a newcomer took its slot) are read and written under l.mu:
	// a connection is evicted only outside a transaction, and begins none
	// once evicted.
	inTx, evicted bool
	timedOut      atomic.Bool // a read timed out (counted once)
	closed        atomic.Bool
	once          sync.Once
	timer         *time.Timer // SessionTimeout
}

func (c *limitConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.active.Store(time.Now().UnixNano())
		if !c.started.Load() && bytes.IndexByte(p[:n], '\n') >= 0 {
			c.started.Store(true)
		}
	}
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() && c.timedOut.CompareAndSwap(false, true) {
		if c.started.Load() {
			c.l.cut(cutIdle, c.key)
		} else {
			c.l.cut(cutFirstCommand, c.key)
		}
	}
	return n, err
}

// begin records that a transaction begins (MAIL FROM), unless the
// connection was evicted: then false, and the transaction must be
// refused. From then on it is never evicted. c may be nil (a connection
// not from a limitListener).
func (c *limitConn) begin() bool {
	if c == nil {
		return true
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.evicted {
		return false
	}
	c.inTx = true
	return true
}

// end records that a transaction is over (the reply to its data, or a
// reset): the connection may be evicted again.
func (c *limitConn) end() {
	if c != nil {
		c.l.mu.Lock()
		c.inTx = false
		c.l.mu.Unlock()
	}
}

func (c *limitConn) SetReadDeadline(t time.Time) error {
	if !c.started.Load() && (t.IsZero() || t.After(c.firstBy)) {
		t = c.firstBy
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *limitConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// expire closes a connection open for SessionTimeout; go-smtp's read
// fails and it closes its side, which frees the slot.
func (c *limitConn) expire() {
	if !c.closed.Load() {
		c.l.cut(cutLife, c.key)
	}
	c.Conn.Close()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.closed.Store(true)
		c.timer.Stop()
		c.l.release(c)
	})
	return err
}
