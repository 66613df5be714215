-- +goose Up

-- A schedule whose last run was small waits before the next one: a trickle
-- of joins makes one run per AUTOMATION_RUN_EVERY, not one per stepping
-- pass (docs/automations.md). NULL: a run may be made at once.
ALTER TABLE automation_schedules ADD COLUMN run_after timestamptz;

-- +goose Down
ALTER TABLE automation_schedules DROP COLUMN run_after;
