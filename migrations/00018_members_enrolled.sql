-- +goose Up

-- members_enrolled_at: when a custom automation's members at its first
-- set-live were enrolled. Only the first set-live enrolls members: a
-- resume must not enroll again those who finished the series, nor those
-- who joined while it was paused.
ALTER TABLE automations ADD COLUMN members_enrolled_at timestamptz;

-- +goose Down
ALTER TABLE automations DROP COLUMN members_enrolled_at;
