-- name: ClaimEvents :many
-- Events not mailed yet, oldest first, locked for this worker's
-- transaction; those another worker holds are skipped.
SELECT id, user_id, kind, subject_type, subject_id, payload::text AS payload, created_at
FROM events
WHERE notified_at IS NULL
ORDER BY id
LIMIT @n::int
FOR UPDATE SKIP LOCKED;

-- name: NotificationAddresses :many
-- The notification recipients' addresses of these accounts.
SELECT user_id, email_address FROM notification_recipients
WHERE user_id = ANY(@user_ids::bigint[])
ORDER BY user_id, id;

-- name: MarkNotified :exec
UPDATE events SET notified_at = now() WHERE id = @id;
