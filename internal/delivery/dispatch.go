package delivery

import (
	"context"
	"strconv"
	"time"
)

// Dispatch expands version of send sendID into its deliveries in one
// set-based statement (Store.DispatchSend), then schedules the first
// Config.Window ranges. A large audience goes in two steps: the first
// Config.ExpandStep or so recipients here, whose mails start at once, and
// the rest by ExpandRest, scheduled now. A send not due yet is scheduled
// again for its time; a stale or repeated dispatch does nothing.
func (e *Engine) Dispatch(ctx context.Context, sendID int64, version int32) error {
	start := time.Now()
	res, err := e.Store.DispatchSend(ctx, sendID, version, e.Config.BatchSize, max(e.Config.ExpandStep, 0))
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
	e.Log.InfoContext(ctx, "send started", "send_id", sendID, "triggered", res.Triggered, "expansion_ms", took.Milliseconds(),
		"expanding", res.Expanding)
	if err := e.startWindow(ctx, sendID, 0, res.First, res.Last, res.BatchSize, ""); err != nil {
		return err
	}
	if res.Expanding { // after the first chains: their mails go first
		return e.Scheduler.Expand(ctx, sendID, "") // if lost, the sweeper schedules it
	}
	return nil
}

// ExpandRest expands the rest of a send dispatched in two steps and
// schedules Config.Window chains from the first range of what it added
// (the first step's chains may be done by then).
func (e *Engine) ExpandRest(ctx context.Context, sendID int64) error {
	start := time.Now()
	res, err := e.Store.ExpandRest(ctx, sendID)
	if err != nil || !res.Started {
		return err
	}
	took := time.Since(start)
	e.Metrics.expansion.Observe(took.Seconds())
	e.Metrics.expanded.Add(float64(res.Triggered))
	e.Log.InfoContext(ctx, "send expanded", "send_id", sendID, "added", res.Triggered, "expansion_ms", took.Milliseconds())
	if res.Completed || res.Triggered == 0 || res.BatchSize <= 0 {
		return nil
	}
	k0 := max(res.From-res.First, 0) / int64(res.BatchSize) // the range the rest begins in
	// Chains of their own (tagged): a chain of the first step may be at
	// range k0..k0+window-1 right now, under the untagged task id; a chain
	// queued under that id would be taken for it, and that task, begun
	// before the rest was there, ends at the first step's last range (a
	// chain lost until the sweeper finds the send idle: 10 s).
	if err := e.startWindow(ctx, sendID, k0, res.First, res.Last, res.BatchSize, "rest"); err != nil {
		return err
	}
	// That range may also hold the first step's last rows, and a chain of
	// the first step may still hold it: the new chain then passes it by.
	// It is visited alone once that lease is surely over (else its rest
	// waits for the sweeper).
	return e.Scheduler.Revisit(ctx, sendID, k0, time.Now().Add(e.Config.Lease))
}

// startWindow schedules Config.Window chains of a send whose deliveries
// are ids first..last in ranges of size, from range k0; the sweeper
// restarts the chains if this is lost.
func (e *Engine) startWindow(ctx context.Context, sendID, k0, first, last int64, size int, tag string) error {
	for k := k0; k < k0+int64(e.Config.Window) && first+k*int64(size) <= last; k++ {
		if err := e.Scheduler.Chain(ctx, sendID, k, time.Time{}, tag); err != nil {
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
