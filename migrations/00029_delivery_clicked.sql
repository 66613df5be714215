-- +goose Up

-- A delivery's first click is marked on its row, so that two API
-- processes flushing clicks of the same mail at once count it one unique
-- clicker: the second UPDATE waits for the first and then finds the mark
-- (docs/tracking.md). Nullable without a default: no partition is
-- rewritten. Mails clicked already are marked from who clicked what.
ALTER TABLE deliveries ADD COLUMN clicked_at timestamptz;

UPDATE deliveries d SET clicked_at = c.first_at
FROM (SELECT send_id, delivery_id, min(first_at) AS first_at FROM delivery_clicks GROUP BY 1, 2) c
WHERE d.send_id = c.send_id AND d.id = c.delivery_id;

-- +goose Down
ALTER TABLE deliveries DROP COLUMN clicked_at;
