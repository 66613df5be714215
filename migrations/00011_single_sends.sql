-- +goose Up

-- Single sends: one-off campaigns. recipient_id and
-- exclude_specific_recipient_id hold the lists as the API shows them
-- ([{"id":"3","table":"contacts_"}]). status: 0 draft (a duplicate), 1
-- ready (waiting for due_at), 2 running, 3 completed. version grows with
-- every update: dispatch tasks carry it, so a stale one does nothing.
-- due_at is when a ready send goes out (created_at for immediate sends,
-- the schedule in UTC otherwise). The counters are kept by the engine,
-- once per batch. first_delivery_id/batch_size fix the send's batch
-- ranges at dispatch: batch k holds ids [first + k*size, first + (k+1)*size).
CREATE TABLE single_sends (
    id                            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id                       bigint      NOT NULL REFERENCES accounts (id),
    utr                           uuid        NOT NULL UNIQUE,
    template_id                   bigint      NOT NULL,
    template_json                 text,
    template_html                 text,
    sender_id                     bigint      NOT NULL,
    unsubscribe_group_id          bigint      NOT NULL,
    single_send_name              text        NOT NULL,
    subject                       text        NOT NULL,
    preheader                     text        NOT NULL,
    recipient_id                  jsonb       NOT NULL DEFAULT '[]',
    exclude_specific_recipient_id jsonb       NOT NULL DEFAULT '[]',
    schedule_type                 smallint    NOT NULL DEFAULT 0 CHECK (schedule_type IN (0, 1)),
    schedule_date                 date,
    schedule_time                 time,
    status                        smallint    NOT NULL DEFAULT 1 CHECK (status BETWEEN 0 AND 3),
    version                       integer     NOT NULL DEFAULT 1,
    due_at                        timestamptz,
    triggered                     bigint      NOT NULL DEFAULT 0,
    delivered                     bigint      NOT NULL DEFAULT 0,
    unique_opens                  bigint      NOT NULL DEFAULT 0,
    total_opens                   bigint      NOT NULL DEFAULT 0,
    bounces                       bigint      NOT NULL DEFAULT 0,
    unsubscribes                  bigint      NOT NULL DEFAULT 0,
    unique_open_token             jsonb       NOT NULL DEFAULT '{}',
    first_delivery_id             bigint,
    batch_size                    integer,
    started_at                    timestamptz,
    sent_at                       timestamptz,
    deleted_at                    timestamptz,
    created_at                    timestamptz NOT NULL DEFAULT now(),
    updated_at                    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX single_sends_user ON single_sends (user_id, id) WHERE deleted_at IS NULL;
-- The sweeper's two questions: ready sends that are due, running sends.
CREATE INDEX single_sends_due ON single_sends (due_at) WHERE status = 1 AND deleted_at IS NULL;
CREATE INDEX single_sends_running ON single_sends (id) WHERE status = 2;

-- Deliveries: one row per recipient of a send, the truth the engine works
-- from (a lost Redis queue is rebuilt from it). Partitioned by range of
-- send id (docs/deliveries.md): a send's rows live in one partition, every
-- engine query names the send so it touches one partition, and retention
-- drops whole partitions of old sends. Partitions are made by the
-- dispatcher as send ids reach them (deliveries_p{n}: sends
-- [n*10000, (n+1)*10000)). No foreign keys (bulk work).
-- status: 0 pending, 1 sending (leased until lease_until), 2 sent
-- (accepted by the SMTP server), 3 bounced (5xx), 4 failed (temporary
-- failures until attempts ran out). list_key is the recipient list it came
-- from (contacts_3, segments_7), for the open token of that list.
CREATE TABLE deliveries (
    id                   bigint GENERATED ALWAYS AS IDENTITY,
    send_id              bigint      NOT NULL,
    user_id              bigint      NOT NULL,
    contact_id           bigint,
    segment_recipient_id bigint,
    email                text        NOT NULL,
    list_key             text        NOT NULL,
    status               smallint    NOT NULL DEFAULT 0,
    attempts             smallint    NOT NULL DEFAULT 0,
    next_at              timestamptz,
    lease_until          timestamptz,
    sent_at              timestamptz,
    opened_at            timestamptz,
    opens                integer     NOT NULL DEFAULT 0,
    error                text,
    PRIMARY KEY (send_id, id)
) PARTITION BY RANGE (send_id);
-- What is left of a send: pending or leased rows, by id (batch ranges).
CREATE INDEX deliveries_open ON deliveries (send_id, id) WHERE status IN (0, 1);

-- Hard bounces: an address a 5xx refused, suppressed for the account's
-- later sends.
CREATE TABLE bounces (
    user_id    bigint      NOT NULL,
    email_lc   text        NOT NULL,
    send_id    bigint,
    reason     text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, email_lc)
);

-- +goose Down
DROP TABLE bounces, deliveries, single_sends;
