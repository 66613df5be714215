-- name: BumpStats :exec
-- Adds to the statistics of the hour at, for each send: its own (a single
-- send) or its automation's (a run). The rows are taken in key order, so
-- two writers wait rather than deadlock.
-- (The arrays are read by position: sqlc knows only one-array unnest.)
INSERT INTO send_stats AS st (scope, scope_id, hour, triggered, delivered, deferred, bounces, soft_bounces,
                              unique_opens, total_opens, unique_clicks, total_clicks, unsubscribes, complaints)
SELECT CASE WHEN s.automation_id IS NULL THEN 's' ELSE 'a' END::"char", COALESCE(s.automation_id, s.id),
       date_trunc('hour', @at::timestamptz),
       sum((@triggered::bigint[])[c.i]), sum((@delivered::bigint[])[c.i]), sum((@deferred::bigint[])[c.i]),
       sum((@bounces::bigint[])[c.i]), sum((@soft_bounces::bigint[])[c.i]),
       sum((@unique_opens::bigint[])[c.i]), sum((@total_opens::bigint[])[c.i]),
       sum((@unique_clicks::bigint[])[c.i]), sum((@total_clicks::bigint[])[c.i]),
       sum((@unsubscribes::bigint[])[c.i]), sum((@complaints::bigint[])[c.i])
FROM unnest(@send_ids::bigint[]) WITH ORDINALITY AS c(send_id, i)
JOIN single_sends s ON s.id = c.send_id
GROUP BY 1, 2
ORDER BY 1, 2
ON CONFLICT (scope, scope_id, hour) DO UPDATE SET
    triggered = st.triggered + EXCLUDED.triggered,
    delivered = st.delivered + EXCLUDED.delivered,
    deferred = st.deferred + EXCLUDED.deferred,
    bounces = st.bounces + EXCLUDED.bounces,
    soft_bounces = st.soft_bounces + EXCLUDED.soft_bounces,
    unique_opens = st.unique_opens + EXCLUDED.unique_opens,
    total_opens = st.total_opens + EXCLUDED.total_opens,
    unique_clicks = st.unique_clicks + EXCLUDED.unique_clicks,
    total_clicks = st.total_clicks + EXCLUDED.total_clicks,
    unsubscribes = st.unsubscribes + EXCLUDED.unsubscribes,
    complaints = st.complaints + EXCLUDED.complaints;

-- name: StatsTimeline :many
-- A send's or automation's statistics hour by hour, oldest first.
SELECT hour, triggered, delivered, deferred, bounces, soft_bounces, unique_opens, total_opens,
       unique_clicks, total_clicks, unsubscribes, complaints
FROM send_stats
WHERE scope = CAST(@scope::text AS "char") AND scope_id = @scope_id
ORDER BY hour;

-- name: LinkStats :many
-- A send's or automation's clicks by link, most clicked first.
SELECT url, unique_clicks, total_clicks
FROM link_stats
WHERE scope = CAST(@scope::text AS "char") AND scope_id = @scope_id
ORDER BY total_clicks DESC, url;

-- name: SendLinks :many
-- A send's link table, by number.
SELECT idx, url FROM send_links WHERE send_id = @send_id ORDER BY idx;

-- name: LockSendLinks :exec
-- One numbering of a send's links at a time (the statements after it see
-- what the one before committed).
SELECT pg_advisory_xact_lock(1936026732, mod(@send_id::bigint, 2147483647)::int);

-- name: AddSendLinks :exec
-- Numbers the links of a send not numbered yet, after the ones that are,
-- in the order given (under LockSendLinks).
WITH p AS (SELECT @send_id::bigint AS send_id),
     base AS (SELECT COALESCE((SELECT max(l.idx) FROM send_links l WHERE l.send_id = p.send_id), -1) AS top FROM p),
     fresh AS (
         SELECT DISTINCT ON (md5(u.url)) u.url, u.i FROM p, unnest(@urls::text[]) WITH ORDINALITY AS u(url, i)
         WHERE NOT EXISTS (SELECT 1 FROM send_links l WHERE l.send_id = p.send_id AND md5(l.url) = md5(u.url))
         ORDER BY md5(u.url), u.i
     )
INSERT INTO send_links (send_id, idx, url)
SELECT p.send_id, base.top + row_number() OVER (ORDER BY fresh.i), fresh.url
FROM p, fresh, base;

-- name: RecordOpens :many
-- A flush of the open recorder: each (send, delivery, list token) with its
-- opens. Only a delivery whose send gave its list that token counts (a
-- pending row too: a signed pixel proves the mail arrived, and proxies
-- fetch it before its batch is recorded). Answers, per delivery counted,
-- its send, its id, the opens and whether they were its first.
WITH o AS (
    SELECT t.send_id, (@ids::bigint[])[t.i] AS id, (@list_tokens::text[])[t.i] AS list_token, count(*)::int AS n
    FROM unnest(@send_ids::bigint[]) WITH ORDINALITY AS t(send_id, i)
    GROUP BY 1, 2, 3
    ORDER BY 1, 2
)
UPDATE deliveries dl
SET opens = dl.opens + o.n, opened_at = COALESCE(dl.opened_at, now())
FROM o, single_sends s
WHERE dl.send_id = o.send_id AND dl.id = o.id AND dl.status IN (0, 2)
  AND s.id = o.send_id AND s.unique_open_token ->> dl.list_key = o.list_token
RETURNING dl.send_id, dl.id AS delivery_id, o.n::bigint AS opens, (dl.opens = o.n) AS first;

-- name: BumpOpens :exec
-- The sends' and automations' open counters shown by their details.
WITH c AS (
    SELECT c.send_id, (@totals::bigint[])[c.i] AS total, (@uniques::bigint[])[c.i] AS uniq
    FROM unnest(@send_ids::bigint[]) WITH ORDINALITY AS c(send_id, i)
), s AS (
    UPDATE single_sends ss SET total_opens = ss.total_opens + c.total, unique_opens = ss.unique_opens + c.uniq
    FROM c WHERE ss.id = c.send_id
    RETURNING ss.automation_id, c.total, c.uniq
)
UPDATE automations a
SET total_opens = a.total_opens + x.total, total_unique_opens = a.total_unique_opens + x.uniq
FROM (SELECT s.automation_id, sum(s.total)::bigint AS total, sum(s.uniq)::bigint AS uniq
      FROM s WHERE s.automation_id IS NOT NULL GROUP BY 1) x
WHERE a.id = x.automation_id;

-- name: RecordClicks :many
-- A flush of the click recorder: each (send, delivery, link number) with
-- its clicks, for deliveries and links that exist. Answers, per row
-- counted: the link's address and whether it is the delivery's first
-- click of that link. The caller knows each row's clicks: what it sent.
-- Nothing joins the inserted rows back to the input: a CTE joined to a
-- CTE is planned as a nested loop of rows x rows.
WITH c AS (
    SELECT t.send_id, (@ids::bigint[])[t.i] AS id, (@idxs::int[])[t.i] AS idx, count(*)::int AS n
    FROM unnest(@send_ids::bigint[]) WITH ORDINALITY AS t(send_id, i)
    GROUP BY 1, 2, 3
)
INSERT INTO delivery_clicks AS dc (send_id, delivery_id, idx, clicks)
SELECT c.send_id, c.id, c.idx, c.n
FROM c
JOIN send_links l ON l.send_id = c.send_id AND l.idx = c.idx
JOIN deliveries dl ON dl.send_id = c.send_id AND dl.id = c.id AND dl.status IN (0, 2)
ORDER BY 1, 2, 3
ON CONFLICT (send_id, delivery_id, idx) DO UPDATE SET clicks = dc.clicks + EXCLUDED.clicks
RETURNING dc.send_id, dc.delivery_id, dc.idx, (xmax = 0) AS first_of_link,
    (SELECT l.url FROM send_links l WHERE l.send_id = dc.send_id AND l.idx = dc.idx)::text AS url;

-- name: MarkClickers :many
-- The deliveries of a flush's counted clicks that had clicked nothing
-- before: their first click is marked. A concurrent flush of the same
-- mail waits for this one's row lock and then finds the mark, so each
-- mail is one unique clicker however many processes record its clicks.
UPDATE deliveries d SET clicked_at = now()
FROM (SELECT DISTINCT t.send_id, (@ids::bigint[])[t.i] AS id
      FROM unnest(@send_ids::bigint[]) WITH ORDINALITY AS t(send_id, i)) k
WHERE d.send_id = k.send_id AND d.id = k.id AND d.clicked_at IS NULL
RETURNING d.send_id, d.id;

-- name: BumpLinkStats :exec
-- Adds clicks to the links of sends (each counting for its scope).
INSERT INTO link_stats AS ls (scope, scope_id, url, unique_clicks, total_clicks)
SELECT CASE WHEN s.automation_id IS NULL THEN 's' ELSE 'a' END::"char", COALESCE(s.automation_id, s.id), c.url,
       sum((@uniques::bigint[])[c.i]), sum((@totals::bigint[])[c.i])
FROM unnest(@urls::text[]) WITH ORDINALITY AS c(url, i)
JOIN single_sends s ON s.id = (@send_ids::bigint[])[c.i]
GROUP BY 1, 2, 3
ORDER BY 1, 2, md5(c.url)
ON CONFLICT (scope, scope_id, md5(url)) DO UPDATE SET
    unique_clicks = ls.unique_clicks + EXCLUDED.unique_clicks,
    total_clicks = ls.total_clicks + EXCLUDED.total_clicks;

-- name: SendProviderStats :many
-- A single send's outcomes by receiving provider; one row of provider -1
-- when it has none yet, no row when the account has no such
-- send.
SELECT COALESCE(p.provider, -1)::smallint AS provider, COALESCE(sum(p.delivered), 0)::bigint AS delivered,
    COALESCE(sum(p.deferred), 0)::bigint AS deferred, COALESCE(sum(p.bounced), 0)::bigint AS bounced,
    COALESCE(sum(p.blocked), 0)::bigint AS blocked, COALESCE(sum(p.complained), 0)::bigint AS complained
FROM single_sends s
LEFT JOIN provider_stats p ON p.send_id = s.id
WHERE s.utr = (@utr::text)::uuid AND s.user_id = @user_id::bigint AND s.deleted_at IS NULL AND s.automation_id IS NULL
GROUP BY p.provider;

-- name: AccountProviderStats :many
-- An account's outcomes by receiving provider in the hours from @since
-- up to @until, every send and automation run.
SELECT provider, sum(delivered)::bigint AS delivered, sum(deferred)::bigint AS deferred, sum(bounced)::bigint AS bounced,
    sum(blocked)::bigint AS blocked, sum(complained)::bigint AS complained
FROM provider_stats
WHERE user_id = @user_id::bigint AND hour >= @since::timestamptz AND hour < @until::timestamptz
GROUP BY provider;
