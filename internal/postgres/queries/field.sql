-- name: ListCustomFields :many
-- row_limit NULL is every row.
SELECT id, user_id, field_name, field_type, created_at, updated_at
FROM custom_fields
WHERE user_id = @user_id
ORDER BY id
LIMIT sqlc.narg('row_limit')::bigint OFFSET @row_offset::bigint;

-- name: CountCustomFields :one
SELECT count(*) FROM custom_fields WHERE user_id = @user_id;

-- name: CreateCustomField :one
INSERT INTO custom_fields (user_id, field_name, field_type)
VALUES (@user_id, @field_name, @field_type)
RETURNING id;

-- name: DeleteCustomField :one
DELETE FROM custom_fields WHERE id = @id AND user_id = @user_id
RETURNING field_name;

-- name: RemoveCustomValues :execrows
-- Drops the field's key from every live contact of the account, so a later
-- field of that name starts empty (deleted contacts are never read again).
-- Live only, so that contacts_user finds the rows: the account's types
-- are locked meanwhile.
UPDATE contacts SET custom = custom - @field_name::text
WHERE user_id = @user_id AND deleted_at IS NULL AND custom ? @field_name::text;

-- name: LockAccountContactTypes :exec
-- A custom field delete changes contacts of every type: it takes every
-- type of the account FOR UPDATE, in id order, as the writers that lock
-- them FOR SHARE do, so none of them writes a value of the field while it
-- goes.
SELECT id FROM contact_types WHERE user_id = @user_id ORDER BY id FOR UPDATE;
