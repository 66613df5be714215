-- +goose Up

-- When a paused send was cancelled (docs/deliverability.md): its
-- pending mails were skipped (cancelled counts them) and it completed;
-- NULL: not cancelled.
ALTER TABLE single_sends ADD COLUMN cancelled_at timestamptz, ADD COLUMN cancelled bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE single_sends DROP COLUMN cancelled, DROP COLUMN cancelled_at;
