-- name: UpsertContact :one
-- Adds a contact, or updates the live one with the same address in the
-- type. Optional fields left NULL keep the stored value on update.
INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name, alt_email, country,
    state, city, address_line1, address_line2, state_province_region, postal_code, custom)
SELECT t.user_id, t.id, @email::text, COALESCE(sqlc.narg(first_name)::text, ''), COALESCE(sqlc.narg(last_name)::text, ''),
    NULLIF(sqlc.narg(alt_email)::text, ''), sqlc.narg(country)::integer, COALESCE(sqlc.narg(state)::text, ''), COALESCE(sqlc.narg(city)::text, ''),
    COALESCE(sqlc.narg(address_line1)::text, ''), COALESCE(sqlc.narg(address_line2)::text, ''),
    COALESCE(sqlc.narg(state_province_region)::text, ''), COALESCE(sqlc.narg(postal_code)::text, ''),
    jsonb_strip_nulls(@custom::jsonb)
FROM contact_types t
WHERE t.id = @contact_type_id AND t.user_id = @user_id AND t.deleted_at IS NULL
FOR SHARE OF t
ON CONFLICT (contact_type_id, email_lc) WHERE deleted_at IS NULL DO UPDATE SET
    email = EXCLUDED.email,
    first_name = COALESCE(sqlc.narg(first_name), contacts.first_name),
    last_name = COALESCE(sqlc.narg(last_name), contacts.last_name),
    alt_email = CASE WHEN sqlc.narg(alt_email)::text IS NULL THEN contacts.alt_email ELSE NULLIF(sqlc.narg(alt_email), '') END,
    country = COALESCE(sqlc.narg(country), contacts.country),
    state = COALESCE(sqlc.narg(state), contacts.state),
    city = COALESCE(sqlc.narg(city), contacts.city),
    address_line1 = COALESCE(sqlc.narg(address_line1), contacts.address_line1),
    address_line2 = COALESCE(sqlc.narg(address_line2), contacts.address_line2),
    state_province_region = COALESCE(sqlc.narg(state_province_region), contacts.state_province_region),
    postal_code = COALESCE(sqlc.narg(postal_code), contacts.postal_code),
    custom = jsonb_strip_nulls(contacts.custom || @custom::jsonb),
    updated_at = now()
RETURNING id, (xmax::text = $$0$$) AS inserted;

-- name: UpdateContact :one
-- Changes a live contact; optional fields left NULL keep their value.
UPDATE contacts AS c SET
    contact_type_id = t.id,
    email = @email,
    first_name = COALESCE(sqlc.narg(first_name), c.first_name),
    last_name = COALESCE(sqlc.narg(last_name), c.last_name),
    alt_email = CASE WHEN sqlc.narg(alt_email)::text IS NULL THEN c.alt_email ELSE NULLIF(sqlc.narg(alt_email), '') END,
    country = COALESCE(sqlc.narg(country), c.country),
    state = COALESCE(sqlc.narg(state), c.state),
    city = COALESCE(sqlc.narg(city), c.city),
    address_line1 = COALESCE(sqlc.narg(address_line1), c.address_line1),
    address_line2 = COALESCE(sqlc.narg(address_line2), c.address_line2),
    state_province_region = COALESCE(sqlc.narg(state_province_region), c.state_province_region),
    postal_code = COALESCE(sqlc.narg(postal_code), c.postal_code),
    custom = jsonb_strip_nulls(c.custom || @custom::jsonb),
    updated_at = now()
FROM contact_types t
WHERE c.id = @id AND c.user_id = @user_id AND c.deleted_at IS NULL
  AND t.id = (SELECT l.id FROM contact_types l
              WHERE l.id = @contact_type_id AND l.user_id = @user_id AND l.deleted_at IS NULL
              FOR SHARE)
RETURNING c.id;

-- name: LockContact :one
-- The contact's type before a change, its row locked.
SELECT contact_type_id FROM contacts
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL
FOR UPDATE;

-- name: ContactTypesOf :many
-- The types of those of ids that are live contacts of the account. ids
-- may be many (a bulk delete): they are joined as a set, which needs no
-- planning per element, rather than tested with = ANY.
SELECT DISTINCT c.contact_type_id
FROM unnest(@ids::bigint[]) AS x(id) JOIN contacts c ON c.id = x.id
WHERE c.user_id = @user_id AND c.deleted_at IS NULL;

-- name: LockContactTypes :many
-- Every contact writer locks the types it writes into or out of FOR SHARE,
-- in id order, before any contact row: imports and type deletes hold a
-- type FOR UPDATE while they change its contacts, so taking the type first
-- keeps writers from deadlocking on contact rows.
SELECT id FROM contact_types
WHERE id = ANY(@ids::bigint[]) AND user_id = @user_id
ORDER BY id
FOR SHARE;

-- name: LiveContactType :one
SELECT EXISTS (SELECT 1 FROM contact_types WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL);

-- name: ContactDetails :one
SELECT id, user_id, contact_type_id, first_name, last_name, email, alt_email, country, state, city,
    address_line1, address_line2, state_province_region, postal_code, custom, deleted_at, created_at, updated_at
FROM contacts
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: DeleteContacts :many
-- Soft-deletes those of ids (distinct) that are live contacts of the
-- account, in one statement, and answers how many per contact type.
WITH d AS (
    UPDATE contacts c SET deleted_at = now(), updated_at = now()
    FROM unnest(@ids::bigint[]) AS x(id)
    WHERE c.id = x.id AND c.user_id = @user_id AND c.deleted_at IS NULL
    RETURNING c.contact_type_id
)
SELECT d.contact_type_id, count(*)::bigint AS n FROM d GROUP BY d.contact_type_id ORDER BY d.contact_type_id;

-- name: InsertEvent :exec
INSERT INTO events (user_id, kind, subject_type, subject_id, payload)
VALUES (@user_id, @kind, @subject_type, sqlc.narg(subject_id), @payload);

-- name: CountCustomFieldsByID :one
SELECT count(*) FROM custom_fields WHERE user_id = @user_id AND id = ANY(@ids::bigint[]);

-- name: LockTypesForWriting :exec
-- Every contact writer takes, for each contact type it writes into or out
-- of, the type's writer lock shared, in key order; a segment rebuild step
-- takes it exclusive (LockTypeForRebuild). See postgres/segment.go.
SELECT pg_advisory_xact_lock_shared(1954115685, s.k)
FROM (SELECT DISTINCT (id % 2147483647)::int AS k FROM unnest(@ids::bigint[]) AS id ORDER BY 1) s;

-- name: LockAccountTypesForWriting :exec
-- LockTypesForWriting for every contact type of the account.
SELECT pg_advisory_xact_lock_shared(1954115685, s.k)
FROM (SELECT DISTINCT (id % 2147483647)::int AS k FROM contact_types WHERE user_id = @user_id ORDER BY 1) s;
