package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// TypeStepAutomations sends the automation mails that are due: the
// scheduler queues it every 2 s (docs/automations.md).
const TypeStepAutomations = "automations:step"

// NewStepAutomationsTask is the stepper's periodic task; Unique keeps one
// queued.
func NewStepAutomationsTask() *asynq.Task {
	return asynq.NewTask(TypeStepAutomations, nil, asynq.Queue(QueueDefault), asynq.Unique(5*time.Second),
		asynq.MaxRetry(3), asynq.Timeout(5*time.Minute))
}

// StepAutomations handles TypeStepAutomations
// (delivery.Engine.StepAutomations).
func StepAutomations(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error { return d.engine.StepAutomations(ctx) }
}

// TypeEnrollMembers enrolls a custom automation's current members; the
// API queues it after set-live.
const TypeEnrollMembers = "automations:enroll"

// EnrollPayload names the automation.
type EnrollPayload struct {
	AutomationID int64 `json:"automation_id"`
}

// NewEnrollMembersTask is the enrollment of automation id's members.
// Running it twice enrolls nobody twice (one active enrollment per
// contact; the chunks take the automation's row in turn).
func NewEnrollMembersTask(id int64) *asynq.Task {
	return enrollMembersTask(id, "")
}

// enrollMembersTask is NewEnrollMembersTask with a TaskID when tag is set
// (the sweeper's: one per automation and minute).
func enrollMembersTask(id int64, tag string) *asynq.Task {
	b, _ := json.Marshal(EnrollPayload{AutomationID: id})
	opts := []asynq.Option{asynq.Queue(QueueDefault), asynq.MaxRetry(10), asynq.Timeout(10 * time.Minute)}
	if tag != "" {
		opts = append(opts, asynq.TaskID(fmt.Sprintf("enroll:%d:%s", id, tag)))
	}
	return asynq.NewTask(TypeEnrollMembers, b, opts...)
}

// EnrollMembers handles TypeEnrollMembers (delivery.Engine.EnrollMembers).
func EnrollMembers(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		var p EnrollPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return Permanent(err)
		}
		return d.engine.EnrollMembers(ctx, p.AutomationID)
	}
}
