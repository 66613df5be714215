package render

import (
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// The header's addresses are written as they go out: the domain as its
// A-label, a UTF-8 local part as UTF-8 (RFC 6532), nothing dropped from
// it; the Message-ID's domain is the From domain's A-label.
func TestInternationalAddresses(t *testing.T) {
	t.Parallel()
	tp, err := Compile("Hi", "", "<body>x</body>")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		from, replyTo, to string
		want              []string
	}{
		{"news@bücher.example", "Help@BÜCHER.example", "h@bücher.example", []string{
			`From: "Büchershop" <news@xn--bcher-kva.example>`, "Reply-To: Help@xn--bcher-kva.example",
			"To: h@xn--bcher-kva.example"}},
		{"ü@bücher.example", "", "ü-h@example.com", []string{
			`From: "Büchershop" <ü@xn--bcher-kva.example>`, "To: ü-h@example.com"}},
	} {
		s := &mail.Sender{FromName: "Büchershop", FromEmail: mail.Email(tt.from), ReplyTo: mail.Email(tt.replyTo)}
		f := NewForm(tp, s, FormOptions{SendID: 7, Signer: testSigner, Now: func() time.Time { return time.Unix(0, 0) }})
		var b Buffer
		data := string(f.Build(nil, &b, &mail.Recipient{Email: mail.Email(tt.to)}, 9))
		head, _, _ := strings.Cut(data, "\r\n\r\n")
		// The Message-ID is at the A-label, and its MAC covers that.
		id := headerValue(head, "Message-ID")
		if send, delivery, ok := testSigner.OpenMessageID(id); !ok || send != 7 || delivery != 9 || !strings.HasSuffix(id, "@xn--bcher-kva.example>") {
			t.Errorf("Message-ID %q opens to %d, %d, %v; want 7, 9 at xn--bcher-kva.example", id, send, delivery, ok)
		}
		for _, w := range tt.want {
			w = strings.Replace(w, `"Büchershop"`, "=?utf-8?b?QsO8Y2hlcnNob3A=?=", 1)
			if !strings.Contains(head+"\r\n", w+"\r\n") {
				t.Errorf("no %q in\n%s", w, head)
			}
		}
	}
}

// headerValue is the value of the first header line of head named name.
func headerValue(head, name string) string {
	for line := range strings.SplitSeq(head, "\r\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && k == name {
			return v
		}
	}
	return ""
}
