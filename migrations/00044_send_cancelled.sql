-- +goose Up

-- When a paused send was cancelled (docs/deliverability.md): its
-- pending mails were skipped and it completed; NULL: not cancelled.
ALTER TABLE single_sends ADD COLUMN cancelled_at timestamptz;

-- +goose Down
ALTER TABLE single_sends DROP COLUMN cancelled_at;
