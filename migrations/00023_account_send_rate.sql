-- +goose Up

-- accounts send-rate (cmd/api): at most send_rate mails a second for the
-- account's sends and automations, across every worker (a token bucket in
-- Redis). NULL: no limit.
ALTER TABLE accounts ADD COLUMN send_rate integer CHECK (send_rate > 0);

-- +goose Down
ALTER TABLE accounts DROP COLUMN send_rate;
