-- +goose Up

-- Warm-up of a sending domain (docs/deliverability.md): from
-- warmup_from (a UTC date) its mails go out at most the day's allowance
-- of warmup_schedule (day 1 its first entry; past the last, doubling),
-- counted across every worker in Redis; NULL: not warming up.
ALTER TABLE sending_domains ADD COLUMN warmup_from date, ADD COLUMN warmup_schedule integer[];

-- +goose Down
ALTER TABLE sending_domains DROP COLUMN warmup_schedule, DROP COLUMN warmup_from;
