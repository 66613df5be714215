-- +goose Up

-- Senders: an account's from-identities. A new sender, or one whose
-- from_email changed, is unverified until the link mailed to from_email
-- is opened; the link's token is kept only as its SHA-256
-- (verify_token_hash) with its expiry. send_at is when the last
-- verification mail was handed over.
CREATE TABLE senders (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id           bigint      NOT NULL REFERENCES accounts (id),
    from_name         text        NOT NULL,
    from_email        text        NOT NULL,
    reply_to_email    text        NOT NULL,
    country_id        integer     NOT NULL,
    state_id          integer,
    city_id           integer,
    zip_code          text        NOT NULL DEFAULT '',
    company_address   text        NOT NULL,
    company_address2  text        NOT NULL DEFAULT '',
    nickname          text        NOT NULL,
    is_verified       smallint    NOT NULL DEFAULT 0,
    utr               text        NOT NULL UNIQUE,
    send_at           timestamptz,
    verify_token_hash bytea,
    verify_expires_at timestamptz,
    deleted_at        timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX senders_user ON senders (user_id, id) WHERE deleted_at IS NULL;

-- +goose Down
DROP TABLE senders;
