-- +goose Up

-- Batches lease their id range, not each row: one row write per delivery
-- (its outcome) instead of two, and updates that touch no indexed column
-- can be HOT (partitions are made with fillfactor 70 to leave them room).
-- A range's lease is a row here; a batch takes it when it is free or has
-- expired, and gives it back when it has recorded its outcomes.
CREATE TABLE delivery_ranges (
    send_id     bigint      NOT NULL,
    k           bigint      NOT NULL,
    lease_until timestamptz NOT NULL,
    PRIMARY KEY (send_id, k)
);

-- remaining: deliveries of a running send not yet final (sent, bounced or
-- failed). Each batch takes its finals off in the transaction that records
-- them; the one that brings it to 0 completes the send. This replaces the
-- "no open row left" check, whose cost grew with the rows already done.
ALTER TABLE single_sends ADD COLUMN remaining bigint NOT NULL DEFAULT 0;

-- The partial index of open rows goes: status changes made every update
-- an index update (never HOT), and its dead entries made each completion
-- check slower than the last. The sweeper's rare questions read the
-- send's rows through the primary key.
DROP INDEX deliveries_open;

-- +goose Down
CREATE INDEX deliveries_open ON deliveries (send_id, id) WHERE status IN (0, 1);
ALTER TABLE single_sends DROP COLUMN remaining;
DROP TABLE delivery_ranges;
