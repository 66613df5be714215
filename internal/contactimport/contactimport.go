// Package contactimport is the CSV import service: it holds the import
// slots of one API process and runs an import's steps (open, copy the
// rows as they arrive, merge) against PostgreSQL. The HTTP handler only
// parses the multipart body, guards the connection and answers.
package contactimport

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

// Service runs CSV imports, at most max at once in this process and half
// of them for one account.
type Service struct {
	db            *postgres.DB
	log           *slog.Logger
	lookupCountry func(string) (int32, bool)
	slots         *slots
}

// New is the import service over db; lookupCountry reads a country
// column's value.
func New(db *postgres.DB, log *slog.Logger, max int, lookupCountry func(string) (int32, bool)) *Service {
	return &Service{db: db, log: log, lookupCountry: lookupCountry, slots: newSlots(max)}
}

// Running is how many imports are under way in this process.
func (s *Service) Running() int {
	s.slots.mu.Lock()
	defer s.slots.mu.Unlock()
	return s.slots.running
}

// Import is one import under way: Copy its file, then Commit it; Close
// always (it rolls back what was not committed and frees the slot).
type Import struct {
	s        *Service
	userID   int64
	release  func()
	im       *postgres.ContactImport
	src      *mail.ContactCSV
	copyTime time.Duration
}

// Start takes an import slot for the account (ETOOMANY when none is free)
// and opens the import's transaction.
func (s *Service) Start(ctx context.Context, userID int64) (*Import, error) {
	release, ok := s.slots.acquire(userID)
	if !ok {
		return nil, &mail.Error{Code: mail.ETOOMANY}
	}
	im, err := s.db.BeginContactImport(ctx, userID)
	if err != nil {
		release()
		return nil, err
	}
	return &Import{s: s, userID: userID, release: release, im: im}, nil
}

// Copy reads the CSV file from r (the account's custom fields name its
// extra columns) and streams its rows into the import: memory stays flat
// whatever the file's size.
func (i *Import) Copy(ctx context.Context, r io.Reader) error {
	fields, err := i.s.db.CustomFieldDefs(ctx, i.userID)
	if err != nil {
		return err
	}
	if i.src, err = mail.NewContactCSV(r, fields, i.s.lookupCountry); err != nil {
		return err
	}
	start := time.Now()
	err = i.im.Copy(ctx, i.src)
	i.copyTime = time.Since(start)
	return err
}

// Commit merges the copied rows into contact type typeID and commits.
func (i *Import) Commit(ctx context.Context, typeID int64) (postgres.ImportResult, error) {
	start := time.Now()
	res, err := i.im.Commit(ctx, typeID, i.src)
	if err != nil {
		return res, err
	}
	i.s.log.InfoContext(ctx, "contacts imported", "user_id", i.userID, "contact_type_id", typeID,
		"rows", res.Rows, "added", res.Added, "updated", res.Updated, "skipped", res.Skipped,
		"copy", i.copyTime, "merge", time.Since(start))
	return res, nil
}

// Close rolls back an import not committed (harmless after Commit) and
// frees its slot.
func (i *Import) Close(ctx context.Context) {
	i.im.Rollback(ctx)
	i.release()
}

// slots bound the imports running in this process: total, and half of
// them per account, so one account cannot hold them all.
type slots struct {
	mu         sync.Mutex
	total      int
	perAccount int
	running    int
	byAccount  map[int64]int
}

func newSlots(total int) *slots {
	total = max(total, 1)
	return &slots{total: total, perAccount: max(total/2, 1), byAccount: map[int64]int{}}
}

// acquire takes a slot for the account, or reports that none is free.
func (s *slots) acquire(account int64) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running >= s.total || s.byAccount[account] >= s.perAccount {
		return nil, false
	}
	s.running++
	s.byAccount[account]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.running--
		if s.byAccount[account]--; s.byAccount[account] == 0 {
			delete(s.byAccount, account)
		}
	}, true
}
