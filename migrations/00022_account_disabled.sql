-- +goose Up

-- accounts disable (cmd/api): a disabled account's keys stop working.
ALTER TABLE accounts ADD COLUMN disabled_at timestamptz;

-- +goose Down
ALTER TABLE accounts DROP COLUMN disabled_at;
