-- +goose Up

-- Event webhooks (docs/webhooks.md). events is the bit set of the event
-- kinds the webhook wants (mail.HookKinds: 1 delivered, 2 deferred,
-- 4 bounce, 8 dropped, 16 open, 32 click, 64 unsubscribe, 128 complaint).
-- secret signs every POST (HMAC-SHA256), so it is kept as it was made, as
-- secrets keeps the unsubscribe key; the API shows it once, in the answer
-- of the save.
CREATE TABLE webhooks (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    bigint      NOT NULL REFERENCES accounts (id),
    url        text        NOT NULL,
    events     integer     NOT NULL CHECK (events > 0),
    secret     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz
);
CREATE INDEX webhooks_user ON webhooks (user_id, id) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX webhooks_url ON webhooks (user_id, url) WHERE deleted_at IS NULL;

-- The outbox: events on their way to a webhook, written by the
-- transaction that made them (a batch's outcomes, a flush of opens and
-- clicks, an unsubscribe, an expansion's suppressed addresses), one row
-- per such write and webhook wanting some of them, never one per event.
-- The mails of one kind (delivered, or dropped when their batch ran) are
-- named, not copied: runs holds the [first, last] id ranges of the send's
-- deliveries they are (a batch's are mostly one range), of kind; the
-- webhook task reads their addresses when it builds the JSON. The other
-- events (bounces, deferrals, opens, clicks, unsubscribes, intake's) are
-- carried whole: events, a JSON array of mail.HookEvent. n is how many
-- events the row holds. A row is deleted once posted; state 2: given up
-- (its webhook failed for WEBHOOK_RETRY_FOR), kept a week for inspection.
CREATE TABLE webhook_batches (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id bigint      NOT NULL,
    send_id    bigint,
    kind       smallint,
    runs       bigint[],
    events     json,
    n          integer     NOT NULL,
    state      smallint    NOT NULL DEFAULT 0,
    attempts   integer     NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    failed_at  timestamptz
);
CREATE INDEX webhook_batches_pending ON webhook_batches (webhook_id, id) WHERE state = 0;

-- Every POST to a webhook, the last 100 of each kept: when, the answer's
-- status (NULL: none came), how long, why it failed, how many events it
-- carried and what became of them (1 delivered, 2 to be retried, 3 some
-- given up).
CREATE TABLE webhook_attempts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id   bigint      NOT NULL,
    attempted_at timestamptz NOT NULL DEFAULT now(),
    status_code  integer,
    latency_ms   integer     NOT NULL,
    error        text        NOT NULL DEFAULT '',
    events       integer     NOT NULL,
    result       smallint    NOT NULL
);
CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, id);

-- +goose Down
DROP TABLE webhook_attempts, webhook_batches, webhooks;
