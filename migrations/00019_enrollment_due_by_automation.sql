-- +goose Up

-- The stepper takes whole live automations (FOR UPDATE SKIP LOCKED: a
-- delete or a pause waits for its pass, two steppers never share one),
-- then their due enrollments: due_at is read per automation, so a paused
-- automation's overdue enrollments are never read.
DROP INDEX automation_enrollments_due;
CREATE INDEX automation_enrollments_due ON automation_enrollments (automation_id, due_at) WHERE state = 0;

-- +goose Down
DROP INDEX automation_enrollments_due;
CREATE INDEX automation_enrollments_due ON automation_enrollments (due_at) WHERE state = 0;
