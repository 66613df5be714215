-- name: CreateSender :one
WITH s AS (
    INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, state_id, city_id, zip_code,
        company_address, company_address2, nickname, utr, verify_requested_at)
    VALUES (@user_id, @from_name, @from_email, @reply_to_email, @country_id, sqlc.narg(state_id), sqlc.narg(city_id), @zip_code,
        @company_address, @company_address2, @nickname, @utr, now())
    RETURNING id, user_id, from_email
), e AS (
    INSERT INTO events (user_id, kind, subject_type, subject_id, payload)
    SELECT user_id, 'sender.added', 'sender', id, jsonb_build_object('from_email', from_email) FROM s
)
SELECT id FROM s;

-- name: UpdateSender :execrows
-- A changed from_email makes the sender unverified again.
UPDATE senders SET from_name = @from_name, from_email = @from_email, reply_to_email = @reply_to_email,
    country_id = @country_id, state_id = sqlc.narg(state_id), city_id = sqlc.narg(city_id), zip_code = @zip_code,
    company_address = @company_address, company_address2 = @company_address2, nickname = @nickname,
    is_verified = CASE WHEN lower(from_email) = lower(@from_email) THEN is_verified ELSE 0 END,
    verify_requested_at = CASE WHEN lower(from_email) = lower(@from_email) THEN verify_requested_at ELSE now() END,
    updated_at = now()
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: DeleteSender :execrows
UPDATE senders SET deleted_at = now(), updated_at = now()
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: SenderByID :one
SELECT id, user_id, from_name, from_email, reply_to_email, country_id, state_id, city_id, zip_code,
    company_address, company_address2, nickname, is_verified, utr, send_at, deleted_at, created_at, updated_at
FROM senders WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: ListSenders :many
SELECT id, user_id, from_name, from_email, reply_to_email, country_id, state_id, city_id, zip_code,
    company_address, company_address2, nickname, is_verified, utr, send_at, deleted_at, created_at, updated_at
FROM senders WHERE user_id = @user_id AND deleted_at IS NULL
ORDER BY id;

-- name: RequestSenderVerification :execrows
-- resend-mail: a fresh verification mail is wanted.
UPDATE senders SET verify_requested_at = now()
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: PendingSenderVerifications :many
-- Senders whose verification mail is wanted and not sent since.
SELECT id FROM senders
WHERE deleted_at IS NULL AND verify_requested_at IS NOT NULL
  AND verify_requested_at > COALESCE(send_at, '-infinity')
ORDER BY id
LIMIT 100;

-- name: ClaimSenderVerification :one
-- The sender to mail, locked, if its mail is still wanted.
SELECT id, user_id, from_name, from_email FROM senders
WHERE id = @id AND deleted_at IS NULL AND verify_requested_at IS NOT NULL
  AND verify_requested_at > COALESCE(send_at, '-infinity')
FOR UPDATE SKIP LOCKED;

-- name: SetSenderVerificationToken :exec
UPDATE senders SET verify_token_hash = @token_hash, verify_expires_at = @expires_at, send_at = now()
WHERE id = @id;

-- name: VerifySender :one
-- The link was opened: single use, before it expires.
WITH s AS (
    UPDATE senders SET is_verified = 1, verify_token_hash = NULL, verify_expires_at = NULL, updated_at = now()
    WHERE verify_token_hash = @token_hash AND verify_expires_at > now() AND deleted_at IS NULL
    RETURNING id, user_id, from_email
), e AS (
    INSERT INTO events (user_id, kind, subject_type, subject_id, payload)
    SELECT user_id, 'sender.verified', 'sender', id, jsonb_build_object('from_email', from_email) FROM s
)
SELECT id, from_email FROM s;

-- name: DropSenderVerification :exec
-- The verification mail was refused for good (5xx, or an address no mail
-- can be composed for): no longer wanted until resend-mail asks again.
UPDATE senders SET verify_requested_at = NULL WHERE id = @id;
