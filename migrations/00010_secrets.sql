-- +goose Up

-- Secrets every mailroom process shares, made once by the migration so
-- that nothing needs configuring: unsubscribe_token signs the per-mail
-- unsubscribe and preferences links (HMAC-SHA256). 32 bytes from two
-- gen_random_uuid() values (the server's strong random source; 244
-- random bits).
CREATE TABLE secrets (
    name       text PRIMARY KEY,
    value      bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO secrets (name, value)
VALUES ('unsubscribe_token', uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));

-- +goose Down
DROP TABLE secrets;
