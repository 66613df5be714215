package delivery

import (
	"context"
	"fmt"
	"io"
	"net/textproto"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/smtp"
)

// Which refusals hold a domain: a 421, a 4xx with a policy or capacity
// enhanced code or saying to try later, at the recipient or the message;
// not a mailbox's own trouble, not a 5xx, not a dropped connection, not a
// refusal before the recipient's step (the relay's).
func TestTryLater(t *testing.T) {
	t.Parallel()
	reply := func(stage smtp.Stage, code int, msg string) smtp.Result {
		class := smtp.Temporary
		if code >= 500 {
			class = smtp.Permanent
		}
		return smtp.Result{Class: class, Code: code, Stage: stage, Err: &textproto.Error{Code: code, Msg: msg}}
	}
	for _, c := range []struct {
		res  smtp.Result
		want bool
	}{
		{reply(smtp.StageRecipient, 421, "4.7.0 Try again later"), true},
		{reply(smtp.StageRecipient, 421, "Service not available"), true},
		{reply(smtp.StageData, 421, "4.7.28 Our system has detected an unusual rate of unsolicited mail"), true},
		{reply(smtp.StageRecipient, 451, "4.7.500 Server busy. Please try again later."), true},
		{reply(smtp.StageRecipient, 450, "4.7.1 Greylisted, please retry"), true},
		{reply(smtp.StageRecipient, 451, "4.3.2 System not accepting network messages"), true},
		{reply(smtp.StageData, 452, "4.4.5 Insufficient system storage"), true},
		{reply(smtp.StageRecipient, 451, "Temporary failure, try later"), true},
		{reply(smtp.StageRecipient, 451, "4.3.0 try again later"), true},
		{reply(smtp.StageRecipient, 452, "4.2.2 The email account that you tried to reach is over quota"), false},
		{reply(smtp.StageRecipient, 450, "4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered. Please resend your message at a later time."), false},
		{reply(smtp.StageRecipient, 450, "4.1.1 Recipient address rejected: try again later"), false},
		{reply(smtp.StageRecipient, 451, "4.3.0 Local error in processing"), false},
		{reply(smtp.StageRecipient, 550, "5.7.1 Try again later"), false},
		{reply(smtp.StageSender, 421, "4.7.0 Try again later"), false},
		{reply(smtp.StageConnect, 421, "4.7.0 Try again later"), false},
		{smtp.Result{Class: smtp.Temporary, Stage: smtp.StageRecipient, Err: io.ErrUnexpectedEOF}, false},
		{smtp.Result{Class: smtp.Accepted, Code: 250}, false},
	} {
		if got := tryLater(c.res); got != c.want {
			t.Errorf("%s %v: %v, want %v", c.res.Stage, c.res.Err, got, c.want)
		}
	}
}

// What the domain limits cost a range of 1,000 mails: without a limited
// domain a lookup per mail and nothing else; with 300 gmail.com mails
// among them, one call to Redis for the range (and one to give its slots
// back).
func BenchmarkDomainPlan(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 11})
	defer rdb.Close()
	prefix := fmt.Sprintf("deliverybench:{%d}:", time.Now().UnixNano())
	defer func() {
		if keys, _ := rdb.Keys(context.Background(), prefix+"*").Result(); len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
	}()
	builtIn, err := ratelimit.ParseDomainLimits("")
	if err != nil {
		b.Fatal(err)
	}
	for i := range builtIn { // a rate the benchmark never spends: the plan, not the rate, is measured
		builtIn[i].Rate, builtIn[i].Burst = 1_000_000, 1_000_000
	}
	domains := ratelimit.NewDomains(rdb, prefix, builtIn)
	claimed := func(limited int) []mail.Claimed {
		c := make([]mail.Claimed, 1000)
		for i := range c {
			dom := "bench.example"
			if i%10 < limited {
				dom = "gmail.com"
			}
			c[i] = mail.Claimed{ID: int64(i), Recipient: mail.Recipient{Email: mail.Email(fmt.Sprintf("user%07d@%s", i, dom))}}
		}
		return c
	}
	e := New(Deps{Domains: domains, Config: Config{Concurrency: 16, Lease: time.Minute}})
	for _, bc := range []struct {
		name    string
		limited int // in ten
		e       *Engine
	}{{"off", 0, New(Deps{})}, {"none-limited", 0, e}, {"gmail-30pct", 3, e}} {
		c := claimed(bc.limited)
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				p := bc.e.planDomains(ctx, 0, c)
				p.release(ctx)
				if p != nil && len(p.putOff) != 0 {
					b.Fatalf("%d mails put off", len(p.putOff))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(c)), "ns/mail")
		})
	}
}

// Counting a mail costs an atomic add: no allocation, a few ns, next to
// the ~125 µs a mail may cost in all (docs/performance.md).
func BenchmarkCountMail(b *testing.B) {
	m := NewMetrics(prometheus.NewRegistry())
	o := mail.Outcome{Status: mail.DeliverySent}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.mail(&o)
		}
	})
}
