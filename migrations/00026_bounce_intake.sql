-- +goose Up

-- Bounce and complaint intake (docs/bounces.md).

-- A delivery's asynchronous hard bounce and complaint are marked on its
-- row, so each counts once however often its report arrives. Nullable
-- columns without a default: no partition is rewritten.
ALTER TABLE deliveries ADD COLUMN bounced_at timestamptz, ADD COLUMN complained_at timestamptz;

-- Why mailroom itself put an address on a list: 'complaint' (a feedback
-- report); NULL for an unsubscribe (the API, a link, the mailto).
ALTER TABLE unsubscribes ADD COLUMN reason text;

-- Inbound mail the listener took but could not act on (not a report it
-- reads, no delivery it knows, a mailto without a valid token, a parser
-- failure), kept for inspection: the envelope, why, the delivery when one
-- was found, the size received and the first 64 KiB. Rows older than 30
-- days are deleted by the listener.
CREATE TABLE inbound_messages (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    received_at timestamptz NOT NULL DEFAULT now(),
    mail_from   text        NOT NULL,
    rcpt        text        NOT NULL,
    reason      text        NOT NULL,
    send_id     bigint,
    delivery_id bigint,
    size        integer     NOT NULL,
    raw         bytea       NOT NULL
);
CREATE INDEX inbound_messages_received ON inbound_messages (received_at);

-- +goose Down
DROP TABLE inbound_messages;
ALTER TABLE unsubscribes DROP COLUMN reason;
ALTER TABLE deliveries DROP COLUMN complained_at, DROP COLUMN bounced_at;
