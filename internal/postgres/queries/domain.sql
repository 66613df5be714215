-- name: CreateSendingDomain :one
-- No row when the account has the domain already.
INSERT INTO sending_domains (user_id, domain, selector, rsa_private, ed25519_private, records)
VALUES (@user_id, @domain, @selector, @rsa_private, sqlc.narg(ed25519_private), @records::jsonb)
ON CONFLICT (user_id, domain) WHERE deleted_at IS NULL DO NOTHING
RETURNING id;

-- name: CountSendingDomains :one
SELECT count(*) FROM sending_domains WHERE user_id = @user_id AND deleted_at IS NULL;

-- name: SendingDomains :many
SELECT id, user_id, domain, selector, (ed25519_private IS NOT NULL)::bool AS ed25519, records::text AS records, checked_at, verified_at, created_at,
    warmup_from, warmup_schedule::int[] AS warmup_schedule
FROM sending_domains WHERE user_id = @user_id AND deleted_at IS NULL ORDER BY id;

-- name: SendingDomain :one
SELECT id, user_id, domain, selector, (ed25519_private IS NOT NULL)::bool AS ed25519, records::text AS records, checked_at, verified_at, created_at,
    warmup_from, warmup_schedule::int[] AS warmup_schedule
FROM sending_domains WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: SaveDomainChecks :execrows
-- A lookup's findings; verified_at is when every record was first found
-- together (cleared when one no longer is).
UPDATE sending_domains
SET records = @records::jsonb, checked_at = now(), updated_at = now(),
    verified_at = CASE WHEN @all_found::bool THEN COALESCE(verified_at, now()) END
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: DeleteSendingDomain :execrows
UPDATE sending_domains SET deleted_at = now(), updated_at = now() WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: VerifiedDomainKeys :many
-- The sealed keys of every verified sending domain, by account: the ones
-- the worker signs with (the latest verified of an account's domain).
SELECT DISTINCT ON (user_id, domain) user_id, domain, selector, rsa_private, ed25519_private
FROM sending_domains
WHERE deleted_at IS NULL AND verified_at IS NOT NULL
ORDER BY user_id, domain, verified_at DESC;

-- name: DomainStanding :one
-- Whether the account has any sending domain, and whether domain is one
-- of them, verified: one read of its few rows.
SELECT (count(*) > 0)::bool AS any_domain,
    COALESCE(bool_or(domain = @domain AND verified_at IS NOT NULL), false)::bool AS verified
FROM sending_domains WHERE user_id = @user_id AND deleted_at IS NULL;

-- name: SetDomainWarmup :execrows
-- Starts (from today, UTC) or ends a sending domain's warm-up.
UPDATE sending_domains
SET warmup_from = CASE WHEN @warm::bool THEN COALESCE(warmup_from, (now() AT TIME ZONE 'UTC')::date) END,
    warmup_schedule = CASE WHEN @warm::bool THEN sqlc.narg(schedule)::int[] END, updated_at = now()
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;
