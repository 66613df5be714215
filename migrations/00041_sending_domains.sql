-- +goose Up

-- An account's sending domains (docs/deliverability.md): the DKIM key
-- pairs mailroom made for each (private keys sealed with AES-256-GCM
-- under DKIM_KEY_SECRET, never stored plain), the DNS records to publish
-- with what the last lookup found for each, and when every record was
-- found.
CREATE TABLE sending_domains (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id          bigint      NOT NULL REFERENCES accounts (id),
    domain           text        NOT NULL,
    selector         text        NOT NULL,
    rsa_private      bytea       NOT NULL,
    ed25519_private  bytea,
    records          jsonb       NOT NULL,
    checked_at       timestamptz,
    verified_at      timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    deleted_at       timestamptz
);
CREATE UNIQUE INDEX sending_domains_domain ON sending_domains (user_id, domain) WHERE deleted_at IS NULL;

-- +goose Down
DROP TABLE sending_domains;
