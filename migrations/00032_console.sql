-- +goose Up

-- The web console's people: each belongs to one account (user_id, the
-- API's name for an account) with a role. An address signs in to one
-- account only. password_hash is bcrypt; NULL until an invitation (or the
-- command line's sign-in link) is taken.
CREATE TABLE console_users (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id       bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email         text        NOT NULL,
    email_lc      text        NOT NULL UNIQUE,
    password_hash text,
    role          text        NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    invited_by    bigint      REFERENCES console_users (id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_users_account ON console_users (user_id, id);

-- Signed-in browsers. The cookie holds a random token; only its SHA-256 is
-- kept. A session ends idle_expires_at (pushed on as it is used) or
-- expires_at (fixed at sign-in), whichever comes first.
CREATE TABLE console_sessions (
    token_hash      bytea       PRIMARY KEY,
    console_user_id bigint      NOT NULL REFERENCES console_users (id) ON DELETE CASCADE,
    csrf_token      text        NOT NULL,
    ip              text        NOT NULL DEFAULT '',
    user_agent      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    seen_at         timestamptz NOT NULL DEFAULT now(),
    idle_expires_at timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL
);
CREATE INDEX console_sessions_user ON console_sessions (console_user_id);

-- Single-use links: an invitation (sets the first password), a password
-- reset, or the sign-in link the command line prints for a new owner.
-- Mailed links get their token when the worker writes the mail
-- (token_hash NULL until then, like a sender's verification); only the
-- hash is kept.
CREATE TABLE console_tokens (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    console_user_id bigint      NOT NULL REFERENCES console_users (id) ON DELETE CASCADE,
    purpose         text        NOT NULL CHECK (purpose IN ('invite', 'reset', 'signin')),
    token_hash      bytea       UNIQUE,
    requested_at    timestamptz NOT NULL DEFAULT now(),
    mailed_at       timestamptz,
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz
);
CREATE INDEX console_tokens_to_mail ON console_tokens (id) WHERE token_hash IS NULL AND used_at IS NULL;
CREATE INDEX console_tokens_user ON console_tokens (console_user_id);

-- The account's audit trail: every console write and every key rotation,
-- who (a console user, or the command line), what, when and from where.
-- actor keeps the address as it was, so a removed member's entries stay
-- readable.
CREATE TABLE audit_events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    console_user_id bigint      REFERENCES console_users (id) ON DELETE SET NULL,
    actor           text        NOT NULL,
    action          text        NOT NULL,
    target          text        NOT NULL DEFAULT '',
    ip              text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_events_account ON audit_events (user_id, id DESC);

-- +goose Down
DROP TABLE audit_events;
DROP TABLE console_tokens;
DROP TABLE console_sessions;
DROP TABLE console_users;
