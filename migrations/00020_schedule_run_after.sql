-- +goose Up

-- Runs of a schedule are bucketed (docs/automations.md): after a small run
-- the schedule makes no other before run_after, a hold that doubles from
-- 2 s with each small run that follows closely on the last (run_streak,
-- last_run_at) up to AUTOMATION_RUN_EVERY, and starts over after a quiet
-- spell. NULL run_after: a run may be made at once.
ALTER TABLE automation_schedules ADD COLUMN run_after timestamptz,
    ADD COLUMN last_run_at timestamptz,
    ADD COLUMN run_streak int NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE automation_schedules DROP COLUMN run_after, DROP COLUMN last_run_at, DROP COLUMN run_streak;
