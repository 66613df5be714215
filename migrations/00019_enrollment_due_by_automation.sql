-- +goose Up

-- The stepper reads due enrollments per live automation: a paused
-- automation's overdue enrollments are never read.
DROP INDEX automation_enrollments_due;
CREATE INDEX automation_enrollments_due ON automation_enrollments (automation_id, due_at) WHERE state = 0;

-- +goose Down
DROP INDEX automation_enrollments_due;
CREATE INDEX automation_enrollments_due ON automation_enrollments (due_at) WHERE state = 0;
