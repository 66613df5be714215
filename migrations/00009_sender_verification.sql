-- +goose Up

-- verify_requested_at: a verification mail is wanted (a new sender, a
-- changed from_email, resend-mail); the worker mails one when it is later
-- than send_at, so a lost task is made up by the sweep.
ALTER TABLE senders ADD COLUMN verify_requested_at timestamptz;
UPDATE senders SET verify_requested_at = created_at WHERE is_verified = 0 AND deleted_at IS NULL;
CREATE INDEX senders_verify_pending ON senders (id)
    WHERE deleted_at IS NULL AND verify_requested_at IS NOT NULL;
CREATE UNIQUE INDEX senders_verify_token ON senders (verify_token_hash) WHERE verify_token_hash IS NOT NULL;

-- +goose Down
DROP INDEX senders_verify_token;
DROP INDEX senders_verify_pending;
ALTER TABLE senders DROP COLUMN verify_requested_at;
