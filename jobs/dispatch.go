package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
)

// DispatchSend handles TypeDispatchSend: the send's deliveries made in one
// set-based statement (postgres.DispatchSend), then the first Window
// batches queued. A send not due yet is queued again for its time; a
// stale or repeated task does nothing.
func DispatchSend(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		var p DispatchPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return Permanent(err)
		}
		start := time.Now()
		res, err := d.DB.DispatchSend(ctx, p.SendID, p.Version, d.Engine.BatchSize)
		if err != nil {
			return err
		}
		took := time.Since(start)
		if res.DueAt != nil {
			// Not this task's TaskID: it is still active while it runs,
			// and asynq would refuse the same one.
			return d.enqueue(ctx, dispatchTask(p.SendID, p.Version, *res.DueAt, "at"+strconv.FormatInt(res.DueAt.UnixMilli(), 36)))
		}
		if res.Started {
			d.Metrics.expansion.Observe(took.Seconds())
			d.Metrics.expanded.Add(float64(res.Triggered))
		}
		if !res.Started || res.Completed {
			return nil
		}
		d.Log.InfoContext(ctx, "send started", "send_id", p.SendID, "triggered", res.Triggered, "expansion_ms", took.Milliseconds())
		for k := int64(0); k < int64(d.Engine.Window) && res.First+k*int64(res.BatchSize) <= res.Last; k++ {
			if err := d.enqueue(ctx, NewBatchTask(p.SendID, k)); err != nil {
				return err // the sweeper restarts the chain if this is lost
			}
		}
		return nil
	}
}

// enqueue queues t; a task with that id already queued is not an error.
func (d Deps) enqueue(ctx context.Context, t *asynq.Task) error {
	if d.Enqueue == nil {
		return nil // no queue (a test running handlers itself): the sweeper's work
	}
	err := d.Enqueue(ctx, t)
	if errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jobs: enqueue %s: %w", t.Type(), err)
	}
	return nil
}
