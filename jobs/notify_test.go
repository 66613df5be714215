package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/smtp"
	"github.com/mailroom/mailroom/internal/smtp/smtptest"
	"github.com/mailroom/mailroom/internal/testdb"
	"github.com/mailroom/mailroom/jobs"
)

// Every event reaches every notification recipient of its account once,
// however often the task runs; a permanent refusal does not hold the
// others, a temporary one is tried again by the next run.
func TestNotifyEventsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	var flaky atomic.Int32
	s := smtptest.New(t, smtptest.Options{Reply: func(rcpt string) error {
		switch {
		case strings.HasPrefix(rcpt, "gone@"):
			return smtptest.Permanent("no such user")
		case strings.HasPrefix(rcpt, "flaky@") && flaky.Add(1) == 1:
			return smtptest.Temporary("try later")
		}
		return nil
	}})
	pool := smtp.NewPool(smtp.Config{Addr: s.Addr, Size: 2, Timeout: 5 * time.Second})
	defer pool.Close()
	deps := jobs.Deps{DB: d, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Transport: pool, NotifyFrom: "mailroom <notify@example.com>"}

	var accts [3]int64
	for i := range accts {
		id, _, err := d.CreateAccount(ctx, "notify")
		if err != nil {
			t.Fatal(err)
		}
		accts[i] = id
	}
	// Account 0: two recipients and one that refuses; account 1: a flaky
	// one; account 2: none.
	if _, err := d.Pool.Exec(ctx, `INSERT INTO notification_recipients (user_id, email_address, email_owner) VALUES
		($1, 'ann@example.com', 'Ann'), ($1, 'bob@example.com', 'Bob'), ($1, 'gone@example.com', 'Gone'),
		($2, 'flaky@example.com', 'Flaky')`, accts[0], accts[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `INSERT INTO events (user_id, kind, subject_type, subject_id, payload) VALUES
		($1, 'contacts.imported', 'contact_type', 7, '{"rows": 3, "added": 2, "updated": 1, "skipped": 0}'),
		($1, 'address.unsubscribed', 'unsubscribe', 9, '{"email_address": "x@example.com", "unsubscribe_groups_id": null}'),
		($2, 'contacts.imported', 'contact_type', 8, '{"rows": 1, "added": 1, "updated": 0, "skipped": 0}'),
		($3, 'contacts.imported', 'contact_type', 9, '{"rows": 1, "added": 1, "updated": 0, "skipped": 0}')`,
		accts[0], accts[1], accts[2]); err != nil {
		t.Fatal(err)
	}
	run := jobs.NotifyEvents(deps)
	task := jobs.NewNotifyEventsTask()
	if err := run(ctx, task); err == nil || !strings.Contains(err.Error(), "try later") {
		t.Fatalf("first run: %v (want the flaky address's 451)", err)
	}
	for range 2 {
		if err := run(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, m := range s.Messages() {
		subject := ""
		for _, line := range strings.Split(string(m.Data), "\r\n") {
			if v, ok := strings.CutPrefix(line, "Subject: "); ok {
				subject = v
			}
		}
		got = append(got, m.To[0]+" "+subject)
	}
	sort.Strings(got)
	want := []string{
		"ann@example.com An address unsubscribed", "ann@example.com Contacts imported",
		"bob@example.com An address unsubscribed", "bob@example.com Contacts imported",
		"flaky@example.com Contacts imported",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("mailed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var open int
	if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM events WHERE user_id = ANY($1) AND notified_at IS NULL", accts[:]).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Fatalf("%d events not marked", open)
	}
	m := s.Messages()[0]
	for _, h := range []string{"From: \"mailroom\" <notify@example.com>", "Message-ID: <", "Date: ", "MIME-Version: 1.0"} {
		if !strings.Contains(string(m.Data), h) {
			t.Errorf("no %q in\n%s", h, m.Data)
		}
	}
}
