-- name: CreateAccount :one
INSERT INTO accounts (name, public_key, secret_hash)
VALUES (@name, @public_key, @secret_hash)
RETURNING id;

-- name: AccountByKeys :one
SELECT id, name, public_key, secret_hash, disabled_at
FROM accounts
WHERE public_key = @public_key;

-- name: ListAccounts :many
SELECT id, name, public_key, disabled_at, created_at, updated_at
FROM accounts
ORDER BY id;

-- name: RotateAccountKeys :execrows
-- New keys replace the old at once: the next request with the old ones is
-- refused.
UPDATE accounts SET public_key = @public_key, secret_hash = @secret_hash, updated_at = now()
WHERE id = @id;

-- name: SetAccountDisabled :execrows
UPDATE accounts SET disabled_at = CASE WHEN @disabled::bool THEN COALESCE(disabled_at, now()) END, updated_at = now()
WHERE id = @id;

-- name: SetAccountSendRate :execrows
UPDATE accounts SET send_rate = sqlc.narg(send_rate), updated_at = now()
WHERE id = @id;

-- name: AccountSendRate :one
SELECT COALESCE(send_rate, 0)::int AS send_rate FROM accounts WHERE id = @id;

-- name: AccountGuards :one
-- An account's reputation guards (docs/deliverability.md).
SELECT pause_bounce_rate, pause_bounce_after, pause_complaint_rate, pause_complaint_after FROM accounts WHERE id = @id;

-- name: SaveAccountGuards :exec
UPDATE accounts SET pause_bounce_rate = @bounce_rate, pause_bounce_after = @bounce_after,
    pause_complaint_rate = @complaint_rate, pause_complaint_after = @complaint_after
WHERE id = @id;
