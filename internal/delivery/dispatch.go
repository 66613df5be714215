package delivery

import (
	"context"
	"strconv"
	"time"
)

// Dispatch expands version of send sendID into its deliveries in one
// set-based statement (Store.DispatchSend), then schedules the first
// Config.Window ranges. A send not due yet is scheduled again for its
// time; a stale or repeated dispatch does nothing.
func (e *Engine) Dispatch(ctx context.Context, sendID int64, version int32) error {
	start := time.Now()
	res, err := e.Store.DispatchSend(ctx, sendID, version, e.Config.BatchSize)
	if err != nil {
		return err
	}
	took := time.Since(start)
	if res.DueAt != nil {
		// Tagged with its time: this dispatch is still under way, and the
		// same one would not be scheduled again.
		return e.Scheduler.Dispatch(ctx, sendID, version, *res.DueAt, "at"+strconv.FormatInt(res.DueAt.UnixMilli(), 36))
	}
	if res.Started {
		e.Metrics.expansion.Observe(took.Seconds())
		e.Metrics.expanded.Add(float64(res.Triggered))
	}
	if !res.Started || res.Completed {
		return nil
	}
	e.Log.InfoContext(ctx, "send started", "send_id", sendID, "triggered", res.Triggered, "expansion_ms", took.Milliseconds())
	return e.startWindow(ctx, sendID, res.First, res.Last, res.BatchSize)
}

// startWindow schedules the first Config.Window ranges of a send whose
// deliveries are ids first..last in ranges of size; the sweeper restarts
// the chains if this is lost.
func (e *Engine) startWindow(ctx context.Context, sendID, first, last int64, size int) error {
	for k := int64(0); k < int64(e.Config.Window) && first+k*int64(size) <= last; k++ {
		if err := e.Scheduler.Chain(ctx, sendID, k, time.Time{}, ""); err != nil {
			return err
		}
	}
	return nil
}

// DropExpired drops, with Config.Retention set, the deliveries partitions
// whose sends all completed longer ago (docs/deliveries.md).
func (e *Engine) DropExpired(ctx context.Context) error {
	if e.Config.Retention <= 0 {
		return nil
	}
	dropped, err := e.Store.DropExpiredDeliveries(ctx, e.Config.Retention)
	if len(dropped) > 0 {
		e.Log.InfoContext(ctx, "deliveries partitions dropped", "partitions", dropped, "retention", e.Config.Retention.String())
	}
	return err
}
