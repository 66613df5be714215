// Package inbound takes the mail that comes back: delivery status
// notifications (RFC 3464) and plain-text bounces, feedback reports (ARF,
// RFC 5965) and mails to the List-Unsubscribe mailto, on an SMTP listener
// (emersion/go-smtp), and records their effects (docs/bounces.md).
package inbound

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"net/textproto"
	"strings"
)

// Format is the form of an inbound report.
type Format string

// The forms the parser reads.
const (
	FormatNone Format = ""     // not a report mailroom reads
	FormatDSN  Format = "dsn"  // multipart/report; report-type=delivery-status (RFC 3464)
	FormatARF  Format = "arf"  // multipart/report; report-type=feedback-report (RFC 5965)
	FormatText Format = "text" // a bounce in plain words with an enhanced status code
)

// Report is what an inbound mail says, as far as mailroom acts on it.
type Report struct {
	Format     Format
	Subject    string
	Recipients []Recipient // DSN: the per-recipient fields; text: the one failure found
	Feedback   Feedback    // ARF: the feedback report's fields
	Original   Original    // the original message's headers, when the report holds them
	// AutoReply: the mail says it was sent by a program (Auto-Submitted
	// other than no, X-Autoreply, Precedence: auto_reply, an
	// out-of-office subject). Bounces say so too: it matters only for a
	// mail that is no report.
	AutoReply bool
}

// Recipient is one recipient of a delivery status notification.
type Recipient struct {
	Final, Original string // addresses (Final-Recipient, Original-Recipient), lower case
	Action          string // failed, delayed, delivered, relayed, expanded (lower case)
	Status          string // enhanced status code, 5.1.1
	Diagnostic      string // Diagnostic-Code, folded to one line
}

// Feedback is an abuse report's fields.
type Feedback struct {
	Type       string   // Feedback-Type, lower case: abuse, fraud, virus, other, not-spam, auth-failure
	UserAgent  string   // who reports
	RcptTo     []string // Original-Rcpt-To, lower case (often absent: redacted)
	MailFrom   string   // Original-Mail-From
	ReportedBy string   // Reported-Domain
}

// Original is what the report quotes of the mail it is about.
type Original struct {
	MessageID       string // with its angle brackets
	ReturnPath      string
	To              string
	ListUnsubscribe string
}

// Limits of the parser: a report is a few parts, one level of nesting
// (or two, forwarded); anything past these is not read.
const (
	maxDepth     = 4
	maxParts     = 64
	maxTextBytes = 64 << 10 // of text parts read for a plain-text bounce
	maxField     = 1000     // a field value kept
)

// ErrNotMail is a message whose header does not parse.
var ErrNotMail = errors.New("inbound: not an RFC 5322 message")

// Parse reads a received message. It never panics; its memory is bounded
// by a few times the message's size (each part is decoded once, and no
// deeper than maxDepth). A message that is a mail but no report has
// Format FormatNone.
func Parse(raw []byte) (*Report, error) {
	m, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil || !mailHeader(m.Header) {
		return nil, ErrNotMail
	}
	body, err := io.ReadAll(m.Body)
	if err != nil {
		return nil, ErrNotMail
	}
	r := &Report{Subject: decodeHeader(m.Header.Get("Subject"))}
	r.AutoReply = autoReply(m.Header, r.Subject)
	w := &walker{}
	w.walk(textproto.MIMEHeader(m.Header), body, 0)

	switch {
	case w.arf != nil:
		r.Format = FormatARF
		f := fields(w.arf)
		r.Feedback = Feedback{Type: strings.ToLower(firstWord(f.get("feedback-type"))), UserAgent: f.get("user-agent"),
			MailFrom: address(f.get("original-mail-from")), ReportedBy: f.get("reported-domain")}
		for _, v := range f["original-rcpt-to"] {
			if a := address(v); a != "" {
				r.Feedback.RcptTo = append(r.Feedback.RcptTo, a)
			}
		}
	case w.dsn != nil:
		r.Format = FormatDSN
		r.Recipients = recipients(w.dsn)
	}
	if w.orig != nil {
		r.Original = original(w.orig)
	}
	if r.Format == FormatNone && bounceLike(m.Header, r.Subject) {
		if rc, ok := textBounce(w.text); ok {
			r.Format = FormatText
			r.Recipients = []Recipient{rc}
			if w.orig == nil { // the copy of the message, inline below the text
				r.Original = inlineOriginal(w.text)
			}
		}
	}
	return r, nil
}

// mailHeader reports whether h reads as a mail's header: every name is
// printable ASCII without a space (RFC 5322 2.2; Go's reader lets others
// pass), and one of the fields every mail has is there.
func mailHeader(h netmail.Header) bool {
	for k := range h {
		for i := 0; i < len(k); i++ {
			if k[i] <= ' ' || k[i] > '~' {
				return false
			}
		}
	}
	for _, k := range []string{"From", "To", "Subject", "Date", "Message-Id", "Content-Type"} {
		if _, ok := h[k]; ok {
			return true
		}
	}
	return false
}

// walker collects a message's report parts, depth first.
type walker struct {
	parts    int
	dsn, arf []byte
	orig     []byte // the original message, or its header only
	text     []byte // text/plain parts, up to maxTextBytes
}

func (w *walker) walk(h textproto.MIMEHeader, body []byte, depth int) {
	w.parts++
	if w.parts > maxParts || depth > maxDepth {
		return
	}
	typ, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		typ = "text/plain"
		if ct := h.Get("Content-Type"); ct != "" {
			// A broken parameter list: the type alone still says what it is.
			typ = strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
		}
	}
	body = decodeBody(h.Get("Content-Transfer-Encoding"), body)
	switch {
	case strings.HasPrefix(typ, "multipart/"):
		b := params["boundary"]
		if b == "" {
			return
		}
		mr := multipart.NewReader(bytes.NewReader(body), b)
		for w.parts <= maxParts {
			p, err := mr.NextRawPart()
			if err != nil {
				return
			}
			pb, err := io.ReadAll(p)
			if err != nil && len(pb) == 0 {
				return
			}
			w.walk(p.Header, pb, depth+1)
		}
	case typ == "message/delivery-status" || typ == "message/global-delivery-status":
		if w.dsn == nil {
			w.dsn = body
		}
	case typ == "message/feedback-report":
		if w.arf == nil {
			w.arf = body
		}
	case typ == "message/rfc822" || typ == "message/global" || typ == "text/rfc822-headers" || typ == "message/global-headers":
		if w.orig == nil {
			w.orig = body
		}
	case typ == "text/plain" || typ == "":
		if room := maxTextBytes - len(w.text); room > 0 {
			w.text = append(w.text, body[:min(len(body), room)]...)
			w.text = append(w.text, '\n')
		}
	}
}

// decodeBody undoes a part's transfer encoding; what does not decode is
// kept as far as it did, or as it came.
func decodeBody(cte string, body []byte) []byte {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "base64":
		out, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(bytes.TrimSpace(body))))
		if err != nil && len(out) == 0 {
			return body
		}
		return out
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
		if err != nil && len(out) == 0 {
			return body
		}
		return out
	}
	return body
}

// fieldSet is a block of "Name: value" fields, names lower-cased, each
// with its values in order.
type fieldSet map[string][]string

func (f fieldSet) get(name string) string {
	if v := f[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// blocks splits a delivery-status or feedback-report body into its groups
// of fields (separated by blank lines), each read as a fieldSet: folded
// lines are unfolded, a line that is no field is skipped.
func blocks(body []byte) []fieldSet {
	var out []fieldSet
	cur := fieldSet{}
	var name string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur, name = fieldSet{}, ""
	}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			if name != "" {
				vs := cur[name]
				if v := vs[len(vs)-1]; len(v) < maxField {
					vs[len(vs)-1] = v + " " + strings.TrimSpace(line)
				}
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok || strings.ContainsAny(k, " \t") || k == "" {
				name = ""
				continue
			}
			name = strings.ToLower(k)
			if len(cur[name]) < 16 {
				cur[name] = append(cur[name], strings.TrimSpace(v))
			} else {
				name = ""
			}
		}
		if len(out) > maxParts*4 {
			break
		}
	}
	flush()
	for _, b := range out {
		for k, vs := range b {
			for i, v := range vs {
				if len(v) > maxField {
					vs[i] = v[:maxField]
				}
			}
			b[k] = vs
		}
	}
	return out
}

// fields is the one block of a feedback report (all its blocks merged).
func fields(body []byte) fieldSet {
	all := fieldSet{}
	for _, b := range blocks(body) {
		for k, vs := range b {
			all[k] = append(all[k], vs...)
		}
	}
	return all
}

// recipients reads a delivery-status body: every group naming a
// recipient or an action (the first group is the per-message one; some
// MTAs put all in one).
func recipients(body []byte) []Recipient {
	var out []Recipient
	for _, b := range blocks(body) {
		if b.get("final-recipient") == "" && b.get("original-recipient") == "" && b.get("action") == "" {
			continue
		}
		r := Recipient{Final: address(b.get("final-recipient")), Original: address(b.get("original-recipient")),
			Action: strings.ToLower(firstWord(b.get("action"))), Diagnostic: oneLine(b.get("diagnostic-code"))}
		r.Status = statusCode(b.get("status"))
		// A general status (5.0.0) with a precise one of the same class in
		// the diagnostic: the precise one.
		if d := statusCode(r.Diagnostic); d != "" && (r.Status == "" || (strings.HasSuffix(r.Status, ".0.0") && d[0] == r.Status[0])) {
			r.Status = d
		}
		if r.Status == "" {
			switch r.Action {
			case "failed":
				r.Status = "5.0.0"
			case "delayed":
				r.Status = "4.0.0"
			}
		}
		out = append(out, r)
		if len(out) >= maxParts {
			break
		}
	}
	return out
}

// original reads the headers of the quoted original message.
func original(b []byte) Original {
	h := headerOf(b)
	return Original{MessageID: strings.TrimSpace(h.Get("Message-Id")), ReturnPath: address(h.Get("Return-Path")),
		To: strings.TrimSpace(h.Get("To")), ListUnsubscribe: strings.TrimSpace(h.Get("List-Unsubscribe"))}
}

// headerOf reads a header block, which may end without its blank line
// (text/rfc822-headers) or go on into a body.
func headerOf(b []byte) textproto.MIMEHeader {
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
	h, _ := tp.ReadMIMEHeader()
	if h == nil {
		h = textproto.MIMEHeader{}
	}
	return h
}

// inlineOriginal finds the original's headers in a plain-text bounce that
// quotes the message below its text ("------ This is a copy of the
// message, including all the headers. ------").
func inlineOriginal(text []byte) Original {
	var o Original
	for line := range strings.Lines(string(text)) {
		line = strings.TrimRight(line, "\r\n")
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.ToLower(k) {
		case "message-id":
			if o.MessageID == "" {
				o.MessageID = v
			}
		case "return-path":
			if o.ReturnPath == "" {
				o.ReturnPath = address(v)
			}
		case "to":
			if o.To == "" {
				o.To = v
			}
		case "list-unsubscribe":
			if o.ListUnsubscribe == "" {
				o.ListUnsubscribe = v
			}
		}
	}
	return o
}

// autoReply reports whether a mail says it was sent by a responder.
func autoReply(h netmail.Header, subject string) bool {
	if v := strings.ToLower(strings.TrimSpace(h.Get("Auto-Submitted"))); v != "" && v != "no" {
		return true
	}
	if h.Get("X-Autoreply") != "" || h.Get("X-Autorespond") != "" ||
		strings.EqualFold(strings.TrimSpace(h.Get("Precedence")), "auto_reply") {
		return true
	}
	s := strings.ToLower(subject)
	return strings.HasPrefix(s, "automatic reply") || strings.HasPrefix(s, "auto-reply") || strings.HasPrefix(s, "autoreply") ||
		strings.Contains(s, "out of office") || strings.Contains(s, "out of the office")
}

// bounceLike tells a mail that reads as a bounce from the rest (replies,
// out-of-office notes, spam) by its sender and subject: only those are
// searched for a status code.
func bounceLike(h netmail.Header, subject string) bool {
	if a, err := netmail.ParseAddress(h.Get("From")); err == nil {
		local, _, _ := strings.Cut(strings.ToLower(a.Address), "@")
		if local == "mailer-daemon" || local == "postmaster" {
			return true
		}
	}
	s := strings.ToLower(subject)
	for _, w := range []string{"undeliver", "undelivered", "delivery status notification", "delivery failure", "failure notice",
		"returned mail", "mail delivery failed", "delivery has failed", "could not be delivered", "non-delivery", "not delivered",
		"returned to sender", "delivery failed"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// textBounce finds the first enhanced status code of class 4 or 5 in a
// bounce's text; the line holding it is the diagnostic, an address on it
// the recipient. Without one, a line opening with a basic reply code
// (qmail and Yahoo: "554: delivery error: dd ...") stands for its class
// (5.0.0, 4.0.0).
func textBounce(text []byte) (Recipient, bool) {
	found := func(code, line string) (Recipient, bool) {
		r := Recipient{Status: code, Action: "failed", Diagnostic: oneLine(line), Final: lineAddress(line)}
		if code[0] == '4' {
			r.Action = "delayed"
		}
		return r, true
	}
	for line := range strings.Lines(string(text)) {
		if code := statusCodeOf(line, "45"); code != "" {
			return found(code, line)
		}
	}
	for line := range strings.Lines(string(text)) {
		l := strings.TrimSpace(line)
		if len(l) >= 4 && (l[0] == '4' || l[0] == '5') && isDigit(l[1]) && isDigit(l[2]) && strings.IndexByte(":- ", l[3]) >= 0 {
			return found(l[:1]+".0.0", line)
		}
	}
	return Recipient{}, false
}

// statusCode is the first enhanced status code (RFC 3463: class 2, 4 or
// 5, subject and detail of up to three digits) in s that stands alone:
// not part of a longer run of digits and dots (an IP address, a version).
func statusCode(s string) string { return statusCodeOf(s, "245") }

// statusCodeOf is the first enhanced status code in s of one of classes.
func statusCodeOf(s, classes string) string {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(classes, s[i]) < 0 || (i > 0 && (isDigit(s[i-1]) || s[i-1] == '.')) {
			continue
		}
		j, ok := i+1, true
		for range 2 {
			if j >= len(s) || s[j] != '.' {
				ok = false
				break
			}
			j++
			k := j
			for j < len(s) && j-k < 3 && isDigit(s[j]) {
				j++
			}
			if j == k {
				ok = false
				break
			}
		}
		if !ok || (j < len(s) && (isDigit(s[j]) || s[j] == '.' && j+1 < len(s) && isDigit(s[j+1]))) {
			continue
		}
		return s[i:j]
	}
	return ""
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// address is the bare address of a field value: "rfc822; a@b" (a DSN's
// address type), "<a@b>", "Name <a@b>", lower case; "" when there is
// none.
func address(v string) string {
	v = strings.TrimSpace(v)
	if t, rest, ok := strings.Cut(v, ";"); ok && !strings.ContainsAny(t, "<@\"") {
		v = strings.TrimSpace(rest)
	}
	if i := strings.LastIndexByte(v, '<'); i >= 0 {
		if j := strings.IndexByte(v[i:], '>'); j > 0 {
			v = v[i+1 : i+j]
		}
	}
	v = strings.TrimSpace(v)
	if !strings.Contains(v, "@") || strings.ContainsAny(v, " \t<>,") {
		return ""
	}
	return strings.ToLower(v)
}

// lineAddress is the first <address> on a line, or the first word with
// an @.
func lineAddress(line string) string {
	if i := strings.IndexByte(line, '<'); i >= 0 {
		if j := strings.IndexByte(line[i:], '>'); j > 0 {
			if a := address(line[i : i+j+1]); a != "" {
				return a
			}
		}
	}
	for w := range strings.FieldsSeq(line) {
		if a := address(strings.Trim(w, "()[]:;,.'\"")); a != "" {
			return a
		}
	}
	return ""
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.TrimRight(f[0], ";,")
}

// oneLine folds runs of white space to one space, at most maxField bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxField {
		s = s[:maxField]
	}
	return s
}

// decodeHeader decodes RFC 2047 words; what does not decode is kept.
func decodeHeader(s string) string {
	if d, err := new(mime.WordDecoder).DecodeHeader(s); err == nil {
		return d
	}
	return s
}
