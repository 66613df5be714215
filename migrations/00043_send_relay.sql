-- +goose Up

-- The relay a send's mails go to first, by its name in SMTP_URL
-- (docs/deliverability.md); NULL: chosen by the relays' rules and
-- weights.
ALTER TABLE single_sends ADD COLUMN relay text;

-- +goose Down
ALTER TABLE single_sends DROP COLUMN relay;
