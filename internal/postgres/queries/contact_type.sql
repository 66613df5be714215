-- name: ListContactTypes :many
-- The account's live contact types by id, each with its kept count of
-- live contacts. row_limit NULL is every row.
SELECT t.id, t.user_id, t.name, t.deleted_at, t.created_at, t.updated_at,
       (SELECT COALESCE(sum(k.n), 0) FROM list_counts k
        WHERE k.user_id = t.user_id AND k.kind = 'contact_type' AND k.key = t.id)::bigint AS contacts_count
FROM contact_types t
WHERE t.user_id = @user_id AND t.deleted_at IS NULL
ORDER BY t.id
LIMIT sqlc.narg('row_limit')::bigint OFFSET @row_offset::bigint;

-- name: CountContactTypes :one
SELECT count(*) FROM contact_types WHERE user_id = @user_id AND deleted_at IS NULL;

-- name: CreateContactType :one
INSERT INTO contact_types (user_id, name) VALUES (@user_id, @name)
RETURNING id;

-- name: ContactType :one
SELECT id, user_id, name, deleted_at, created_at, updated_at
FROM contact_types
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: UpdateContactType :execrows
UPDATE contact_types SET name = @name, updated_at = now()
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: DeleteContactType :execrows
-- FOR UPDATE conflicts with the FOR SHARE lock every contact writer takes
-- on its type: writes in flight commit before DeleteContactsOfType runs,
-- and later ones wait for this transaction, then find the type gone.
UPDATE contact_types SET deleted_at = now()
WHERE id = (SELECT l.id FROM contact_types l
            WHERE l.id = @id AND l.user_id = @user_id AND l.deleted_at IS NULL
            FOR UPDATE);

-- name: DeleteContactsOfType :execrows
UPDATE contacts SET deleted_at = now()
WHERE user_id = @user_id AND contact_type_id = @contact_type_id AND deleted_at IS NULL;
