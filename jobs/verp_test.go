package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// With BOUNCE_DOMAIN each mail's envelope sender is its delivery's own
// return path, which opens to that delivery; without it, the sender's
// address as before.
func TestVERPReturnPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	for _, verp := range []bool{true, false} {
		f := newSendFixture(t, d, `<p>Hi ((first_name))</p>`)
		s := smtptest.New(t, smtptest.Options{})
		pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
		defer pool.Close()
		var v mail.VERP
		mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 10}, func(deps *jobs.Deps) {
			if verp {
				deps.VERP = mail.VERP{Domain: "bounces.m.example.test", Signer: deps.Links.Signer}
			}
			v = deps.VERP
		})
		exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
		version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
		q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
		q.drain(t, mux)
		msgs := s.Messages()
		if len(msgs) != 5 { // ann, bob, hank, gone, later
			t.Fatalf("VERP %v: %d mails", verp, len(msgs))
		}
		for _, m := range msgs {
			if !verp {
				if m.From != "news@acme.example" {
					t.Errorf("VERP off: envelope sender %q", m.From)
				}
				continue
			}
			local, _, _ := strings.Cut(m.From, "@")
			if len(local) > 64 || !strings.HasSuffix(m.From, "@bounces.m.example.test") {
				t.Errorf("envelope sender %q", m.From)
			}
			send, id, ok := v.Parse(m.From)
			if !ok || send != f.send {
				t.Fatalf("return path %q opens to %d, %d, %v", m.From, send, id, ok)
			}
			email := scalar[string](t, d, "SELECT email FROM deliveries WHERE send_id = $1 AND id = $2", send, id)
			if !strings.EqualFold(email, m.To[0]) {
				t.Errorf("return path of the mail to %s names the delivery of %s", m.To[0], email)
			}
		}
	}
}
