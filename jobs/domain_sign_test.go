package jobs_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mailroom/mailroom/internal/dkim"
	"github.com/mailroom/mailroom/internal/dkim/dkimtest"
	"github.com/mailroom/mailroom/internal/domains"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/ratelimit"
	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// A send from an account's verified sending domain is signed with that
// domain's keys, RSA and Ed25519 both, and python3-dkim verifies both
// signatures against the records the API told the account to publish;
// another account's send from the same domain is not signed with them.
func TestVerifiedDomainSigns(t *testing.T) {
	// Not parallel: its sweeper works on every send of the package's
	// database.
	ctx := context.Background()
	d := testdb.New(t)
	html := `<html><body><p>Hi ((first_name))</p></body></html>`
	owner, other := newSendFixture(t, d, html), newSendFixture(t, d, html) // both send as news@acme.example
	sealer, err := domains.NewSealer(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	svc := domains.Service{Store: d, Sealer: sealer, Setup: domains.Setup{SPFInclude: "_spf.m.test", BounceMX: "in.m.test"}}
	dom, err := svc.Add(ctx, owner.user, "acme.example", true)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, d, "UPDATE sending_domains SET verified_at = now() WHERE id = $1", dom.ID) // as a verify that found every record does
	keys := &dkim.Keys{}
	if n, err := domains.LoadKeys(ctx, d, sealer, keys); err != nil || n != 1 {
		t.Fatalf("keys loaded: %d %v", n, err)
	}

	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 10, Window: 2}, func(deps *jobs.Deps) { deps.DKIM = keys })
	send := func(f sendFixture) [][]byte {
		before := len(s.Messages())
		exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
		version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
		q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
		q.drain(t, mux)
		var out [][]byte
		for _, m := range s.Messages()[before:] {
			out = append(out, m.Data)
		}
		if len(out) == 0 {
			t.Fatal("no mail received")
		}
		return out
	}
	records := map[string]string{dom.Selector: dom.Records[0].Value, dom.Selector + "e": dom.Records[1].Value}
	for _, m := range send(owner) {
		if n := bytes.Count(m, []byte("DKIM-Signature:")); n != 2 || !bytes.Contains(m, []byte("d=acme.example")) ||
			!bytes.Contains(m, []byte("s="+dom.Selector+";")) {
			t.Fatalf("%d signatures:\n%.1500s", n, m)
		}
		if got := dkimtest.Verify(t, m, records); got != "ok\nok" {
			t.Fatalf("python3-dkim: %q\n%.1500s", got, m)
		}
	}
	for _, m := range send(other) {
		if bytes.Contains(m, []byte("DKIM-Signature:")) {
			t.Fatalf("another account's mail from the domain was signed with its key:\n%.800s", m)
		}
	}
	// Deleted, the domain's keys sign no more once the worker reads them
	// again.
	if err := d.DeleteSendingDomain(ctx, owner.user, dom.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := domains.LoadKeys(ctx, d, sealer, keys); err != nil || n != 0 || keys.ForAccount(owner.user, "news@acme.example") != nil {
		t.Fatalf("after the delete: %d keys (%v)", n, err)
	}
	// A key sealed under another secret is left out, and said.
	if _, err := svc.Add(ctx, owner.user, "acme.example", false); err != nil {
		t.Fatal(err)
	}
	exec(t, d, "UPDATE sending_domains SET verified_at = now() WHERE user_id = $1 AND deleted_at IS NULL", owner.user)
	wrong, _ := domains.NewSealer(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{4}, 32)))
	if n, err := domains.LoadKeys(ctx, d, wrong, keys); n != 0 || err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("another secret: %d %v", n, err)
	}
}

// A send from a domain warming up goes out to the day's allowance,
// counted in Redis across workers; the rest waits for the next UTC day,
// deferred with the reason warm-up, untried.
func TestWarmupHoldsTheRest(t *testing.T) {
	// Not parallel: its sweeper works on every send of the package's
	// database.
	ctx := context.Background()
	d := testdb.New(t)
	f := newSendFixture(t, d, `<html><body><p>Hi ((first_name))</p></body></html>`)
	sealer, _ := domains.NewSealer(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32)))
	svc := domains.Service{Store: d, Sealer: sealer, Setup: domains.Setup{SPFInclude: "_spf.m.test", BounceMX: "in.m.test"}}
	dom, err := svc.Add(ctx, f.user, "acme.example", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetWarmup(ctx, f.user, dom.ID, true, "2"); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 12})
	t.Cleanup(func() { rdb.Close() })
	s := smtptest.New(t, smtptest.Options{})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	mux, q, _ := engine(t, d, pool, jobs.Engine{BatchSize: 100, Window: 1}, func(deps *jobs.Deps) {
		deps.Warmups = ratelimit.NewDaily(rdb, "test:warmup:"+time.Now().Format("150405.000000")+":")
	})
	exec(t, d, "UPDATE single_sends SET status = 1 WHERE id = $1", f.send)
	version := scalar[int32](t, d, "SELECT version FROM single_sends WHERE id = $1", f.send)
	q.enqueue(ctx, jobs.NewDispatchTask(f.send, version, time.Now()))
	q.drain(t, mux)
	triggered := scalar[int64](t, d, "SELECT triggered FROM single_sends WHERE id = $1", f.send)
	if n := s.Count(); n != 2 || triggered < 4 {
		t.Fatalf("%d mails went of %d, want 2", n, triggered)
	}
	tomorrow := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	held := scalar[int64](t, d, `SELECT count(*) FROM deliveries WHERE send_id = $1 AND status = 0 AND attempts = 0
		AND error = $2 AND next_at = $3`, f.send, mail.WarmupReason, tomorrow)
	if held != triggered-2 {
		t.Fatalf("%d of %d put off to %s with the warm-up reason", held, triggered-2, tomorrow)
	}
	if n := scalar[int64](t, d, "SELECT COALESCE(sum(deferred), 0)::bigint FROM send_stats WHERE scope = 's' AND scope_id = $1", f.send); n != held {
		t.Fatalf("statistics count %d deferred, want %d", n, held)
	}
}
