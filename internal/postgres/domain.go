package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/domains"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// CreateSendingDomain keeps a new sending domain of account userID
// (domains.Store); 0 when the account has it already.
func (d *DB) CreateSendingDomain(ctx context.Context, userID int64, nd domains.NewDomain) (int64, error) {
	recs, err := json.Marshal(nd.Records)
	if err != nil {
		return 0, err
	}
	id, err := d.q.CreateSendingDomain(ctx, db.CreateSendingDomainParams{UserID: userID, Domain: nd.Domain, Selector: nd.Selector,
		RsaPrivate: nd.RSAPrivate, Ed25519Private: nd.Ed25519Private, Records: recs})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// CountSendingDomains is how many sending domains account userID has.
func (d *DB) CountSendingDomains(ctx context.Context, userID int64) (int64, error) {
	return d.q.CountSendingDomains(ctx, userID)
}

// SendingDomain is account userID's sending domain id; ENOTFOUND when it
// has none.
func (d *DB) SendingDomain(ctx context.Context, userID, id int64) (mail.SendingDomain, error) {
	r, err := d.q.SendingDomain(ctx, db.SendingDomainParams{ID: id, UserID: userID})
	if errors.Is(err, pgx.ErrNoRows) {
		return mail.SendingDomain{}, mail.NotFound()
	}
	if err != nil {
		return mail.SendingDomain{}, err
	}
	return sendingDomainOf(db.SendingDomainsRow(r))
}

// SendingDomains are account userID's sending domains, oldest first.
func (d *DB) SendingDomains(ctx context.Context, userID int64) ([]mail.SendingDomain, error) {
	rows, err := d.q.SendingDomains(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]mail.SendingDomain, len(rows))
	for i, r := range rows {
		if out[i], err = sendingDomainOf(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SaveDomainChecks keeps what a lookup found of account userID's domain
// id's records; it is verified while every one is found.
func (d *DB) SaveDomainChecks(ctx context.Context, userID, id int64, recs []mail.DomainRecord) error {
	b, err := json.Marshal(recs)
	if err != nil {
		return err
	}
	all := !slices.ContainsFunc(recs, func(r mail.DomainRecord) bool { return r.Status != mail.RecordFound })
	n, err := d.q.SaveDomainChecks(ctx, db.SaveDomainChecksParams{Records: b, AllFound: all, ID: id, UserID: userID})
	if err == nil && n == 0 {
		return mail.NotFound()
	}
	return err
}

// DeleteSendingDomain deletes account userID's sending domain id.
func (d *DB) DeleteSendingDomain(ctx context.Context, userID, id int64) error {
	n, err := d.q.DeleteSendingDomain(ctx, db.DeleteSendingDomainParams{ID: id, UserID: userID})
	if err == nil && n == 0 {
		return mail.NotFound()
	}
	return err
}

// SetDomainWarmup starts account userID's domain id's warm-up from today
// (UTC; one under way keeps its first day) with schedule (nil: the
// default ramp), or ends it.
func (d *DB) SetDomainWarmup(ctx context.Context, userID, id int64, on bool, schedule []int) error {
	var sched []int32
	for _, n := range schedule {
		sched = append(sched, int32(n))
	}
	n, err := d.q.SetDomainWarmup(ctx, db.SetDomainWarmupParams{Warm: on, Schedule: sched, ID: id, UserID: userID})
	if err == nil && n == 0 {
		return mail.NotFound()
	}
	return err
}

func sendingDomainOf(r db.SendingDomainsRow) (mail.SendingDomain, error) {
	sd := mail.SendingDomain{ID: r.ID, UserID: r.UserID, Domain: r.Domain, Selector: r.Selector, Ed25519: r.Ed25519,
		CheckedAt: r.CheckedAt, VerifiedAt: r.VerifiedAt, Verified: r.VerifiedAt != nil, CreatedAt: r.CreatedAt,
		WarmupSchedule: ints(r.WarmupSchedule)}
	if r.WarmupFrom.Valid {
		from := r.WarmupFrom.Time.UTC()
		sd.WarmupFrom = &from
	}
	if err := json.Unmarshal([]byte(r.Records), &sd.Records); err != nil {
		return sd, fmt.Errorf("postgres: sending domain %d records: %w", r.ID, err)
	}
	return sd, nil
}

// VerifiedDomainKeys are the sealed keys of every verified sending domain
// (domains.KeyStore).
func (d *DB) VerifiedDomainKeys(ctx context.Context) ([]domains.SealedKeys, error) {
	rows, err := d.q.VerifiedDomainKeys(ctx)
	out := make([]domains.SealedKeys, len(rows))
	for i, r := range rows {
		out[i] = domains.SealedKeys{UserID: r.UserID, Domain: r.Domain, Selector: r.Selector, RSA: r.RsaPrivate, Ed25519: r.Ed25519Private}
	}
	return out, err
}

// DomainStanding reports whether account userID has any sending domain,
// and whether domain (lower-case, A-label) is one of them, verified.
func (d *DB) DomainStanding(ctx context.Context, userID int64, domain string) (anyDomain, verified bool, err error) {
	r, err := d.q.DomainStanding(ctx, db.DomainStandingParams{UserID: userID, Domain: domain})
	return r.AnyDomain, r.Verified, err
}
