-- name: CreateConsoleUser :one
INSERT INTO console_users (user_id, email, email_lc, password_hash, role, invited_by)
VALUES (@user_id, @email, @email_lc, sqlc.narg(password_hash), @role, sqlc.narg(invited_by))
RETURNING id, created_at;

-- name: ConsoleUserByEmail :one
-- The sign-in's user, with whether its account is disabled.
SELECT u.id, u.user_id, u.email, u.password_hash, u.role, a.disabled_at
FROM console_users u JOIN accounts a ON a.id = u.user_id
WHERE u.email_lc = @email_lc;

-- name: ConsoleUserInAccount :one
SELECT id, user_id, email, role, (password_hash IS NOT NULL)::bool AS active, created_at
FROM console_users
WHERE user_id = @user_id AND id = @id;

-- name: ConsoleUserByID :one
SELECT id, user_id, email, role, (password_hash IS NOT NULL)::bool AS active, created_at
FROM console_users
WHERE id = @id;

-- name: ListConsoleUsers :many
SELECT id, user_id, email, role, (password_hash IS NOT NULL)::bool AS active, created_at
FROM console_users
WHERE user_id = @user_id
ORDER BY id;

-- name: LockAccountOwners :many
-- The account's owners, locked: a role change or removal that could
-- leave the account without one holds them until it commits.
SELECT id FROM console_users
WHERE user_id = @user_id AND role = 'owner' AND password_hash IS NOT NULL
ORDER BY id
FOR UPDATE;

-- name: SetConsoleUserRole :execrows
UPDATE console_users SET role = @role, updated_at = now()
WHERE user_id = @user_id AND id = @id;

-- name: DeleteConsoleUser :execrows
DELETE FROM console_users WHERE user_id = @user_id AND id = @id;

-- name: SetConsoleUserPassword :exec
UPDATE console_users SET password_hash = @password_hash, updated_at = now()
WHERE id = @id;

-- name: CreateConsoleSession :exec
INSERT INTO console_sessions (token_hash, console_user_id, csrf_token, ip, user_agent, idle_expires_at, expires_at)
VALUES (@token_hash, @console_user_id, @csrf_token, @ip, @user_agent, @idle_expires_at, @expires_at);

-- name: ConsoleSession :one
-- A live session with its user and account.
SELECT s.console_user_id, s.csrf_token, s.seen_at, u.user_id, u.email, u.role, a.name AS account_name, a.public_key
FROM console_sessions s
JOIN console_users u ON u.id = s.console_user_id
JOIN accounts a ON a.id = u.user_id
WHERE s.token_hash = @token_hash AND s.idle_expires_at > now() AND s.expires_at > now()
  AND a.disabled_at IS NULL;

-- name: TouchConsoleSession :exec
UPDATE console_sessions SET seen_at = now(), idle_expires_at = LEAST(expires_at, @idle_expires_at)
WHERE token_hash = @token_hash;

-- name: DeleteConsoleSession :exec
DELETE FROM console_sessions WHERE token_hash = @token_hash;

-- name: DeleteConsoleUserSessions :execrows
-- Signs a user out everywhere (all but keep, when given).
DELETE FROM console_sessions
WHERE console_user_id = @console_user_id AND token_hash IS DISTINCT FROM sqlc.narg(keep)::bytea;

-- name: DeleteExpiredConsoleSessions :execrows
DELETE FROM console_sessions WHERE idle_expires_at <= now() OR expires_at <= now();

-- name: CreateConsoleToken :one
INSERT INTO console_tokens (console_user_id, purpose, token_hash, expires_at)
VALUES (@console_user_id, @purpose, sqlc.narg(token_hash), @expires_at)
RETURNING id;

-- name: DropConsoleTokens :exec
-- Earlier unused links of a purpose are void once a new one is asked for.
UPDATE console_tokens SET used_at = now()
WHERE console_user_id = @console_user_id AND purpose = @purpose AND used_at IS NULL;

-- name: PendingConsoleMails :many
SELECT id FROM console_tokens
WHERE token_hash IS NULL AND used_at IS NULL AND expires_at > now()
ORDER BY id
LIMIT 100;

-- name: ClaimConsoleMail :one
-- A link to mail, locked, with its user and account.
SELECT t.id, t.purpose, t.expires_at, u.email, u.role, a.name AS account_name, i.email AS invited_by
FROM console_tokens t
JOIN console_users u ON u.id = t.console_user_id
JOIN accounts a ON a.id = u.user_id
LEFT JOIN console_users i ON i.id = u.invited_by
WHERE t.id = @id AND t.token_hash IS NULL AND t.used_at IS NULL AND t.expires_at > now()
FOR UPDATE OF t SKIP LOCKED;

-- name: SetConsoleTokenMailed :exec
UPDATE console_tokens SET token_hash = @token_hash, mailed_at = now() WHERE id = @id;

-- name: DropConsoleMail :exec
UPDATE console_tokens SET used_at = now() WHERE id = @id;

-- name: PeekConsoleToken :one
-- A link's user, if the link still works (it is not spent).
SELECT t.purpose, u.id, u.email, u.user_id, a.name AS account_name
FROM console_tokens t
JOIN console_users u ON u.id = t.console_user_id
JOIN accounts a ON a.id = u.user_id
WHERE t.token_hash = @token_hash AND t.purpose = ANY(@purposes::text[]) AND t.used_at IS NULL AND t.expires_at > now()
  AND a.disabled_at IS NULL;

-- name: TakeConsoleToken :one
-- Spends a link: once, before it expires.
UPDATE console_tokens t SET used_at = now()
FROM console_users u
WHERE t.token_hash = @token_hash AND t.purpose = ANY(@purposes::text[]) AND t.used_at IS NULL AND t.expires_at > now()
  AND u.id = t.console_user_id
RETURNING u.id, u.user_id, u.email, u.role;

-- name: InsertAuditEvent :exec
INSERT INTO audit_events (user_id, console_user_id, actor, action, target, ip)
VALUES (@user_id, sqlc.narg(console_user_id), @actor, @action, @target, @ip);

-- name: ListAuditEvents :many
SELECT id, actor, action, target, ip, created_at
FROM audit_events
WHERE user_id = @user_id AND id < @before
ORDER BY id DESC
LIMIT @lim;
