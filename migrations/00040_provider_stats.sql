-- +goose Up

-- Outcomes by receiving provider (docs/deliverability.md): per send and
-- hour, the mails each big mailbox provider (mail.Provider: 0 others,
-- 1 Gmail, 2 Microsoft, 3 Yahoo, 4 Apple) accepted, put off, hard-bounced
-- or refused for good, and the complaints from its users. Written with
-- each record of outcomes (the rows it changed) and each reported bounce
-- or complaint; read per send and per account over a period.
CREATE TABLE provider_stats (
    send_id    bigint      NOT NULL,
    provider   smallint    NOT NULL,
    hour       timestamptz NOT NULL,
    user_id    bigint      NOT NULL,
    delivered  bigint      NOT NULL DEFAULT 0,
    deferred   bigint      NOT NULL DEFAULT 0,
    bounced    bigint      NOT NULL DEFAULT 0,
    blocked    bigint      NOT NULL DEFAULT 0,
    complained bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (send_id, provider, hour)
);
CREATE INDEX provider_stats_user ON provider_stats (user_id, hour);

-- +goose Down
DROP TABLE provider_stats;
