package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Statistics (docs/statistics.md): each writer adds its counts to the
// hour's row of the send's scope (the send, or its automation) in its own
// transaction, through bumpStats.

// bumpStats adds each send's counts to the statistics of the hour at.
func bumpStats(ctx context.Context, q *db.Queries, at time.Time, counts map[int64]mail.Counts) error {
	n := len(counts)
	if n == 0 {
		return nil
	}
	p := db.BumpStatsParams{At: at, SendIds: make([]int64, 0, n),
		Triggered: make([]int64, 0, n), Delivered: make([]int64, 0, n), Deferred: make([]int64, 0, n),
		Bounces: make([]int64, 0, n), SoftBounces: make([]int64, 0, n), UniqueOpens: make([]int64, 0, n),
		TotalOpens: make([]int64, 0, n), UniqueClicks: make([]int64, 0, n), TotalClicks: make([]int64, 0, n),
		Unsubscribes: make([]int64, 0, n), Complaints: make([]int64, 0, n)}
	for id, c := range counts {
		if c == (mail.Counts{}) {
			continue
		}
		p.SendIds = append(p.SendIds, id)
		p.Triggered = append(p.Triggered, c.Triggered)
		p.Delivered = append(p.Delivered, c.Delivered)
		p.Deferred = append(p.Deferred, c.Deferred)
		p.Bounces = append(p.Bounces, c.Bounces)
		p.SoftBounces = append(p.SoftBounces, c.SoftBounces)
		p.UniqueOpens = append(p.UniqueOpens, c.UniqueOpens)
		p.TotalOpens = append(p.TotalOpens, c.TotalOpens)
		p.UniqueClicks = append(p.UniqueClicks, c.UniqueClicks)
		p.TotalClicks = append(p.TotalClicks, c.TotalClicks)
		p.Unsubscribes = append(p.Unsubscribes, c.Unsubscribes)
		p.Complaints = append(p.Complaints, c.Complaints)
	}
	if len(p.SendIds) == 0 {
		return nil
	}
	return q.BumpStats(ctx, p)
}

// bumpSend adds c to send id's statistics of this hour.
func bumpSend(ctx context.Context, q *db.Queries, id int64, c mail.Counts) error {
	return bumpStats(ctx, q, time.Now(), map[int64]mail.Counts{id: c})
}

// SingleSendStats are the statistics of the account's single send utr.
func (d *DB) SingleSendStats(ctx context.Context, userID int64, utr string) (mail.Stats, error) {
	id, err := d.q.SingleSendIDByUTR(ctx, db.SingleSendIDByUTRParams{UserID: userID, Utr: utr})
	if err != nil {
		return mail.Stats{}, err
	}
	return d.stats(ctx, "s", id)
}

// AutomationStats are the statistics of the account's automation utr: its
// runs' mails, every step together.
func (d *DB) AutomationStats(ctx context.Context, userID int64, utr string) (mail.Stats, error) {
	id, err := d.q.AutomationIDByUTR(ctx, db.AutomationIDByUTRParams{UserID: userID, Utr: utr})
	if err != nil {
		return mail.Stats{}, err
	}
	return d.stats(ctx, "a", id)
}

func (d *DB) stats(ctx context.Context, scope string, id int64) (mail.Stats, error) {
	s := mail.Stats{Links: []mail.LinkClicks{}, Timeline: []mail.HourCounts{}}
	hours, err := d.q.StatsTimeline(ctx, db.StatsTimelineParams{Scope: scope, ScopeID: id})
	if err != nil {
		return s, err
	}
	for _, h := range hours {
		c := mail.Counts{Triggered: h.Triggered, Delivered: h.Delivered, Deferred: h.Deferred, Bounces: h.Bounces,
			SoftBounces: h.SoftBounces, UniqueOpens: h.UniqueOpens, TotalOpens: h.TotalOpens, UniqueClicks: h.UniqueClicks,
			TotalClicks: h.TotalClicks, Unsubscribes: h.Unsubscribes, Complaints: h.Complaints}
		s.Counts.Add(c)
		s.Timeline = append(s.Timeline, mail.HourCounts{Hour: h.Hour.UTC(), Counts: c})
	}
	links, err := d.q.LinkStats(ctx, db.LinkStatsParams{Scope: scope, ScopeID: id})
	if err != nil {
		return s, err
	}
	for _, l := range links {
		s.Links = append(s.Links, mail.LinkClicks{URL: l.Url, UniqueClicks: l.UniqueClicks, TotalClicks: l.TotalClicks})
	}
	return s, nil
}

// SendLinks is send id's link table: the address of each link number.
func (d *DB) SendLinks(ctx context.Context, id int64) ([]string, error) {
	rows, err := d.q.SendLinks(ctx, id)
	if err != nil {
		return nil, err
	}
	return linkTable(rows), nil
}

// NumberLinks numbers urls for send id, keeping the numbers its links
// already have, and answers the send's whole link table.
func (d *DB) NumberLinks(ctx context.Context, id int64, urls []string) ([]string, error) {
	var table []string
	err := d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		if err := q.LockSendLinks(ctx, id); err != nil {
			return err
		}
		if len(urls) > 0 {
			if err := q.AddSendLinks(ctx, db.AddSendLinksParams{SendID: id, Urls: urls}); err != nil {
				return err
			}
		}
		rows, err := q.SendLinks(ctx, id)
		table = linkTable(rows)
		return err
	})
	return table, err
}

func linkTable(rows []db.SendLinksRow) []string {
	table := make([]string, 0, len(rows))
	for _, r := range rows {
		for int(r.Idx) > len(table) {
			table = append(table, "") // a gap: no link has that number
		}
		table = append(table, r.Url)
	}
	return table
}

// clickRow is a (send, delivery, link) RecordClicks counted, with its
// clicks in the flush.
type clickRow struct {
	db.RecordClicksRow
	Clicks int64
}

// RecordActivity records a flush of the open and click recorder: the
// deliveries' own counts, their sends' and automations' counters, the
// statistics, the clicks by link and the webhooks' events, in one
// transaction. Opens and clicks of deliveries that do not exist (or whose
// list token is not the send's) count nothing.
func (d *DB) RecordActivity(ctx context.Context, opens []mail.Open, clicks []mail.Click) error {
	if len(opens) == 0 && len(clicks) == 0 {
		return nil
	}
	return d.InTx(ctx, func(_ pgx.Tx, q *db.Queries) error {
		counts := map[int64]mail.Counts{}
		var opened []db.RecordOpensRow
		var clicked []clickRow
		if len(opens) > 0 {
			p := db.RecordOpensParams{SendIds: make([]int64, len(opens)), Ids: make([]int64, len(opens)), ListTokens: make([]string, len(opens))}
			for i, o := range opens {
				p.SendIds[i], p.Ids[i], p.ListTokens[i] = o.SendID, o.DeliveryID, o.ListToken
			}
			rows, err := q.RecordOpens(ctx, p)
			if err != nil {
				return err
			}
			opened = rows
			for _, r := range rows {
				c := counts[r.SendID]
				c.TotalOpens += r.Opens
				if r.First {
					c.UniqueOpens++
				}
				counts[r.SendID] = c
			}
		}
		if len(clicks) > 0 {
			p := db.RecordClicksParams{SendIds: make([]int64, len(clicks)), Ids: make([]int64, len(clicks)), Idxs: make([]int32, len(clicks))}
			type link struct {
				send, id int64
				idx      int32
			}
			n := make(map[link]int64, len(clicks))
			for i, c := range clicks {
				p.SendIds[i], p.Ids[i], p.Idxs[i] = c.SendID, c.DeliveryID, int32(c.Link)
				n[link{c.SendID, c.DeliveryID, int32(c.Link)}]++
			}
			rows, err := q.RecordClicks(ctx, p)
			if err != nil {
				return err
			}
			clicked = make([]clickRow, len(rows))
			for i, r := range rows {
				clicked[i] = clickRow{r, n[link{r.SendID, r.DeliveryID, r.Idx}]}
			}
			// The mails clicking for the first time, marked on their rows.
			var m db.MarkClickersParams
			for _, r := range rows {
				m.SendIds, m.Ids = append(m.SendIds, r.SendID), append(m.Ids, r.DeliveryID)
			}
			if len(m.Ids) > 0 {
				first, err := q.MarkClickers(ctx, m)
				if err != nil {
					return err
				}
				for _, f := range first {
					c := counts[f.SendID]
					c.UniqueClicks++
					counts[f.SendID] = c
				}
			}
			var links db.BumpLinkStatsParams
			for _, r := range clicked {
				c := counts[r.SendID]
				c.TotalClicks += r.Clicks
				counts[r.SendID] = c
				uniq := int64(0)
				if r.FirstOfLink {
					uniq = 1
				}
				links.SendIds, links.Urls = append(links.SendIds, r.SendID), append(links.Urls, r.Url)
				links.Totals, links.Uniques = append(links.Totals, r.Clicks), append(links.Uniques, uniq)
			}
			if len(links.SendIds) > 0 {
				if err := q.BumpLinkStats(ctx, links); err != nil {
					return err
				}
			}
		}
		if err := d.emitActivity(ctx, q, opened, clicked); err != nil {
			return err
		}
		// The statistics, then the sends' rows: every writer takes them in
		// that order (a batch's record too), so none waits on another's.
		if err := bumpStats(ctx, q, time.Now(), counts); err != nil {
			return err
		}
		var b db.BumpOpensParams
		for id, c := range counts {
			if c.TotalOpens > 0 {
				b.SendIds, b.Totals, b.Uniques = append(b.SendIds, id), append(b.Totals, c.TotalOpens), append(b.Uniques, c.UniqueOpens)
			}
		}
		if len(b.SendIds) == 0 {
			return nil
		}
		return q.BumpOpens(ctx, b)
	})
}

// SendProviders are the outcomes of account userID's single send utr by
// receiving provider, every provider in report order
// (docs/deliverability.md); ENOTFOUND when there is no such send.
func (d *DB) SendProviders(ctx context.Context, userID int64, utr string) ([]mail.ProviderStats, error) {
	rows, err := d.q.SendProviderStats(ctx, db.SendProviderStatsParams{Utr: utr, UserID: userID})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, mail.NotFound()
	}
	same := make([]db.AccountProviderStatsRow, len(rows))
	for i, r := range rows {
		same[i] = db.AccountProviderStatsRow(r)
	}
	return providerList(same), nil
}

// AccountProviders are account userID's outcomes by receiving provider in
// the hours from since up to until, every send and automation run.
func (d *DB) AccountProviders(ctx context.Context, userID int64, since, until time.Time) ([]mail.ProviderStats, error) {
	rows, err := d.q.AccountProviderStats(ctx, db.AccountProviderStatsParams{UserID: userID, Since: since, Until: until})
	return providerList(rows), err
}

// providerList is every provider's figures in report order, zero where
// rows have none (a row of provider -1 is a send's without any).
func providerList(rows []db.AccountProviderStatsRow) []mail.ProviderStats {
	by := map[mail.Provider]mail.ProviderStats{}
	for _, r := range rows {
		by[mail.Provider(r.Provider)] = mail.ProviderStats{Delivered: r.Delivered, Deferred: r.Deferred, Bounced: r.Bounced,
			Blocked: r.Blocked, Complained: r.Complained}
	}
	out := make([]mail.ProviderStats, len(mail.Providers))
	for i, p := range mail.Providers {
		out[i] = by[p]
		out[i].Provider = p.Name()
	}
	return out
}
