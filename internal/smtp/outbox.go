package smtp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Transport is what hands a mail over: a Pool, or an Outbox when no SMTP
// server is configured.
type Transport interface {
	Send(ctx context.Context, m *Message) Result
	Close() error
}

var (
	_ Transport = (*Pool)(nil)
	_ Transport = (*Outbox)(nil)
)

// Outbox writes each mail as an .eml file under Dir instead of sending it,
// so a first run mails nobody (SMTP_URL unset). A file appears whole: it is
// written under a temporary name and renamed.
type Outbox struct{ Dir string }

// Send writes m to Dir/<time>-<random>.eml, its envelope recipient in an
// X-Envelope-To header line above the message.
func (o *Outbox) Send(_ context.Context, m *Message) Result {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return classify(err)
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	name := fmt.Sprintf("%s-%s.eml", time.Now().UTC().Format("20060102T150405.000000000"), hex.EncodeToString(rnd[:]))
	tmp := filepath.Join(o.Dir, "."+name+".tmp")
	data := append([]byte("X-Envelope-From: <"+m.From+">\r\nX-Envelope-To: <"+m.To+">\r\n"), m.Data...)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return classify(err)
	}
	if err := os.Rename(tmp, filepath.Join(o.Dir, name)); err != nil {
		os.Remove(tmp)
		return classify(err)
	}
	return Result{Class: Accepted, Code: 250}
}

// Close does nothing.
func (o *Outbox) Close() error { return nil }

// ParseURL reads SMTP_URL: smtp://user:pass@host:port (port 25 by default;
// ?starttls=true requires STARTTLS) or smtps://user:pass@host:port (TLS,
// port 465 by default); ?pool=N sets the connections.
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("SMTP_URL: %w", err)
	}
	var cfg Config
	port := u.Port()
	switch u.Scheme {
	case "smtp":
		if port == "" {
			port = "25"
		}
		if v := u.Query().Get("starttls"); v != "" {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return Config{}, fmt.Errorf("SMTP_URL: starttls=%q is not true or false", v)
			}
			if on {
				cfg.Security = StartTLS
			}
		}
	case "smtps":
		if port == "" {
			port = "465"
		}
		cfg.Security = TLS
	default:
		return Config{}, fmt.Errorf("SMTP_URL: scheme %q is not smtp or smtps", u.Scheme)
	}
	if u.Hostname() == "" {
		return Config{}, fmt.Errorf("SMTP_URL: no host")
	}
	if (u.Path != "" && u.Path != "/") || u.Fragment != "" || u.Opaque != "" {
		return Config{}, fmt.Errorf("SMTP_URL: a path or fragment after the host (a password holding /, ? or # must be percent-encoded)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return Config{}, fmt.Errorf("SMTP_URL: port %q is not a number from 1 to 65535", port)
	}
	if v := u.Query().Get("pool"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return Config{}, fmt.Errorf("SMTP_URL: pool=%q is not a number from 1 to 1000", v)
		}
		cfg.Size = n
	}
	cfg.Addr = net.JoinHostPort(u.Hostname(), port)
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	return cfg, nil
}
