-- +goose Up

-- progress_at: when a batch of the send last recorded outcomes (or the
-- send started). A running send whose progress_at is old has lost its
-- batch chain (a flushed Redis, a killed worker): the sweeper restarts it.
ALTER TABLE single_sends ADD COLUMN progress_at timestamptz;

-- +goose Down
ALTER TABLE single_sends DROP COLUMN progress_at;
