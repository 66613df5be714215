-- +goose Up

-- Statistics of single sends and automations by hour (docs/statistics.md).
-- scope 's' is a single send (scope_id its id), 'a' an automation (its
-- runs' mails count for it). Kept by the transactions that record what
-- happened (a batch's outcomes, expansion, the open and click recorder,
-- unsubscribes, bounce and complaint intake), never counted over the
-- deliveries per request. A send's totals are the sums of its hours.
CREATE TABLE send_stats (
    scope         "char"      NOT NULL CHECK (scope IN ('s', 'a')),
    scope_id      bigint      NOT NULL,
    hour          timestamptz NOT NULL,
    triggered     bigint      NOT NULL DEFAULT 0,
    delivered     bigint      NOT NULL DEFAULT 0,
    deferred      bigint      NOT NULL DEFAULT 0,
    bounces       bigint      NOT NULL DEFAULT 0,
    soft_bounces  bigint      NOT NULL DEFAULT 0,
    unique_opens  bigint      NOT NULL DEFAULT 0,
    total_opens   bigint      NOT NULL DEFAULT 0,
    unique_clicks bigint      NOT NULL DEFAULT 0,
    total_clicks  bigint      NOT NULL DEFAULT 0,
    unsubscribes  bigint      NOT NULL DEFAULT 0,
    complaints    bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, scope_id, hour)
);

-- What sends and automations counted before this table: one hour each, at
-- their start.
INSERT INTO send_stats (scope, scope_id, hour, triggered, delivered, bounces, unique_opens, total_opens, unsubscribes)
SELECT 's', id, date_trunc('hour', COALESCE(started_at, created_at)), triggered, delivered, bounces, unique_opens, total_opens, unsubscribes
FROM single_sends
WHERE automation_id IS NULL AND (triggered > 0 OR delivered > 0 OR bounces > 0 OR total_opens > 0 OR unsubscribes > 0);
INSERT INTO send_stats (scope, scope_id, hour, triggered, delivered, bounces, unique_opens, total_opens, unsubscribes)
SELECT 'a', id, date_trunc('hour', COALESCE(live_at, created_at)), total_triggered, total_delivered, total_bounces, total_unique_opens, total_opens, total_unsubscribe
FROM automations
WHERE total_triggered > 0 OR total_delivered > 0 OR total_bounces > 0 OR total_opens > 0 OR total_unsubscribe > 0;

-- The links of a send's mails, numbered as its click tokens name them:
-- fixed the first time the send's template is compiled, a link added
-- later (an automation's edited step) numbered after them.
CREATE TABLE send_links (
    send_id bigint  NOT NULL,
    idx     integer NOT NULL,
    url     text    NOT NULL,
    PRIMARY KEY (send_id, idx)
);
CREATE UNIQUE INDEX send_links_url ON send_links (send_id, md5(url));

-- Clicks by link of a send or automation (scope as in send_stats).
CREATE TABLE link_stats (
    scope         "char" NOT NULL,
    scope_id      bigint NOT NULL,
    url           text   NOT NULL,
    unique_clicks bigint NOT NULL DEFAULT 0,
    total_clicks  bigint NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX link_stats_url ON link_stats (scope, scope_id, md5(url));

-- Who clicked what: a row per delivery and link clicked, for the unique
-- counts (a delivery's first click, a link's first click by it).
CREATE TABLE delivery_clicks (
    send_id     bigint      NOT NULL,
    delivery_id bigint      NOT NULL,
    idx         integer     NOT NULL,
    clicks      integer     NOT NULL,
    first_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (send_id, delivery_id, idx)
);

-- +goose Down
DROP TABLE delivery_clicks, link_stats, send_links, send_stats;
