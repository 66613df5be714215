-- +goose Up

-- A segment with an "is within the last" condition matches by the clock:
-- its members age out, and a future date comes due, with no contact
-- write to re-evaluate them. rebuilt_at is when its last clock rebuild
-- began; such a segment is rebuilt again once that is an hour old
-- (docs/segments.md). A constant default: no table rewrite.
ALTER TABLE segments ADD COLUMN rebuilt_at timestamptz NOT NULL DEFAULT '-infinity';

-- +goose Down
ALTER TABLE segments DROP COLUMN rebuilt_at;
