-- name: CreateSender :one
WITH s AS (
    INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, state_id, city_id, zip_code,
        company_address, company_address2, nickname, utr)
    VALUES (@user_id, @from_name, @from_email, @reply_to_email, @country_id, sqlc.narg(state_id), sqlc.narg(city_id), @zip_code,
        @company_address, @company_address2, @nickname, @utr)
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
