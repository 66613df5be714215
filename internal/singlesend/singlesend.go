// Package singlesend is how a single send is checked, saved and queued,
// shared by the JSON API's handlers (internal/httpapi) and the console's
// pages (internal/console): the rules of mail.ParseSingleSend with what
// they look up (the account's records, the design catalogue, the size of
// the mails a template makes), the storage's create and update, and the
// dispatch enqueued after the commit. Neither edge holds a rule of its own.
package singlesend

import (
	"context"
	"log/slog"
	"time"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/render"
)

// Config are the settings a send's checks take.
type Config struct {
	// AllowUnverified lets a send use an unverified sender
	// (ALLOW_UNVERIFIED_SENDERS).
	AllowUnverified bool
	// PublicURL is the base of the links put into mails (PUBLIC_URL): the
	// size check counts every link at its length.
	PublicURL string
	// MaxMailBytes is the longest mail a send's template may make
	// (MAX_MAIL_BYTES, docs/limits.md); 0 is render.MaxMailBytes.
	MaxMailBytes int
	// Relays are the relays SMTP_URL names, which a send's relay must be
	// one of; nil takes any well-formed name.
	Relays []string
}

// Enqueue asks the worker to dispatch version of send sendID at at.
type Enqueue func(ctx context.Context, sendID int64, version int32, at time.Time) error

// Sends checks, saves and queues single sends.
type Sends struct {
	db      *postgres.DB
	log     *slog.Logger
	cfg     Config
	enqueue Enqueue // nil: the engine's sweeper finds due ready sends
}

// New returns the sends of d; enqueue may be nil.
func New(d *postgres.DB, log *slog.Logger, cfg Config, enqueue Enqueue) *Sends {
	return &Sends{db: d, log: log, cfg: cfg, enqueue: enqueue}
}

// Parse checks a single send create or update of account userID: the
// fields and the records they name, with the API's messages.
func (s *Sends) Parse(ctx context.Context, userID int64, f mail.SingleSendForm) (mail.SingleSendInput, error) {
	return mail.ParseSingleSend(f, mail.SingleSendRules{
		Template: Template,
		Lookup: func(refs mail.SendRefs) (mail.SendRefsFound, error) {
			return s.db.SendReferences(ctx, userID, refs)
		},
		AllowUnverified: s.cfg.AllowUnverified,
		MailSize:        s.MailSize(),
		Relays:          s.cfg.Relays,
	})
}

// Create stores a new send, ready, and enqueues its dispatch.
func (s *Sends) Create(ctx context.Context, userID int64, in mail.SingleSendInput) (mail.Queued, error) {
	q, err := s.db.CreateSingleSend(ctx, userID, in)
	if err != nil {
		return q, err
	}
	s.Queue(ctx, q)
	return q, nil
}

// Update replaces the fields of the account's draft or ready send utr; it
// is ready again at its next version, whose dispatch is enqueued.
func (s *Sends) Update(ctx context.Context, userID int64, utr string, in mail.SingleSendInput) (mail.Queued, error) {
	q, err := s.db.UpdateSingleSend(ctx, userID, utr, in)
	if err != nil {
		return q, err
	}
	s.Queue(ctx, q)
	return q, nil
}

// Queue asks the worker to dispatch a (re)queued send at its due time.
// The row is the truth: when Redis fails, the engine's sweeper finds the
// due ready send all the same, so this only logs.
func (s *Sends) Queue(ctx context.Context, q mail.Queued) {
	if s.enqueue == nil {
		return
	}
	if err := s.enqueue(ctx, q.ID, q.Version, q.DueAt); err != nil {
		s.log.WarnContext(ctx, "enqueueing a send's dispatch; the sweeper will start it",
			"send_id", q.ID, "version", q.Version, "err", err)
	}
}

// MailSize is the check of a template's worst-case mail (docs/limits.md):
// compiled once, then one pass over its parts, the links counted at
// PUBLIC_URL's length.
func (s *Sends) MailSize() mail.MailSize {
	return render.CheckSize(s.cfg.MaxMailBytes, len(s.cfg.PublicURL))
}

// Template reports whether id is a template of the design catalogue.
func Template(id int64) bool {
	_, found := Design(id)
	return found
}

// Design is the catalogue's template id.
func Design(id int64) (design.Template, bool) {
	for _, t := range design.Templates() {
		if t.ID == id {
			return t, true
		}
	}
	return design.Template{}, false
}
