package delivery

import (
	"context"
	"time"

	"github.com/mailroom/mailroom/internal/mail"
)

// stepBatch is how many enrollments one stepping transaction takes.
const stepBatch = 5000

// StepAutomations sends the automation mails that are due
// (docs/automations.md): passes of due enrollments until none is left,
// each making runs whose ranges are scheduled like a single send's first
// window.
func (e *Engine) StepAutomations(ctx context.Context) error {
	for {
		start := time.Now()
		pass, err := e.Store.StepAutomations(ctx, Step{Now: e.now(), Enrollments: stepBatch,
			BatchSize: e.Config.BatchSize, RunEvery: e.Config.RunEvery, NewToken: mail.NewOpenToken,
			AllowUnverified: e.AllowUnverifiedSenders})
		if err != nil {
			return err
		}
		if pass.Stepped > 0 { // most passes find nothing due: only the ones that stepped are timed
			e.Metrics.step.Observe(time.Since(start).Seconds())
			e.Metrics.stepped.Add(float64(pass.Stepped))
		}
		for _, r := range pass.Runs {
			if err := e.startWindow(ctx, r.ID, 0, r.First, r.Last, e.Config.BatchSize, ""); err != nil {
				return err // the sweeper restarts the run
			}
		}
		if !pass.More {
			return nil
		}
	}
}

// EnrollMembers enrolls a custom automation's current members in one
// statement (a welcome, paused or deleted automation enrolls nobody); the
// stepper, scheduled when someone was enrolled, sends what is due.
func (e *Engine) EnrollMembers(ctx context.Context, automationID int64) error {
	n, err := e.Store.EnrollMembers(ctx, automationID, e.now())
	if err == nil && n > 0 {
		e.Log.InfoContext(ctx, "automation members enrolled", "automation_id", automationID, "enrolled", n)
		return e.Scheduler.Step(ctx)
	}
	return err
}
