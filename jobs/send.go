package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
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
)

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

// Engine is the delivery engine's tuning (docs/deliveries.md).
type Engine struct {
	BatchSize   int           // deliveries per batch task (id range); 1000
	Window      int           // batch tasks of one send queued at once; 4
	Concurrency int           // mails of one batch in flight at once; 16
	Lease       time.Duration // how long a batch holds its rows, renewed every third of it; 6 s
	StallAfter  time.Duration // a running send idle this long is restarted by the sweeper; 5 s
	Slice       time.Duration // how long one batch task goes on along its chain; 1 s
	Retention   time.Duration // deliveries rows kept after their send completed; 0 keeps them
	// RunEvery is how long an automation schedule that made a small run
	// waits before its next one (docs/automations.md); 30 s.
	RunEvery time.Duration
	// MaxMailBytes is the longest mail sent (MAX_MAIL_BYTES): a recipient
	// whose mail is longer fails, not sent (docs/limits.md); 0 is
	// render.MaxMailBytes, 10 MB.
	MaxMailBytes int
	// MemoryBudget is the bytes the worker's mails in flight may hold
	// together (MAIL_MEMORY_BUDGET, budget.go): each takes its share
	// before it is built; 256 MB when 0.
	MemoryBudget int64
}

func (e Engine) withDefaults() Engine {
	if e.BatchSize <= 0 {
		e.BatchSize = 1000
	}
	if e.Window <= 0 {
		e.Window = 4
	}
	if e.Concurrency <= 0 {
		e.Concurrency = 16
	}
	if e.Lease <= 0 {
		e.Lease = 6 * time.Second
	}
	if e.StallAfter <= 0 {
		e.StallAfter = 5 * time.Second
	}
	if e.Slice <= 0 {
		e.Slice = time.Second
	}
	if e.RunEvery <= 0 {
		e.RunEvery = 30 * time.Second
	}
	if e.MemoryBudget <= 0 {
		e.MemoryBudget = 256 << 20
	}
	return e
}

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

// DropDeliveries handles TypeDropDeliveries: with Engine.Retention set,
// the partitions whose sends all completed longer ago are dropped whole
// (docs/deliveries.md).
func DropDeliveries(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error {
		if d.Engine.Retention <= 0 {
			return nil
		}
		dropped, err := d.DB.DropExpiredDeliveries(ctx, d.Engine.Retention)
		if len(dropped) > 0 {
			d.Log.InfoContext(ctx, "deliveries partitions dropped", "partitions", dropped, "retention", d.Engine.Retention.String())
		}
		return err
	}
}
