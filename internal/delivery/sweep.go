package delivery

import (
	"context"
	"strconv"
	"time"
)

// Sweep finds what a lost queue left behind (every SEND_SWEEP_EVERY):
// PostgreSQL is the truth and the queue only carries work. Ready sends
// that are due are dispatched (a lost or never scheduled dispatch);
// running sends idle for Config.StallAfter get their window restarted at
// their lowest open ranges (a flushed Redis, a killed worker whose leases
// ran out, retries come due), or are completed when nothing is left open.
// A send whose rest was not expanded, and a custom automation whose
// members' enrollment did not finish, get it scheduled again.
func (e *Engine) Sweep(ctx context.Context) error {
	due, err := e.Store.DueSends(ctx)
	if err != nil {
		return err
	}
	// The sweeper's own tags (a minute's bucket): a dispatch waiting in the
	// queue's retry or archive must not hold the send back.
	tag := "sweep" + strconv.FormatInt(time.Now().Unix()/60, 36)
	for _, s := range due {
		if err := e.Scheduler.Dispatch(ctx, s.ID, s.Version, time.Now(), tag); err != nil {
			return err
		}
	}
	// Sends whose rest was never expanded (a lost task, a worker stopped
	// mid-way): one expansion of a send runs at a time, a second one ends
	// at once.
	expand, err := e.Store.SendsToExpand(ctx)
	if err != nil {
		return err
	}
	for _, id := range expand {
		if err := e.Scheduler.Expand(ctx, id, tag); err != nil {
			return err
		}
	}
	enroll, err := e.Store.MembersToEnroll(ctx)
	if err != nil {
		return err
	}
	for _, id := range enroll {
		if err := e.Scheduler.Enroll(ctx, id, tag); err != nil {
			return err
		}
	}
	stalled, err := e.Store.StalledSends(ctx, e.Config.StallAfter)
	if err != nil {
		return err
	}
	for _, s := range stalled {
		if err := e.restart(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// restart decides what becomes of a stalled send: its lowest open ranges
// run again (a tag of their own: a dead worker's task of the same range
// may still count as active in the queue, and the rows' leases keep two
// runs of a range from sending twice), or, with none open, it completes;
// with only retries not due yet it is looked at again in StallAfter, not
// at every sweep.
func (e *Engine) restart(ctx context.Context, s StalledSend) error {
	ks, err := e.Store.OpenRanges(ctx, s, e.Config.Window)
	if err != nil {
		return err
	}
	if len(ks) == 0 {
		done, err := e.Store.CompleteSend(ctx, s.ID)
		if err != nil || done {
			return err
		}
		return e.Store.TouchSend(ctx, s.ID)
	}
	e.Log.InfoContext(ctx, "restarting a stalled send", "send_id", s.ID, "ranges", ks)
	tag := "sweep" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, k := range ks {
		if err := e.Scheduler.Chain(ctx, s.ID, k, time.Time{}, tag); err != nil {
			return err
		}
	}
	return e.Store.TouchSend(ctx, s.ID)
}
