package domains

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// Store keeps sending domains (internal/postgres).
type Store interface {
	// CreateSendingDomain keeps a new domain of an account with its sealed
	// keys and records; ECONFLICT-free: 0 when the account has it already.
	CreateSendingDomain(ctx context.Context, userID int64, d NewDomain) (int64, error)
	// SendingDomain is an account's domain; ENOTFOUND when it has none.
	SendingDomain(ctx context.Context, userID, id int64) (mail.SendingDomain, error)
	// SaveDomainChecks keeps a lookup's findings.
	SaveDomainChecks(ctx context.Context, userID, id int64, recs []mail.DomainRecord) error
	// CountSendingDomains is how many domains an account has.
	CountSendingDomains(ctx context.Context, userID int64) (int64, error)
	// DomainStanding reports whether an account has any sending domain,
	// and whether it has this one verified.
	DomainStanding(ctx context.Context, userID int64, domain string) (anyDomain, verified bool, err error)
	// SetDomainWarmup starts (from today) or ends a domain's warm-up.
	SetDomainWarmup(ctx context.Context, userID, id int64, on bool, schedule []int) error
}

// SetWarmup starts account userID's domain id's warm-up from today, with
// schedule (comma-separated day-by-day allowances; empty: the default
// ramp), or ends it. A warm-up under way keeps its first day; a new
// schedule replaces the old.
func (s *Service) SetWarmup(ctx context.Context, userID, id int64, on bool, schedule string) (mail.SendingDomain, error) {
	sched, err := mail.ParseWarmupSchedule(schedule)
	if err != nil {
		return mail.SendingDomain{}, err
	}
	if err := s.Store.SetDomainWarmup(ctx, userID, id, on, sched); err != nil {
		return mail.SendingDomain{}, err
	}
	return s.Store.SendingDomain(ctx, userID, id)
}

// NewDomain is a domain to keep: its keys sealed.
type NewDomain struct {
	Domain, Selector           string
	RSAPrivate, Ed25519Private []byte // sealed; Ed25519Private nil: none
	Records                    []mail.DomainRecord
}

// MaxDomains bounds an account's sending domains.
const MaxDomains = 50

// Service is the domain functions the API (and a console page) call.
type Service struct {
	Store    Store
	Sealer   *Sealer // nil: DKIM_KEY_SECRET unset, no domain can be added
	Resolver Resolver
	Setup    Setup
	Now      func() time.Time
	// KeyDomains are the domains DKIM_KEYS signs for every account.
	KeyDomains []string
}

// SendWarnings say what receivers will hold against the mails of account
// userID from address from: a From domain that is neither a verified
// sending domain of the account nor one DKIM_KEYS signs for (its mails
// go unsigned by the domain, and Gmail and Yahoo require DKIM aligned
// with the From domain of bulk senders). Empty when there is nothing, and
// for an account that has added no sending domain: the send details of
// those keep interface.md's fields exactly (docs/deliverability.md).
func (s *Service) SendWarnings(ctx context.Context, userID int64, from mail.Email) ([]string, error) {
	at := strings.LastIndexByte(string(from), '@')
	if at < 0 {
		return nil, nil
	}
	domain := strings.ToLower(string(from)[at+1:])
	if a, ok := mail.DomainALabel(domain); ok {
		domain = a
	}
	if slices.Contains(s.KeyDomains, domain) {
		return nil, nil
	}
	anyDomain, verified, err := s.Store.DomainStanding(ctx, userID, domain)
	if err != nil || !anyDomain || verified {
		return nil, err
	}
	return []string{"The sender's domain " + domain + " is not a verified sending domain of the account: its mails are not DKIM-signed by " +
		domain + ", and Gmail and Yahoo require that of bulk senders. Add it with POST /api/domains/save, publish its records and verify it."}, nil
}

// Add makes domain's keys and records for account userID and keeps them:
// 422 for a domain that is not one or that the account has already, 409
// past MaxDomains or without DKIM_KEY_SECRET.
func (s *Service) Add(ctx context.Context, userID int64, domain string, withEd25519 bool) (mail.SendingDomain, error) {
	d, err := mail.ParseSendingDomain(domain)
	if err != nil {
		return mail.SendingDomain{}, err
	}
	if s.Sealer == nil {
		return mail.SendingDomain{}, mail.Errorf(mail.ECONFLICT, "Sending domains need DKIM_KEY_SECRET set on the server (32 random bytes, base64).")
	}
	if n, err := s.Store.CountSendingDomains(ctx, userID); err != nil {
		return mail.SendingDomain{}, err
	} else if n >= MaxDomains {
		return mail.SendingDomain{}, mail.Errorf(mail.ECONFLICT, "An account may have at most %d sending domains.", MaxDomains)
	}
	k, err := NewKeys(withEd25519)
	if err != nil {
		return mail.SendingDomain{}, err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	// A selector per key generation (mr + year and month): a new key for
	// the domain later can be published beside the old one.
	selector := "mr" + strconv.Itoa(now().UTC().Year()) + now().UTC().Format("01")
	recs := Records(d, selector, k, s.Setup)
	for i := range recs {
		recs[i].Status, recs[i].Found = mail.RecordPending, []string{}
	}
	nd := NewDomain{Domain: d, Selector: selector, RSAPrivate: s.Sealer.Seal(k.RSAPrivate, d), Records: recs}
	if k.Ed25519Private != nil {
		nd.Ed25519Private = s.Sealer.Seal(k.Ed25519Private, d+" ed25519")
	}
	id, err := s.Store.CreateSendingDomain(ctx, userID, nd)
	if err != nil {
		return mail.SendingDomain{}, err
	}
	if id == 0 {
		return mail.SendingDomain{}, mail.Invalid("domain", "The domain has already been taken.")
	}
	return s.Store.SendingDomain(ctx, userID, id)
}

// Verify looks account userID's domain id's records up and keeps what
// was found.
func (s *Service) Verify(ctx context.Context, userID, id int64) (mail.SendingDomain, error) {
	d, err := s.Store.SendingDomain(ctx, userID, id)
	if err != nil {
		return d, err
	}
	recs := s.Resolver.Check(ctx, d.Records)
	if err := s.Store.SaveDomainChecks(ctx, userID, id, recs); err != nil {
		return d, err
	}
	return s.Store.SendingDomain(ctx, userID, id)
}
