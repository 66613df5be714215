package jobs

import (
	"context"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
)

// SweepSends handles TypeSweepSends, every 10 seconds: PostgreSQL is the
// truth and Redis only carries work, so whatever the queue lost is found
// here. Ready sends that are due are dispatched (a lost or never queued
// dispatch task); running sends idle for Engine.StallAfter get their
// window restarted at their lowest open ranges (a flushed Redis, a killed
// worker whose leases ran out, retries come due), or are completed when
// nothing is left open. A custom automation whose members' enrollment did
// not finish gets it queued again.
func SweepSends(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error {
		due, err := d.DB.DueSends(ctx)
		if err != nil {
			return err
		}
		// The sweeper's own TaskIDs (a minute's bucket): a dispatch waiting
		// in asynq's retry or archive must not hold the send back.
		tag := "sweep" + strconv.FormatInt(time.Now().Unix()/60, 36)
		for _, s := range due {
			if err := d.enqueue(ctx, dispatchTask(s.ID, s.Version, time.Now(), tag)); err != nil {
				return err
			}
		}
		// Custom automations set live whose members' enrollment was never
		// queued or did not finish (a lost task, a stopped worker).
		enroll, err := d.DB.MembersToEnroll(ctx)
		if err != nil {
			return err
		}
		for _, id := range enroll {
			if err := d.enqueue(ctx, enrollMembersTask(id, tag)); err != nil {
				return err
			}
		}
		stalled, err := d.DB.StalledSends(ctx, d.Engine.StallAfter)
		if err != nil {
			return err
		}
		for _, s := range stalled {
			ks, err := d.DB.OpenRanges(ctx, s, d.Engine.Window)
			if err != nil {
				return err
			}
			if len(ks) == 0 {
				done, err := d.DB.CompleteSend(ctx, s.ID)
				if err != nil {
					return err
				}
				if !done { // only retries not due yet: look again in StallAfter, not at every sweep
					if err := d.DB.TouchSend(ctx, s.ID); err != nil {
						return err
					}
				}
				continue
			}
			d.Log.InfoContext(ctx, "restarting a stalled send", "send_id", s.ID, "ranges", ks)
			tag := "sweep" + strconv.FormatInt(time.Now().UnixNano(), 36)
			for _, k := range ks {
				if err := d.enqueue(ctx, batchTask(s.ID, k, tag)); err != nil {
					return err
				}
			}
			if err := d.DB.TouchSend(ctx, s.ID); err != nil {
				return err
			}
		}
		return nil
	}
}
