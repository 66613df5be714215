-- name: ListNotificationRecipients :many
-- row_limit NULL is every row.
SELECT id, user_id, email_address, email_owner, created_at, updated_at
FROM notification_recipients
WHERE user_id = @user_id
ORDER BY id
LIMIT sqlc.narg('row_limit')::bigint OFFSET @row_offset::bigint;

-- name: CountNotificationRecipients :one
SELECT count(*) FROM notification_recipients WHERE user_id = @user_id;

-- name: SaveNotificationRecipient :one
-- Adds the address, or renames the owner of the account's recipient with
-- the same address in any case (the latest spelling is kept).
INSERT INTO notification_recipients (user_id, email_address, email_owner)
VALUES (@user_id, @email_address, @email_owner)
ON CONFLICT (user_id, lower(email_address)) DO UPDATE SET
    email_address = EXCLUDED.email_address,
    email_owner = EXCLUDED.email_owner,
    updated_at = now()
RETURNING id;

-- name: DeleteNotificationRecipients :many
DELETE FROM notification_recipients
WHERE id = ANY(@ids::bigint[]) AND user_id = @user_id
RETURNING id;
