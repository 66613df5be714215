-- +goose Up

-- send_id: the single send whose mail an unsubscribe came from (one-click
-- or the preferences page), NULL otherwise. A send counts an address once
-- in its unsubscribes statistic, whichever lists the address leaves.
ALTER TABLE unsubscribes ADD COLUMN send_id bigint;

-- +goose Down
ALTER TABLE unsubscribes DROP COLUMN send_id;
