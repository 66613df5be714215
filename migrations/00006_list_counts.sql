-- +goose Up

-- Kept counts: the length of every list whose size a response shows
-- (contacts_count, segment_emails_count, unsubscribe_clients_count and the
-- totals of paged lists), so that no request counts rows.
--   kind 'contact_type'  key: contact type id  counts its live contacts
--   kind 'segment'       key: segment id       counts its segment_recipients
--   kind 'unsubscribes'  key: group id, 0 for the global list
--   kind 'notification'  key: 0                counts notification_recipients
-- A list's count is the sum of n over its rows. Each writer inserts, in its
-- own transaction, one row per list it changed with the number of rows its
-- statement actually added or removed; nothing is updated in place, so
-- concurrent writers of one list never wait for each other here. Now and
-- then a writer folds a list's rows into one (DELETE … RETURNING, then
-- INSERT of the sum, taking only rows no one else holds: SKIP LOCKED), so
-- a list has a few rows at any time. See docs/counts.md.
CREATE TABLE list_counts (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id bigint NOT NULL,
    kind    text   NOT NULL CHECK (kind IN ('contact_type', 'segment', 'unsubscribes', 'notification')),
    key     bigint NOT NULL,
    n       bigint NOT NULL
);
CREATE INDEX list_counts_list ON list_counts (user_id, kind, key) INCLUDE (n);

-- The counts of the data already there.
INSERT INTO list_counts (user_id, kind, key, n)
SELECT user_id, 'contact_type', contact_type_id, count(*)
FROM contacts WHERE deleted_at IS NULL
GROUP BY user_id, contact_type_id;

INSERT INTO list_counts (user_id, kind, key, n)
SELECT s.user_id, 'segment', s.id, count(*)
FROM segment_recipients r JOIN segments s ON s.id = r.segment_id
GROUP BY s.user_id, s.id;

INSERT INTO list_counts (user_id, kind, key, n)
SELECT user_id, 'unsubscribes', COALESCE(unsubscribe_groups_id, 0), count(*)
FROM unsubscribes
GROUP BY user_id, COALESCE(unsubscribe_groups_id, 0);

INSERT INTO list_counts (user_id, kind, key, n)
SELECT user_id, 'notification', 0, count(*)
FROM notification_recipients
GROUP BY user_id;

-- +goose Down
DROP TABLE list_counts;
