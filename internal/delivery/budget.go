package delivery

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// mailBudget is the worker's memory budget for mails in flight
// (MAIL_MEMORY_BUDGET, docs/deliveries.md): one weighted semaphore of
// bytes for the whole process, every send and batch of it. Before a mail
// is built its sender takes what the mail will hold (mailNeed); it gives
// it back once the mail went. A mail that needs more than the whole
// budget takes the whole budget, so it still goes, alone.
//
// A sender keeps a standing share (creditBytes) between mails, so the
// usual mail, which fits it, touches the semaphore not at all: a sender
// takes its share with its first mail and gives it back when its range
// is done. A sender waits for the semaphore only holding nothing, so no
// two of them wait on each other.
type mailBudget struct {
	sem   *semaphore.Weighted
	total int64
}

// creditBytes is a sender's standing share of the budget: three copies of
// a mail of some 170 KB, several times the usual one. 20 tasks of 16
// senders hold 160 MB of shares at most.
const creditBytes = 512 << 10

// keepBytes is the most a sender's buffer keeps between mails: one that
// grew past it for a big mail is dropped after that mail, so the memory
// returns once a big send is done.
const keepBytes = 1 << 20

func newMailBudget(total int64) *mailBudget {
	return &mailBudget{sem: semaphore.NewWeighted(total), total: total}
}

// mailNeed is what a mail of at most size bytes holds while it goes out:
// the built mail, the transport's copy of it (the SMTP pool dot-stuffs it
// into a buffer of its own, 1/64 longer at most; the outbox prefixes the
// envelope), and with DKIM the signed copy.
func mailNeed(size int, signed bool) int64 {
	n := int64(size)
	need := 2*n + n/64 + 1024
	if signed {
		need += n + 1024
	}
	return need
}

// budgetShare is what one sender holds of the budget.
type budgetShare struct {
	b    *mailBudget
	held int64
}

// cover makes s hold at least need (the whole budget at most) and
// reports whether it does; false only when ctx ends while it waits.
// Before waiting it gives back what it holds and calls drop, which lets
// go of the sender's buffers: memory held unaccounted must not wait.
func (s *budgetShare) cover(ctx context.Context, need int64, drop func()) bool {
	if s.b == nil {
		return true
	}
	need = max(min(need, s.b.total), min(creditBytes, s.b.total))
	if need <= s.held {
		return true
	}
	if s.b.sem.TryAcquire(need - s.held) {
		s.held = need
		return true
	}
	s.release()
	drop()
	if err := s.b.sem.Acquire(ctx, need); err != nil {
		return false
	}
	s.held = need
	return true
}

// settle gives back what s holds past its standing share, after a mail.
func (s *budgetShare) settle() {
	if s.b != nil && s.held > creditBytes {
		s.b.sem.Release(s.held - creditBytes)
		s.held = creditBytes
	}
}

// release gives back all s holds.
func (s *budgetShare) release() {
	if s.b != nil && s.held > 0 {
		s.b.sem.Release(s.held)
		s.held = 0
	}
}
