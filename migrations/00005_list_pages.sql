-- +goose Up

-- Lists find their page by walking an index alone (an index-only scan),
-- then read only that page's rows (docs/counts.md).
-- unsubscribes_page replaces unsubscribes_list: the same key, plus the raw
-- column its expression reads, without which the planner does not take an
-- index-only scan of an expression index.
CREATE INDEX unsubscribes_page ON unsubscribes (user_id, (COALESCE(unsubscribe_groups_id, 0)), id) INCLUDE (unsubscribe_groups_id);
DROP INDEX unsubscribes_list;
-- The notification recipients list, by id (the unique index is by address).
CREATE INDEX notification_recipients_user ON notification_recipients (user_id, id);

-- +goose Down
DROP INDEX notification_recipients_user;
CREATE INDEX unsubscribes_list ON unsubscribes (user_id, (COALESCE(unsubscribe_groups_id, 0)), id);
DROP INDEX unsubscribes_page;
