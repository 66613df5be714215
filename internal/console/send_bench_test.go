package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/mailroom/mailroom/internal/console"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

// BenchmarkSendPages times the single-send pages of an account with
// 1,000,000 contacts and 10,000 sends, through the real router and a
// signed-in session (docs/console.md has the figures):
//
//	go test ./internal/console -run '^$' -bench SendPages -benchtime 20x
//
// count-exact is the audience count itself (postgres.CountAudience: one
// contact type, so its kept length less its removed addresses) of the
// million-contact list less an exclude list, a group's and the global
// unsubscribes and the bounces; count-two-lists the count of the large
// list and a small one (the small one's rows not in the large one added);
// count-segment the count of the segment of a fifth of the list alone,
// less the same exclusions (its kept length less its removed addresses);
// count-list-and-segment of the list and that segment (the segment's rows
// probed in the list); count-first is the fragment's answer
// to a selection not counted yet (the count, or after 150 ms a note that
// it is counting); count-again the
// answer once the count is kept. The data takes about a minute to make.
func BenchmarkSendPages(b *testing.B) {
	ctx := context.Background()
	d := testdb.New(b)
	con, err := console.New(console.Config{PublicURL: "http://console.test", BcryptCost: bcrypt.MinCost}, console.Deps{DB: d, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Config{MaxBodyBytes: 1 << 20}, httpapi.Deps{DB: d, Geo: testdb.Geo(b), Log: quiet,
		Console: con, ConsolePaths: console.Prefixes}))
	b.Cleanup(srv.Close)

	acct, _, err := d.CreateAccount(ctx, "scale")
	if err != nil {
		b.Fatal(err)
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte("scale password"), bcrypt.MinCost)
	if _, _, err := d.CreateOwner(ctx, acct, "owner@scale.example", string(hash)); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var all, staff, group, seg int64
	for _, q := range []struct {
		sql string
		dst *int64
	}{
		{"INSERT INTO contact_types (user_id, name) VALUES ($1, 'All') RETURNING id", &all},
		{"INSERT INTO contact_types (user_id, name) VALUES ($1, 'Staff') RETURNING id", &staff},
		{`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
		  VALUES ($1, gen_random_uuid()::text, 'News', 'News', 1) RETURNING id`, &group},
	} {
		if err := d.Pool.QueryRow(ctx, q.sql, acct).Scan(q.dst); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Pool.QueryRow(ctx, `INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value)
		VALUES ($1, $2, 'A fifth', '{}', '{}', '{}') RETURNING id`, acct, all).Scan(&seg); err != nil {
		b.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name)
		  SELECT $1, $2, 'user' || i || '@example' || (i % 50) || '.com', 'First' || i, 'Last' FROM generate_series(1, 1000000) i`,
			[]any{acct, all}},
		{`INSERT INTO contacts (user_id, contact_type_id, email, first_name)
		  SELECT $1, $2, 'user' || (i * 100) || '@example' || ((i * 100) % 50) || '.com', 'S' FROM generate_series(1, 5000) i`,
			[]any{acct, staff}},
		{`INSERT INTO segment_members (user_id, segment_id, contact_id) SELECT $1, $2, id FROM contacts WHERE contact_type_id = $3 AND id % 5 = 0`,
			[]any{acct, seg, all}},
		{`INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address)
		  SELECT $1, NULL, 'user' || (i * 37) || '@example' || ((i * 37) % 50) || '.com' FROM generate_series(1, 20000) i`, []any{acct}},
		{`INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address)
		  SELECT $1, $2, 'user' || (i * 41) || '@example' || ((i * 41) % 50) || '.com' FROM generate_series(1, 5000) i`, []any{acct, group}},
		{`INSERT INTO bounces (user_id, email_lc)
		  SELECT $1, 'user' || (i * 53) || '@example' || ((i * 53) % 50) || '.com' FROM generate_series(1, 10000) i ON CONFLICT DO NOTHING`,
			[]any{acct}},
		{`INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, utr, is_verified)
		  VALUES ($1, 'Scale', 'news@scale.example', 'news@scale.example', 276, 'Marienplatz 1', 'n', gen_random_uuid()::text, 1)`, []any{acct}},
		// 10,000 completed sends with templates, 48 hours of statistics
		// each and three links; the newest one still running.
		{`INSERT INTO single_sends (user_id, utr, template_id, template_html, sender_id, unsubscribe_group_id, single_send_name, subject,
		    preheader, recipient_id, status, triggered, remaining, delivered, bounces, unique_opens, started_at, sent_at)
		  SELECT $1, gen_random_uuid(), 2, repeat('<p>Hello ((first_name))</p>', 2000), 1, $2, 'Send ' || i, 'Subject ' || i, 'P',
		    ('[{"id":"' || $3::bigint || '","table":"contacts_"}]')::jsonb, CASE WHEN i = 10000 THEN 2 ELSE 3 END, 1000000,
		    CASE WHEN i = 10000 THEN 400000 ELSE 0 END, 590000, 10000, 300000,
		    now() - (10000 - i) * interval '1 hour' - interval '10 minutes', CASE WHEN i < 10000 THEN now() - (10000 - i) * interval '1 hour' END
		  FROM generate_series(1, 10000) i`, []any{acct, group, all}},
		{`INSERT INTO send_stats (scope, scope_id, hour, triggered, delivered, deferred, unique_opens, total_opens, unique_clicks, total_clicks)
		  SELECT 's', s.id, date_trunc('hour', s.started_at) + h * interval '1 hour', CASE WHEN h = 0 THEN 1000000 ELSE 0 END,
		    CASE WHEN h = 0 THEN 590000 ELSE 0 END, 3, 6000, 9000, 600, 700
		  FROM single_sends s, generate_series(0, 47) h WHERE s.user_id = $1`, []any{acct}},
		{`INSERT INTO link_stats (scope, scope_id, url, unique_clicks, total_clicks)
		  SELECT 's', s.id, 'https://shop.example/' || l, 1000 * l, 1200 * l FROM single_sends s, generate_series(1, 3) l WHERE s.user_id = $1`,
			[]any{acct}},
		{"VACUUM ANALYZE contacts", nil}, {"VACUUM ANALYZE segment_members", nil}, {"VACUUM ANALYZE unsubscribes", nil},
		{"VACUUM ANALYZE bounces", nil}, {"VACUUM ANALYZE suppressed_contacts", nil}, {"VACUUM ANALYZE single_sends", nil},
		{"VACUUM ANALYZE send_stats", nil},
	} {
		if _, err := d.Pool.Exec(ctx, q.sql, q.args...); err != nil {
			b.Fatalf("%s: %v", q.sql, err)
		}
	}
	if err := d.Recount(ctx, acct); err != nil {
		b.Fatal(err)
	}
	var running, done string
	if err := d.Pool.QueryRow(ctx, `SELECT (SELECT utr::text FROM single_sends WHERE user_id = $1 AND status = 2),
		(SELECT utr::text FROM single_sends WHERE user_id = $1 AND status = 3 ORDER BY id DESC LIMIT 1)`, acct).Scan(&running, &done); err != nil {
		b.Fatal(err)
	}
	b.Logf("data made in %s", time.Since(start).Round(time.Second))

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, want ...string) string {
		res, err := c.Get(srv.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("GET %s: %d\n%s", path, res.StatusCode, body)
		}
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				b.Fatalf("GET %s lacks %q:\n%s", path, w, body)
			}
		}
		return string(body)
	}
	res, err := c.Get(srv.URL + "/signin")
	if err != nil {
		b.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfRE.FindStringSubmatch(string(page))
	form := url.Values{"email": {"owner@scale.example"}, "password": {"scale password"}, "csrf": {m[1]}}
	if res, err = c.PostForm(srv.URL+"/signin", form); err != nil || res.StatusCode != 303 {
		b.Fatalf("sign-in: %v %v", res, err)
	}
	res.Body.Close()

	lists := []mail.ListRef{{Table: mail.ListContacts, ID: all}}
	excluded := []mail.ListRef{{Table: mail.ListContacts, ID: staff}}
	countPath := func(group int64) string {
		return fmt.Sprintf("/sends/count?recipient_id=contacts_%d&exclude_specific_recipient_id=contacts_%d&unsubscribe_group_id=%d", all, staff, group)
	}
	b.Run("count-exact", func(b *testing.B) {
		for b.Loop() {
			if n, err := d.CountAudience(ctx, acct, lists, excluded, group); err != nil || n < 900000 {
				b.Fatalf("%d %v", n, err)
			}
		}
	})
	b.Run("count-two-lists", func(b *testing.B) {
		two := append(lists, excluded...) // the large list's count, and the small one's rows not in it
		for b.Loop() {
			if n, err := d.CountAudience(ctx, acct, two, nil, group); err != nil || n < 900000 {
				b.Fatalf("%d %v", n, err)
			}
		}
	})
	b.Run("count-segment", func(b *testing.B) {
		one := []mail.ListRef{{Table: mail.ListSegments, ID: seg}} // its kept length less its removed addresses
		for b.Loop() {
			if n, err := d.CountAudience(ctx, acct, one, excluded, group); err != nil || n < 150000 {
				b.Fatalf("%d %v", n, err)
			}
		}
	})
	b.Run("count-list-and-segment", func(b *testing.B) {
		both := append(lists[:1:1], mail.ListRef{Table: mail.ListSegments, ID: seg}) // the segment's rows probed in the list
		for b.Loop() {
			if n, err := d.CountAudience(ctx, acct, both, nil, group); err != nil || n < 900000 {
				b.Fatalf("%d %v", n, err)
			}
		}
	})
	b.Run("count-first", func(b *testing.B) {
		g := int64(1 << 40)
		for b.Loop() {
			g++ // a group of no one: a selection not counted yet
			body := get(countPath(g))
			if !strings.Contains(body, "Counting") && !strings.Contains(body, `data-count="`) {
				b.Fatalf("neither a count nor Counting:\n%s", body)
			}
		}
	})
	get(countPath(group)) // starts the count; wait for it
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		res, err := c.Get(srv.URL + countPath(group))
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(body), `data-count="`) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the count did not finish")
		}
	}
	b.Run("count-again", func(b *testing.B) {
		for b.Loop() {
			get(countPath(group), `data-count="`)
		}
	})
	b.Run("list-first-page", func(b *testing.B) {
		for b.Loop() {
			get("/sends", "Page 1 of 500")
		}
	})
	b.Run("list-last-page", func(b *testing.B) {
		for b.Loop() {
			get("/sends?page=500", "Page 500 of 500", "Send 1<")
		}
	})
	b.Run("progress-fragment", func(b *testing.B) {
		for b.Loop() {
			get("/sends/"+running+"/progress", `id="progress-final">600,000<`)
		}
	})
	b.Run("show-page", func(b *testing.B) {
		for b.Loop() {
			get("/sends/"+running, `id="progress"`)
		}
	})
	b.Run("stats-page", func(b *testing.B) {
		for b.Loop() {
			get("/sends/"+done+"/stats", "https://shop.example/3", "data-series")
		}
	})
}
