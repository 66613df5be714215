package jobs

import (
	"encoding/json"
	"fmt"
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
	b, _ := json.Marshal(DispatchPayload{SendID: sendID, Version: version})
	return asynq.NewTask(TypeDispatchSend, b, asynq.Queue(QueueDefault), asynq.ProcessAt(at),
		asynq.TaskID(fmt.Sprintf("dispatch:%d:%d", sendID, version)), asynq.MaxRetry(25), asynq.Timeout(10*time.Minute))
}
