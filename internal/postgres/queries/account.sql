-- name: CreateAccount :one
INSERT INTO accounts (name, public_key, secret_hash)
VALUES (@name, @public_key, @secret_hash)
RETURNING id;

-- name: AccountByKeys :one
SELECT id, name, public_key, secret_hash
FROM accounts
WHERE public_key = @public_key;
