-- name: ListNotificationRecipients :many
-- The account's recipients by id after after_id (0: from the first); the
-- page is found on notification_recipients_user alone, then read.
-- row_limit NULL is every row.
SELECT n.id, n.user_id, n.email_address, n.email_owner, n.created_at, n.updated_at
FROM (SELECT p.id FROM notification_recipients p
      WHERE p.user_id = @user_id AND p.id > @after_id::bigint
      ORDER BY p.id
      LIMIT sqlc.narg('row_limit')::bigint OFFSET @row_offset::bigint) page
JOIN notification_recipients n ON n.id = page.id
ORDER BY n.id;

-- name: SaveNotificationRecipient :one
-- Adds the address, or renames the owner of the account's recipient with
-- the same address in any case (the latest spelling is kept).
INSERT INTO notification_recipients (user_id, email_address, email_owner)
VALUES (@user_id, @email_address, @email_owner)
ON CONFLICT (user_id, lower(email_address)) DO UPDATE SET
    email_address = EXCLUDED.email_address,
    email_owner = EXCLUDED.email_owner,
    updated_at = now()
RETURNING id, (xmax::text = $$0$$) AS inserted;

-- name: DeleteNotificationRecipients :execrows
-- Deletes those of ids (distinct) that are the account's recipients.
DELETE FROM notification_recipients n
USING unnest(@ids::bigint[]) AS x(id)
WHERE n.id = x.id AND n.user_id = @user_id;
