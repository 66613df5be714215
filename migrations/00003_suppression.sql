-- +goose Up

-- Unsubscribe groups: the named lists a recipient may leave one by one on
-- the preferences page (is_display 1 shows the group there). rand_id is the
-- group's public, numeric-looking identifier, unique across accounts.
CREATE TABLE unsubscribe_groups (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     bigint      NOT NULL REFERENCES accounts (id),
    rand_id     text        NOT NULL,
    group_name  text        NOT NULL,
    description text        NOT NULL,
    is_display  smallint    NOT NULL DEFAULT 0 CHECK (is_display IN (0, 1)),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX unsubscribe_groups_rand_id ON unsubscribe_groups (rand_id);
CREATE INDEX unsubscribe_groups_user ON unsubscribe_groups (user_id, id);

-- Unsubscribes: an account's suppressed addresses, on its global list
-- (unsubscribe_groups_id NULL) or in one of its groups. An address is on a
-- list once, compared lower-cased.
-- No foreign keys: this table grows with the audience, and every writer
-- checks the group itself (groups and accounts are never hard-deleted).
-- Two indexes, each with a job:
--   unsubscribes_email: the uniqueness, and the suppression lookup a send
--     makes per address, (user_id, email_lc) first so that an anti-join on
--     the address finds the global entry and the group's in one probe;
--   unsubscribes_list: the lists, their counts and pages, in id order; on
--     COALESCE so that the global list is an equality too (an IS NULL
--     condition does not let the planner read the index in id order).
CREATE TABLE unsubscribes (
    id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id               bigint      NOT NULL,
    unsubscribe_groups_id bigint,
    email_address         text        NOT NULL,
    email_lc              text        GENERATED ALWAYS AS (lower(email_address)) STORED,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX unsubscribes_email ON unsubscribes (user_id, email_lc, (COALESCE(unsubscribe_groups_id, 0)));
CREATE INDEX unsubscribes_list ON unsubscribes (user_id, (COALESCE(unsubscribe_groups_id, 0)), id);

-- Notification recipients: the addresses mailed for every event of the
-- account, once each (compared lower-cased).
CREATE TABLE notification_recipients (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id       bigint      NOT NULL REFERENCES accounts (id),
    email_address text        NOT NULL,
    email_owner   text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX notification_recipients_email ON notification_recipients (user_id, lower(email_address));

-- +goose Down
DROP TABLE notification_recipients, unsubscribes, unsubscribe_groups;
