package inbound

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The placeholders' values in the parser tests (testdata/README.md).
var sampleValues = map[string]string{
	"{{VERP}}":             "bounces+abcdefgh@bounces.acme.example",
	"{{MESSAGE_ID}}":       "<42.1001@acme.example>",
	"{{RCPT}}":             "gone@example.net",
	"{{LIST_UNSUBSCRIBE}}": "<https://m.acme.example/unsubscribe/tok>",
	"{{BOUNCE_DOMAIN}}":    "bounces.acme.example",
	"{{MAILTO}}":           "unsubscribe@bounces.acme.example",
	"{{SUBJECT}}":          "unsubscribe-tok",
}

// sample is a testdata file with its placeholders filled from values.
func sample(t testing.TB, name string, values map[string]string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range values {
		s = strings.ReplaceAll(s, k, v)
	}
	if i := strings.Index(s, "{{"); i >= 0 && strings.HasSuffix(name, ".eml") {
		t.Fatalf("%s: placeholder left at %q", name, s[i:min(len(s), i+30)])
	}
	return []byte(s)
}

// Each sample reads as what it is: the form, the recipient's action and
// status (hard or soft), the feedback type, and the original's headers
// that find the delivery.
func TestParseSamples(t *testing.T) {
	t.Parallel()
	const verp, msgID, rcpt = "bounces+abcdefgh@bounces.acme.example", "<42.1001@acme.example>", "gone@example.net"
	tests := []struct {
		file       string
		format     Format
		action     string // the recipient failure() picks
		status     string
		hard       bool
		diagnostic string // a part of it
		final      string
		feedback   string
		rcptTo     string
		mailFrom   string
		returnPath string
		messageID  string
		listUnsub  bool
	}{
		{file: "dsn-gmail-5.1.1.eml", format: FormatDSN, action: "failed", status: "5.1.1", hard: true, diagnostic: "550 5.1.1 https://support.google.com/mail/?p=NoSuchUser",
			final: rcpt, returnPath: verp, messageID: msgID, listUnsub: true},
		{file: "dsn-gmail-5.2.2-over-quota.eml", format: FormatDSN, action: "failed", status: "5.2.2", diagnostic: "inbox is out of storage space",
			final: rcpt, returnPath: verp, messageID: msgID, listUnsub: true},
		{file: "dsn-outlook-5.1.10.eml", format: FormatDSN, action: "failed", status: "5.1.10", hard: true, diagnostic: "RESOLVER.ADR.RecipientNotFound",
			final: rcpt, returnPath: verp, messageID: msgID, listUnsub: true},
		{file: "dsn-postfix-5.1.1.eml", format: FormatDSN, action: "failed", status: "5.1.1", hard: true, diagnostic: "User unknown in virtual mailbox table",
			final: rcpt, returnPath: verp, messageID: msgID, listUnsub: true},
		{file: "dsn-postfix-delayed-4.4.1.eml", format: FormatDSN, action: "delayed", status: "4.4.1", diagnostic: "Connection timed out",
			final: rcpt, returnPath: verp, messageID: msgID, listUnsub: true},
		// Exim says 5.0.0; its diagnostic says 5.1.1.
		{file: "dsn-exim-5.0.0.eml", format: FormatDSN, action: "failed", status: "5.1.1", hard: true, diagnostic: "Recipient address rejected: User unknown",
			final: rcpt, returnPath: verp, messageID: msgID, listUnsub: true},
		{file: "text-undelivered-5.1.1.eml", format: FormatText, action: "failed", status: "5.1.1", hard: true, diagnostic: "said: 550 5.1.1",
			final: rcpt, returnPath: verp, messageID: msgID, listUnsub: true},
		{file: "text-yahoo-failure-notice.eml", format: FormatText, action: "failed", status: "5.0.0", hard: true, diagnostic: "This mailbox is disabled",
			final: rcpt, returnPath: verp, messageID: msgID},
		{file: "arf-yahoo.eml", format: FormatARF, feedback: "abuse", mailFrom: verp, returnPath: verp, messageID: msgID, listUnsub: true},
		{file: "arf-aol.eml", format: FormatARF, feedback: "abuse", rcptTo: rcpt, messageID: msgID},
		{file: "arf-microsoft-jmrp.eml", format: FormatARF, feedback: "abuse", messageID: msgID, listUnsub: true},
		{file: "garbage-spam.eml", format: FormatNone},
		{file: "garbage-autoreply.eml", format: FormatNone},
		{file: "mailto-unsubscribe.eml", format: FormatNone},
		{file: "garbage-broken-report.eml", format: FormatDSN}, // a recipient relayed: no failure
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(sample(t, tt.file, sampleValues))
			if err != nil {
				t.Fatal(err)
			}
			if r.Format != tt.format {
				t.Fatalf("format %q, want %q", r.Format, tt.format)
			}
			f, ok := failure(r.Recipients)
			if ok != (tt.action != "") || f.Action != tt.action || f.Status != tt.status || hard(f.Status) != tt.hard ||
				!strings.Contains(f.Diagnostic, tt.diagnostic) || f.Final != tt.final {
				t.Errorf("recipient %+v (hard %v)", f, hard(f.Status))
			}
			if r.Feedback.Type != tt.feedback || strings.Join(r.Feedback.RcptTo, ",") != tt.rcptTo || r.Feedback.MailFrom != tt.mailFrom {
				t.Errorf("feedback %+v", r.Feedback)
			}
			o := r.Original
			if o.ReturnPath != tt.returnPath || o.MessageID != tt.messageID || (o.ListUnsubscribe != "") != tt.listUnsub {
				t.Errorf("original %+v", o)
			}
		})
	}
	if _, err := Parse(sample(t, "garbage-binary.bin", nil)); err != ErrNotMail {
		t.Errorf("binary: %v", err)
	}
	if r, _ := Parse(sample(t, "garbage-autoreply.eml", sampleValues)); !r.AutoReply {
		t.Error("the out-of-office note is not an auto-reply")
	}
	if r, _ := Parse(sample(t, "garbage-spam.eml", sampleValues)); r.AutoReply {
		t.Error("the spam is an auto-reply")
	}
}

// A quoted message in base64, and a delivery-status in quoted-printable,
// read as plainly written ones.
func TestParseEncodedParts(t *testing.T) {
	t.Parallel()
	orig := "Return-Path: <bounces+xyz@b.example>\r\nMessage-ID: <7.8@acme.example>\r\nTo: a@b.example\r\n\r\nHi\r\n"
	raw := "From: MAILER-DAEMON@x.example\r\nSubject: failure\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=B\r\n\r\n" +
		"--B\r\nContent-Type: message/delivery-status\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
		"Final-Recipient: rfc822; a@b.example\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 us=\r\ner unknown\r\n" +
		"--B\r\nContent-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		base64.StdEncoding.EncodeToString([]byte(orig)) + "\r\n--B--\r\n"
	r, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != FormatDSN || len(r.Recipients) != 1 || r.Recipients[0].Diagnostic != "smtp; 550 5.1.1 user unknown" ||
		r.Original.ReturnPath != "bounces+xyz@b.example" || r.Original.MessageID != "<7.8@acme.example>" {
		t.Errorf("%+v", r)
	}
}

func TestStatusCode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"550 5.1.1 user unknown":         "5.1.1",
		"550-5.1.1 The email account":    "5.1.1",
		"#5.1.10 RESOLVER":               "5.1.10",
		"host [192.5.1.1] said 4.2.2 x":  "4.2.2",
		"Postfix 2.11.3 then 5.7.1 spam": "2.11.3",
		"5.1.1000 is no code":            "",
		"version 1.5.1.1":                "",
		"5.1. dangling":                  "",
		"out until 15.1.":                "",
		"(5.2.2)":                        "5.2.2",
	} {
		if got := statusCode(in); got != want {
			t.Errorf("statusCode(%q) = %q, want %q", in, got, want)
		}
	}
	if got := statusCodeOf("Postfix 2.11.3 then 5.7.1 spam", "45"); got != "5.7.1" {
		t.Errorf("statusCodeOf classes 4 and 5: %q", got)
	}
	for status, want := range map[string]bool{"5.1.1": true, "5.1.10": true, "5.4.4": true, "5.0.0": true, "5.7.1": false,
		"5.2.2": false, "5.3.4": false, "5.6.0": false, "4.4.7": false, "2.0.0": false, "": false} {
		if hard(status) != want {
			t.Errorf("hard(%q) = %v", status, !want)
		}
	}
}

func TestAddress(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"rfc822; Gone@Example.NET":     "gone@example.net",
		"RFC822;<a@b.example>":         "a@b.example",
		`"Ann; Lee" <ann@b.example>`:   "ann@b.example",
		"<>":                           "",
		"rfc822;":                      "",
		"not an address":               "",
		"a@b.example, c@d.example":     "",
		"bounces+x@bounces.example.co": "bounces+x@bounces.example.co",
	} {
		if got := address(in); got != want {
			t.Errorf("address(%q) = %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{"<42.1001@acme.example>", " <1.2@x> ", "<0.5@x>"} {
		if !unsignedMessageID(in) {
			t.Errorf("unsignedMessageID(%q) = false", in)
		}
	}
	for _, in := range []string{"", "<>", "<42@acme.example>", "<a.b@x>", "<+1.2@x>", "<1.-2@x>", "42.1001@acme.example", "<1.2.3@x>"} {
		if unsignedMessageID(in) {
			t.Errorf("unsignedMessageID(%q) = true", in)
		}
	}
	if got := unsubscribeTokens("<https://m.example/unsubscribe/AbC-_1>,\r\n <mailto:u@m.example?subject=unsubscribe-XyZ_9>"); strings.Join(got, " ") != "AbC-_1 XyZ_9" {
		t.Errorf("unsubscribeTokens: %q", got)
	}
}

// The parser's cost per report (Gmail's DSN, 5 KB, nested parts and a
// base64 image).
func BenchmarkParse(b *testing.B) {
	raw := sample(b, "dsn-gmail-5.1.1.eml", sampleValues)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for range b.N {
		if r, err := Parse(raw); err != nil || r.Format != FormatDSN {
			b.Fatal(r, err)
		}
	}
}
