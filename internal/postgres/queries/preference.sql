-- name: Secret :one
SELECT value FROM secrets WHERE name = @name;

-- name: PreferenceGroups :many
-- The groups a recipient's preferences page shows: the account's groups
-- with is_display 1, and the group the mail came from (group_id, 0 none),
-- each with whether the address has left it.
SELECT g.id, g.group_name, g.description,
       EXISTS (SELECT 1 FROM unsubscribes u
               WHERE u.user_id = g.user_id AND u.email_lc = lower(@email::text)
                 AND COALESCE(u.unsubscribe_groups_id, 0) = g.id) AS has_left
FROM unsubscribe_groups g
WHERE g.user_id = @user_id AND (g.is_display = 1 OR g.id = @group_id::bigint)
ORDER BY g.id;

-- name: GloballyUnsubscribed :one
SELECT EXISTS (SELECT 1 FROM unsubscribes
               WHERE user_id = @user_id AND email_lc = lower(@email::text)
                 AND COALESCE(unsubscribe_groups_id, 0) = 0);
