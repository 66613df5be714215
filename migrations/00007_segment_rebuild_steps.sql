-- +goose Up

-- A segment rebuild runs in steps of a few thousand contacts, each its own
-- short transaction holding the contact type FOR UPDATE, so contact
-- writers wait for a step, never for a whole rebuild. rebuild_gen counts
-- condition changes (a step of an older generation stops); rebuild_next is
-- the first contact id the rebuild has still to evaluate, NULL once it is
-- done. A rebuild a stopped process left is resumed from there.
ALTER TABLE segments
    ADD COLUMN rebuild_gen  bigint NOT NULL DEFAULT 0,
    ADD COLUMN rebuild_next bigint;
CREATE INDEX segments_rebuilding ON segments (id) WHERE rebuild_next IS NOT NULL AND deleted_at IS NULL;

-- +goose Down
DROP INDEX segments_rebuilding;
ALTER TABLE segments DROP COLUMN rebuild_next, DROP COLUMN rebuild_gen;
