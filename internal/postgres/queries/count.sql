-- name: CountOf :one
-- The length of one list.
SELECT COALESCE(sum(n), 0)::bigint FROM list_counts
WHERE user_id = @user_id AND kind = @kind AND key = @key;

-- name: CountAll :one
-- The summed length of every list of a kind: the account's live contacts
-- for 'contact_type'.
SELECT COALESCE(sum(n), 0)::bigint FROM list_counts
WHERE user_id = @user_id AND kind = @kind;

-- name: ClearCounts :exec
DELETE FROM list_counts WHERE user_id = @user_id;

-- name: RecountAccount :exec
-- Rebuilds an account's counts from its rows, after ClearCounts in one
-- REPEATABLE READ transaction (retried on conflicts): counts that writers
-- commit meanwhile are then neither lost nor doubled.
INSERT INTO list_counts (user_id, kind, key, n)
SELECT c.user_id, 'contact_type', c.contact_type_id, count(*)
FROM contacts c WHERE c.user_id = @user_id AND c.deleted_at IS NULL GROUP BY c.user_id, c.contact_type_id
UNION ALL
SELECT s.user_id, 'segment', s.id, count(*)
FROM segment_entries r JOIN segments s ON s.id = r.segment_id
WHERE s.user_id = @user_id GROUP BY s.user_id, s.id
UNION ALL
SELECT u.user_id, 'unsubscribes', COALESCE(u.unsubscribe_groups_id, 0), count(*)
FROM unsubscribes u WHERE u.user_id = @user_id GROUP BY u.user_id, COALESCE(u.unsubscribe_groups_id, 0)
UNION ALL
SELECT n.user_id, 'notification', 0, count(*)
FROM notification_recipients n WHERE n.user_id = @user_id GROUP BY n.user_id;
