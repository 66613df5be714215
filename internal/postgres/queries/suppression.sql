-- name: AddUnsubscribes :one
-- Puts each address on a list (the global one when group_id is NULL)
-- unless it is there already in any case, and records an event for each
-- address added: one statement for the whole batch. Returns how many were
-- added. origin, when not NULL, is merged into each event's payload (the
-- mail an unsubscribe came from). Rows go in in lower-cased address order: an insert waits on a
-- concurrent uncommitted insert of the same address, so two batches taking
-- their addresses in different orders could deadlock.
WITH added AS (
    INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address, send_id)
    SELECT @user_id::bigint, sqlc.narg(group_id)::bigint, a.address, sqlc.narg(send_id)::bigint
    FROM unnest(@addresses::text[]) AS a(address)
    ORDER BY lower(a.address)
    ON CONFLICT DO NOTHING
    RETURNING id, unsubscribe_groups_id, email_address
), recorded AS (
    INSERT INTO events (user_id, kind, subject_type, subject_id, payload)
    SELECT @user_id::bigint, @kind::text, 'unsubscribe', ad.id,
        jsonb_build_object('email_address', ad.email_address, 'unsubscribe_groups_id', ad.unsubscribe_groups_id)
            || COALESCE(sqlc.narg(origin)::jsonb, '{}')
    FROM added ad
    ORDER BY ad.id
    RETURNING 1
)
SELECT count(*) FROM recorded;

-- name: LockUnsubscribeGroup :one
-- Checks that the group is the account's; FOR SHARE keeps it in place
-- until the caller's transaction ends.
SELECT id FROM unsubscribe_groups
WHERE id = @id AND user_id = @user_id
FOR SHARE;

-- name: UnsubscribeGroupExists :one
SELECT EXISTS (SELECT 1 FROM unsubscribe_groups WHERE id = @id AND user_id = @user_id);

-- name: DeleteUnsubscribes :many
-- Deletes those of ids (distinct) that are the account's entries on the
-- global list (global true) or in its groups (global false), ids joined as
-- a set; answers how many left each list (0: the global list).
WITH d AS (
    DELETE FROM unsubscribes u
    USING unnest(@ids::bigint[]) AS x(id)
    WHERE u.id = x.id AND u.user_id = @user_id
      AND (u.unsubscribe_groups_id IS NULL) = @global::boolean
    RETURNING COALESCE(u.unsubscribe_groups_id, 0) AS list
)
SELECT d.list::bigint AS list, count(*)::bigint AS n FROM d GROUP BY d.list ORDER BY d.list;

-- name: ListUnsubscribeGroups :many
-- The account's groups by id, each with its kept number of addresses.
-- row_limit NULL is every row.
SELECT g.id, g.user_id, g.rand_id, g.group_name, g.description, g.is_display, g.created_at, g.updated_at,
       (SELECT COALESCE(sum(k.n), 0) FROM list_counts k
        WHERE k.user_id = g.user_id AND k.kind = 'unsubscribes' AND k.key = g.id)::bigint AS unsubscribe_clients_count
FROM unsubscribe_groups g
WHERE g.user_id = @user_id
ORDER BY g.id
LIMIT sqlc.narg('row_limit')::bigint OFFSET @row_offset::bigint;

-- name: CountUnsubscribeGroups :one
SELECT count(*) FROM unsubscribe_groups WHERE user_id = @user_id;

-- name: UnsubscribeGroup :one
SELECT id, user_id, rand_id, group_name, description, is_display, created_at, updated_at
FROM unsubscribe_groups
WHERE id = @id AND user_id = @user_id;

-- name: CreateUnsubscribeGroup :one
INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
VALUES (@user_id, @rand_id, @group_name, @description, @is_display)
RETURNING id;

-- name: UpdateUnsubscribeGroup :execrows
UPDATE unsubscribe_groups
SET group_name = @group_name, description = @description, is_display = @is_display, updated_at = now()
WHERE id = @id AND user_id = @user_id;

-- name: UnsubscribedFromSend :one
-- Whether the address already left a list from this send's mail.
SELECT EXISTS (SELECT 1 FROM unsubscribes
               WHERE user_id = @user_id AND email_lc = lower(@email::text) AND send_id = @send_id);

-- name: SuppressedAmong :many
-- The addresses of emails that no mail of the account may reach: its
-- global unsubscribes and hard bounces (the design editor's test mails
-- refuse them).
SELECT e::text AS email FROM unnest(@emails::text[]) AS e
WHERE EXISTS (SELECT 1 FROM unsubscribes u
              WHERE u.user_id = @user_id AND u.email_lc = lower(e) AND u.unsubscribe_groups_id IS NULL)
   OR EXISTS (SELECT 1 FROM bounces b WHERE b.user_id = @user_id AND b.email_lc = lower(e));
