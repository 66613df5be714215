package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/delivery"
)

// The delivery engine's tasks (docs/deliveries.md). Payloads carry ids;
// every handler reads the truth from PostgreSQL and is safe to run twice.
const (
	// TypeDispatchSend expands a ready, due send into its deliveries and
	// starts its batches.
	TypeDispatchSend = "send:dispatch"
	// TypeSendBatch sends the open deliveries of one id range of a send.
	TypeSendBatch = "send:batch"
	// TypeSweepSends re-enqueues what a lost queue, a killed worker or an
	// expired lease left behind.
	TypeSweepSends = "send:sweep"
	// TypeDropDeliveries drops the deliveries partitions past retention.
	TypeDropDeliveries = "deliveries:retention"
	// TypeExpandSend expands the rest of a large send's audience.
	TypeExpandSend = "send:expand"
)

// ExpandPayload names the send whose rest is to expand.
type ExpandPayload struct {
	SendID int64 `json:"send_id"`
}

// expandTask is the expansion of the rest of send sendID; its TaskID (with
// tag, the sweeper's) makes it one task.
func expandTask(sendID int64, tag string) *asynq.Task {
	b, _ := json.Marshal(ExpandPayload{SendID: sendID})
	id := fmt.Sprintf("expand:%d", sendID)
	if tag != "" {
		id += ":" + tag
	}
	return asynq.NewTask(TypeExpandSend, b, asynq.Queue(QueueDefault), asynq.TaskID(id), asynq.MaxRetry(25),
		asynq.Timeout(10*time.Minute))
}

// DispatchPayload names a send and the version of it the task was made
// for: an update bumps the version, so a stale task finds nothing to do.
type DispatchPayload struct {
	SendID  int64 `json:"send_id"`
	Version int32 `json:"version"`
}

// NewDispatchTask is the dispatch of version of send sendID, to run at at
// (now or earlier: at once). Its TaskID makes enqueueing it twice one
// task.
func NewDispatchTask(sendID int64, version int32, at time.Time) *asynq.Task {
	return dispatchTask(sendID, version, at, "")
}

// dispatchTask is NewDispatchTask with tag added to its TaskID (a task
// queueing its own successor, the sweeper).
func dispatchTask(sendID int64, version int32, at time.Time, tag string) *asynq.Task {
	b, _ := json.Marshal(DispatchPayload{SendID: sendID, Version: version})
	id := fmt.Sprintf("dispatch:%d:%d", sendID, version)
	if tag != "" {
		id += ":" + tag
	}
	return asynq.NewTask(TypeDispatchSend, b, asynq.Queue(QueueDefault), asynq.ProcessAt(at),
		asynq.TaskID(id), asynq.MaxRetry(25), asynq.Timeout(10*time.Minute))
}

// Engine is the delivery engine's tuning (delivery.Config).
type Engine = delivery.Config

// BatchPayload names batch K of a send: deliveries with ids in
// [first + K*size, first + (K+1)*size), first and size fixed at dispatch.
type BatchPayload struct {
	SendID int64 `json:"send_id"`
	K      int64 `json:"k"`
	// Once: a revisit of range K alone (mails its domains put off), not
	// the chain from K.
	Once bool `json:"once,omitempty"`
}

// NewBatchTask is batch k of send sendID on the bulk queue. Its TaskID
// makes a batch queued twice one task; running one twice sends nothing
// twice (its rows are leased, then recorded).
func NewBatchTask(sendID, k int64) *asynq.Task {
	return batchTask(sendID, k, "")
}

// batchTask is NewBatchTask with tag added to its TaskID: the sweeper's
// restarts must not be refused because a dead worker's task of the same
// range still counts as active in Redis until asynq recovers it (the
// rows' leases keep two runs of one range from sending twice).
func batchTask(sendID, k int64, tag string, opts ...asynq.Option) *asynq.Task {
	b, _ := json.Marshal(BatchPayload{SendID: sendID, K: k})
	id := fmt.Sprintf("batch:%d:%d", sendID, k)
	if tag != "" {
		id += ":" + tag
	}
	return asynq.NewTask(TypeSendBatch, b, append([]asynq.Option{asynq.Queue(QueueBulk), asynq.TaskID(id), asynq.MaxRetry(10),
		asynq.Timeout(10 * time.Minute)}, opts...)...)
}

// revisitTask runs range k of send sendID alone at at: mails its domains
// put off are due then (docs/throttling.md). Its TaskID names the time:
// a revisit running may queue the range's next.
func revisitTask(sendID, k int64, at time.Time) *asynq.Task {
	b, _ := json.Marshal(BatchPayload{SendID: sendID, K: k, Once: true})
	id := fmt.Sprintf("batch:%d:%d:at%s", sendID, k, strconv.FormatInt(at.UnixNano(), 36))
	return asynq.NewTask(TypeSendBatch, b, asynq.Queue(QueueBulk), asynq.TaskID(id), asynq.MaxRetry(10),
		asynq.Timeout(10*time.Minute), asynq.ProcessAt(at))
}

// NewSweepSendsTask is the sweeper's periodic task; Unique keeps one queued.
func NewSweepSendsTask() *asynq.Task {
	return asynq.NewTask(TypeSweepSends, nil, asynq.Queue(QueueDefault), asynq.Unique(10*time.Second),
		asynq.MaxRetry(1), asynq.Timeout(time.Minute))
}

// NewDropDeliveriesTask is the hourly retention task; Unique keeps one
// queued.
func NewDropDeliveriesTask() *asynq.Task {
	return asynq.NewTask(TypeDropDeliveries, nil, asynq.Queue(QueueDefault), asynq.Unique(time.Hour),
		asynq.MaxRetry(3), asynq.Timeout(10*time.Minute))
}

// DropDeliveries handles TypeDropDeliveries (delivery.Engine.DropExpired).
func DropDeliveries(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error { return d.engine.DropExpired(ctx) }
}

// SendBatch handles TypeSendBatch: the range's chain, or the range alone
// for a revisit (delivery.Engine.RunChain).
func SendBatch(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		var p BatchPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return Permanent(err)
		}
		return d.engine.RunChain(ctx, p.SendID, p.K, p.Once)
	}
}

// DispatchSend handles TypeDispatchSend (delivery.Engine.Dispatch).
func DispatchSend(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		var p DispatchPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return Permanent(err)
		}
		return d.engine.Dispatch(ctx, p.SendID, p.Version)
	}
}

// ExpandSend handles TypeExpandSend (delivery.Engine.ExpandRest).
func ExpandSend(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		var p ExpandPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return Permanent(err)
		}
		return d.engine.ExpandRest(ctx, p.SendID)
	}
}

// SweepSends handles TypeSweepSends (delivery.Engine.Sweep).
func SweepSends(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error { return d.engine.Sweep(ctx) }
}

// scheduler is the engine's delivery.Scheduler: its work as tasks.
type scheduler struct{ d Deps }

func (s scheduler) Chain(ctx context.Context, sendID, k int64, at time.Time, tag string) error {
	var opts []asynq.Option
	if !at.IsZero() {
		opts = append(opts, asynq.ProcessAt(at))
	}
	return s.d.enqueue(ctx, batchTask(sendID, k, tag, opts...))
}

func (s scheduler) Revisit(ctx context.Context, sendID, k int64, at time.Time) error {
	return s.d.enqueue(ctx, revisitTask(sendID, k, at))
}

func (s scheduler) Dispatch(ctx context.Context, sendID int64, version int32, at time.Time, tag string) error {
	return s.d.enqueue(ctx, dispatchTask(sendID, version, at, tag))
}

func (s scheduler) Expand(ctx context.Context, sendID int64, tag string) error {
	return s.d.enqueue(ctx, expandTask(sendID, tag))
}

func (s scheduler) Enroll(ctx context.Context, automationID int64, tag string) error {
	return s.d.enqueue(ctx, enrollMembersTask(automationID, tag))
}

func (s scheduler) Step(ctx context.Context) error { return s.d.enqueue(ctx, NewStepAutomationsTask()) }

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
