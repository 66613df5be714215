package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// BenchmarkStepPass is one stepping pass over 1,000,000 active
// enrollments of which 1% are due: every due one gets its run's delivery
// and moves on. Run it with -benchtime=1x (the setup makes a million
// contacts and enrollments).
func BenchmarkStepPass(b *testing.B) {
	ctx := context.Background()
	// Three schedules a day apart; every hundredth contact due a minute ago.
	d, now := stepSetup(b, "step", 3, "days",
		"CASE WHEN c.id % 100 = 0 THEN $3::timestamptz - interval '1 minute' ELSE $3::timestamptz + interval '1 day' END")
	auto := int64(0)
	if err := d.Pool.QueryRow(ctx, "SELECT id FROM automations WHERE automation_name = 'step'").Scan(&auto); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		runs := 0
		for {
			pass, err := d.StepAutomations(ctx, postgres.Step{Now: now, Enrollments: 5000, BatchSize: 1000,
				RunEvery: 30 * time.Second, NewToken: func() string { return "tok" }})
			rs, more := pass.Runs, pass.More
			if err != nil {
				b.Fatal(err)
			}
			runs += len(rs)
			if !more {
				break
			}
		}
		var stepped int64
		if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM automation_enrollments WHERE automation_id = $1 AND step <> (SELECT min(id) FROM automation_schedules WHERE automation_id = $1)", auto).Scan(&stepped); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(stepped), "stepped")
		b.ReportMetric(float64(runs), "runs")
		b.ReportMetric(time.Since(start).Seconds()*1000, "pass-ms")
	}
}

// BenchmarkStepBacklog drains a backlog of 1,000,000 due enrollments (an
// import into a live welcome automation), pass after pass, and reports the
// enrollments stepped per second and the first and last passes' times: a
// drain that slows as it goes shows there.
func BenchmarkStepBacklog(b *testing.B) {
	ctx := context.Background()
	d, now := stepSetup(b, "backlog", 1, "instantly", "$3::timestamptz")
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		var passes []time.Duration
		for {
			t := time.Now()
			pass, err := d.StepAutomations(ctx, postgres.Step{Now: now, Enrollments: 5000, BatchSize: 1000,
				RunEvery: 30 * time.Second, NewToken: func() string { return "tok" }})
			more := pass.More
			if err != nil {
				b.Fatal(err)
			}
			passes = append(passes, time.Since(t))
			if !more {
				break
			}
		}
		b.ReportMetric(1e6/time.Since(start).Seconds(), "enrollments/s")
		b.ReportMetric(float64(passes[0].Milliseconds()), "first-pass-ms")
		b.ReportMetric(float64(passes[len(passes)-2].Milliseconds()), "last-pass-ms")
	}
}

// stepSetup makes an account with 1,000,000 contacts in one type, a live
// welcome automation named name with schedules mails of waitType (the
// first due by due, an SQL expression over contact c and now $3), a
// verified sender, and an enrollment per contact at the first schedule.
func stepSetup(b *testing.B, name string, schedules int, waitType, due string) (*postgres.DB, time.Time) {
	b.Helper()
	ctx := context.Background()
	d := testdb.New(b)
	user, _, err := d.CreateAccount(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	var typ, auto, sender int64
	q := func(dst *int64, sql string, args ...any) {
		b.Helper()
		if err := d.Pool.QueryRow(ctx, sql, args...).Scan(dst); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	exec := func(sql string, args ...any) {
		b.Helper()
		if _, err := d.Pool.Exec(ctx, sql, args...); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	q(&typ, `INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id`, user, name)
	exec(`INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		SELECT $1, $2, 'c' || i || '@' || $3 || '.example', 'C' || i FROM generate_series(1, 1000000) i`, user, typ, name)
	q(&auto, `INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table, status)
		VALUES ($1, gen_random_uuid(), $2, 1, $3, 'contacts_', 1) RETURNING id`, user, name, typ)
	q(&sender, `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		VALUES ($1, 'S', 's@acme.example', 's@acme.example', 276, 'Street 1', 'n', gen_random_uuid()::text, 1) RETURNING id`, user)
	exec(`INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject, waiting_period, waiting_type, template_html)
		SELECT $1, $2, gen_random_uuid(), $3, 1, 's' || i, 1, $5, '<p>x</p>' FROM generate_series(1, $4::int) i`, user, auto, sender, schedules, waitType)
	now := time.Now()
	exec(`INSERT INTO automation_enrollments (automation_id, user_id, contact_id, step, due_at)
		SELECT $1, $2, c.id, (SELECT min(id) FROM automation_schedules WHERE automation_id = $1), `+due+`
		FROM contacts c WHERE c.contact_type_id = $4`, auto, user, now, typ)
	exec(`ANALYZE automation_enrollments; ANALYZE contacts`)
	return d, now
}
