package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

// TypeStepAutomations sends the automation mails that are due: the
// scheduler queues it every 2 s (docs/automations.md).
const TypeStepAutomations = "automations:step"

// stepBatch is how many enrollments one stepping transaction takes.
const stepBatch = 5000

// NewStepAutomationsTask is the stepper's periodic task; Unique keeps one
// queued.
func NewStepAutomationsTask() *asynq.Task {
	return asynq.NewTask(TypeStepAutomations, nil, asynq.Queue(QueueDefault), asynq.Unique(5*time.Second),
		asynq.MaxRetry(3), asynq.Timeout(5*time.Minute))
}

// StepAutomations handles TypeStepAutomations: passes of due enrollments
// until none is left, each making runs whose batches are queued like a
// single send's first window.
func StepAutomations(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error {
		for {
			start := time.Now()
			pass, err := d.DB.StepAutomations(ctx, postgres.Step{Now: d.now(), Enrollments: stepBatch,
				BatchSize: d.Engine.BatchSize, RunEvery: d.Engine.RunEvery, NewToken: mail.NewOpenToken,
				AllowUnverified: d.AllowUnverifiedSenders})
			if err != nil {
				return err
			}
			if pass.Stepped > 0 { // most passes find nothing due: only the ones that stepped are timed
				d.Metrics.step.Observe(time.Since(start).Seconds())
				d.Metrics.stepped.Add(float64(pass.Stepped))
			}
			for _, r := range pass.Runs {
				for k := int64(0); k < int64(d.Engine.Window) && r.First+k*int64(d.Engine.BatchSize) <= r.Last; k++ {
					if err := d.enqueue(ctx, NewBatchTask(r.ID, k)); err != nil {
						return err // the sweeper restarts the run
					}
				}
			}
			if !pass.More {
				return nil
			}
		}
	}
}

// now is the engine's clock (Deps.Now, time.Now when nil).
func (d Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
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

// EnrollMembers handles TypeEnrollMembers: one statement (a welcome, paused
// or deleted automation enrolls nobody); the stepper sends what is due.
func EnrollMembers(d Deps) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		var p EnrollPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return Permanent(err)
		}
		n, err := d.DB.EnrollMembers(ctx, p.AutomationID, d.now())
		if err == nil && n > 0 {
			d.Log.InfoContext(ctx, "automation members enrolled", "automation_id", p.AutomationID, "enrolled", n)
			return d.enqueue(ctx, NewStepAutomationsTask())
		}
		return err
	}
}
