package delivery

import (
	"errors"
	"net/textproto"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/smtp"
)

// A server's reply is stored as valid UTF-8 without NUL, cut at a
// character boundary: a failing INSERT would lose a whole batch's
// outcomes.
func TestErrText(t *testing.T) {
	t.Parallel()
	long := errors.New("451 Das Postfach ist voll\x00 " + strings.Repeat("ä", 300) + "\xff")
	got := errText(long)
	if len(got) > 500 || !utf8.ValidString(got) || strings.ContainsRune(got, 0) || !strings.HasPrefix(got, "451 Das Postfach ist voll ") {
		t.Errorf("errText = %q (%d bytes)", got, len(got))
	}
	if errText(nil) != "" || errText(errors.New("x\xffy")) != "x\uFFFDy" {
		t.Error("short texts")
	}
}

// What each kind of result makes of a delivery: only a 5xx to RCPT TO that
// is not a policy refusal suppresses the address; trouble before the
// recipient's step costs no attempt.
func TestOutcome(t *testing.T) {
	t.Parallel()
	reply := func(code int, msg string) error { return &textproto.Error{Code: code, Msg: msg} }
	tests := []struct {
		name     string
		res      smtp.Result
		attempts int
		status   mail.DeliveryStatus
		notTried bool
	}{
		{"accepted", smtp.Result{Class: smtp.Accepted}, 1, mail.DeliverySent, false},
		{"no such user", smtp.Result{Class: smtp.Permanent, Stage: smtp.StageRecipient, Err: reply(550, "5.1.1 no such user")}, 1, mail.DeliveryBounced, false},
		{"policy at RCPT", smtp.Result{Class: smtp.Permanent, Stage: smtp.StageRecipient, Err: reply(550, "5.7.1 blocked for spam")}, 1, mail.DeliveryFailed, false},
		{"message too big", smtp.Result{Class: smtp.Permanent, Stage: smtp.StageData, Err: reply(552, "5.3.4 too big")}, 1, mail.DeliveryFailed, false},
		{"no SMTPUTF8", smtp.Result{Class: smtp.Permanent, Stage: smtp.StageData, Err: smtp.ErrNoSMTPUTF8}, 1, mail.DeliveryFailed, false},
		{"login refused", smtp.Result{Class: smtp.Permanent, Stage: smtp.StageConnect, Err: reply(535, "5.7.8 bad credentials")}, 5, mail.DeliveryPending, true},
		{"sender refused", smtp.Result{Class: smtp.Permanent, Stage: smtp.StageSender, Err: reply(550, "5.7.1 sender")}, 1, mail.DeliveryPending, true},
		{"relay down", smtp.Result{Class: smtp.Temporary, Stage: smtp.StageConnect, Err: errors.New("connection refused")}, 5, mail.DeliveryPending, true},
		{"mailbox full", smtp.Result{Class: smtp.Temporary, Stage: smtp.StageRecipient, Err: reply(452, "4.2.2 full")}, 1, mail.DeliveryPending, false},
		{"mailbox full, last attempt", smtp.Result{Class: smtp.Temporary, Stage: smtp.StageRecipient, Err: reply(452, "4.2.2 full")}, mail.MaxAttempts, mail.DeliveryFailed, false},
	}
	for _, tt := range tests {
		o := outcome(&mail.Claimed{ID: 1, Attempts: tt.attempts, Recipient: mail.Recipient{Email: "a@b.co"}}, tt.res)
		if o.Status != tt.status || o.NotTried != tt.notTried || (o.Status == mail.DeliveryPending) != (o.NextAt != nil) {
			t.Errorf("%s: %+v", tt.name, o)
		}
	}
}
