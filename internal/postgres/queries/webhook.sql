-- name: ListWebhooks :many
-- The account's webhooks by id (never their secrets).
SELECT id, user_id, url, events, created_at, updated_at
FROM webhooks
WHERE user_id = @user_id AND deleted_at IS NULL
ORDER BY id;

-- name: CountWebhooks :one
-- How many webhooks the account has; locks the account's row so that two
-- saves at once cannot both pass the limit.
SELECT (SELECT count(*) FROM webhooks w WHERE w.user_id = a.id AND w.deleted_at IS NULL)::bigint
FROM accounts a WHERE a.id = @user_id
FOR UPDATE;

-- name: CreateWebhook :one
INSERT INTO webhooks (user_id, url, events, secret)
VALUES (@user_id, @url, @events, @secret)
RETURNING id;

-- name: UpdateWebhook :execrows
UPDATE webhooks SET url = @url, events = @events, updated_at = now()
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: DeleteWebhook :execrows
UPDATE webhooks SET deleted_at = now(), updated_at = now()
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: DropWebhookBatches :exec
-- A deleted webhook's events waiting to be posted go with it.
DELETE FROM webhook_batches WHERE webhook_id = @webhook_id;

-- name: WebhookExists :one
SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL)::bool;

-- name: WebhookKindsOfAccount :one
-- The kinds any live webhook of the account wants (0: it has none).
SELECT COALESCE(bit_or(events), 0)::int FROM webhooks WHERE user_id = @user_id AND deleted_at IS NULL;

-- name: EmitWebhookBatch :execrows
-- One outbox row per live webhook of the account that wants any of
-- kinds_wanted: deliveries of a send named by id runs (all of kind), and
-- events carried whole (JSON), n in all. Each webhook takes the kinds it
-- wants when the row is posted.
INSERT INTO webhook_batches (webhook_id, send_id, kind, runs, events, n)
SELECT w.id, sqlc.narg(send_id)::bigint, sqlc.narg(kind)::smallint, sqlc.narg(runs)::bigint[],
       sqlc.narg(events)::json, @n::int
FROM webhooks w
WHERE w.user_id = @user_id AND w.deleted_at IS NULL AND w.events & @kinds_wanted::int <> 0
ORDER BY w.id;

-- name: SendAccounts :many
-- The account of each of these sends.
SELECT id, user_id FROM single_sends WHERE id = ANY(@ids::bigint[]);

-- name: SuppressedAudience :many
-- The addresses of a send's audience that its expansion left out because
-- they are suppressed (a global unsubscribe or the send's group, a hard
-- bounce): the same lists as ExpandSend, one per lower-cased address,
-- those of the exclude lists left out (the account excluded them, nothing
-- dropped them). For the dropped events of webhooks that want them.
SELECT x.email::text AS email,
       (CASE WHEN EXISTS (SELECT 1 FROM bounces b WHERE b.user_id = @user_id AND b.email_lc = x.email_lc)
             THEN 'Bounced Address' ELSE 'Unsubscribed Address' END)::text AS reason
FROM (
    SELECT DISTINCT ON (y.email_lc) y.email, y.email_lc
    FROM (
        SELECT c.email, c.email_lc
        FROM contacts c
        WHERE c.user_id = @user_id AND c.contact_type_id = ANY(@type_ids::bigint[]) AND c.deleted_at IS NULL
        UNION ALL
        SELECT COALESCE(c.email, sr.email), lower(COALESCE(c.email, sr.email))
        FROM segment_entries sr
        LEFT JOIN contacts c ON c.id = sr.contact_id AND c.deleted_at IS NULL
        WHERE sr.user_id = @user_id AND sr.segment_id = ANY(@segment_ids::bigint[])
          AND (sr.contact_id IS NULL OR c.id IS NOT NULL) AND COALESCE(c.email, sr.email) IS NOT NULL
    ) y
    ORDER BY y.email_lc, y.email
) x
WHERE (EXISTS (SELECT 1 FROM unsubscribes u
               WHERE u.user_id = @user_id AND u.email_lc = x.email_lc
                 AND COALESCE(u.unsubscribe_groups_id, 0) IN (0, @group_id::bigint))
       OR EXISTS (SELECT 1 FROM bounces b WHERE b.user_id = @user_id AND b.email_lc = x.email_lc))
  AND NOT EXISTS (SELECT 1 FROM contacts e
                  WHERE e.contact_type_id = ANY(@exclude_type_ids::bigint[]) AND e.user_id = @user_id
                    AND e.email_lc = x.email_lc AND e.deleted_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM segment_entries es
                  LEFT JOIN contacts ec ON ec.id = es.contact_id AND ec.deleted_at IS NULL
                  WHERE es.segment_id = ANY(@exclude_segment_ids::bigint[]) AND es.user_id = @user_id
                    AND lower(COALESCE(ec.email, es.email)) = x.email_lc)
ORDER BY x.email_lc;

-- name: SuppressionsUpTo :one
-- How many suppressions could drop an address of a send (the account's
-- global and the group's unsubscribes, its hard bounces), counted no
-- further than n of each kind: which way round SuppressedAudience's work
-- is cheaper.
SELECT ((SELECT count(*) FROM (SELECT 1 FROM unsubscribes u
                                WHERE u.user_id = @user_id AND COALESCE(u.unsubscribe_groups_id, 0) IN (0, @group_id::bigint)
                                LIMIT @n::bigint) a)
      + (SELECT count(*) FROM (SELECT 1 FROM bounces b WHERE b.user_id = @user_id LIMIT @n::bigint) b))::bigint AS n;

-- name: SuppressedMembers :many
-- SuppressedAudience worked from the suppressions: each suppressed address
-- that is in the send's lists (a live contact of the target types, a live
-- contact member of the target segments, a member stored by hand), with
-- the lists' spelling SuppressedAudience gives, unless the exclude lists
-- hold it. Index probes per suppression, for an account with fewer
-- suppressions than the send has recipients.
WITH s AS (
    SELECT u.email_lc FROM unsubscribes u
    WHERE u.user_id = @user_id AND COALESCE(u.unsubscribe_groups_id, 0) IN (0, @group_id::bigint)
    UNION
    SELECT b.email_lc FROM bounces b WHERE b.user_id = @user_id
)
SELECT m.email::text AS email,
       (CASE WHEN EXISTS (SELECT 1 FROM bounces b WHERE b.user_id = @user_id AND b.email_lc = s.email_lc)
             THEN 'Bounced Address' ELSE 'Unsubscribed Address' END)::text AS reason
FROM s
CROSS JOIN LATERAL (
    SELECT min(y.email) AS email
    FROM (
        SELECT c.email FROM contacts c
        WHERE c.contact_type_id = ANY(@type_ids::bigint[]) AND c.email_lc = s.email_lc AND c.user_id = @user_id AND c.deleted_at IS NULL
        UNION ALL
        SELECT c.email FROM contacts c
        JOIN segment_members sr ON sr.segment_id = ANY(@segment_ids::bigint[]) AND sr.contact_id = c.id
        WHERE c.contact_type_id IN (SELECT t.id FROM contact_types t WHERE t.user_id = @user_id)
          AND c.email_lc = s.email_lc AND c.user_id = @user_id AND c.deleted_at IS NULL
        UNION ALL
        SELECT sr.email FROM segment_recipients sr
        WHERE sr.segment_id = ANY(@segment_ids::bigint[]) AND sr.email_lc = s.email_lc
          AND sr.user_id = @user_id AND sr.email IS NOT NULL
    ) y
) m
WHERE m.email IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM contacts e
                  WHERE e.contact_type_id = ANY(@exclude_type_ids::bigint[]) AND e.user_id = @user_id
                    AND e.email_lc = s.email_lc AND e.deleted_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM segment_entries es
                  LEFT JOIN contacts ec ON ec.id = es.contact_id AND ec.deleted_at IS NULL
                  WHERE es.segment_id = ANY(@exclude_segment_ids::bigint[]) AND es.user_id = @user_id
                    AND lower(COALESCE(ec.email, es.email)) = s.email_lc)
ORDER BY s.email_lc;

-- name: WebhooksWithPending :many
-- The webhooks with events waiting, found by skipping through the
-- pending index (one probe per webhook, however many rows wait).
WITH RECURSIVE w AS (
    (SELECT b.webhook_id FROM webhook_batches b WHERE b.state = 0 ORDER BY b.webhook_id LIMIT 1)
    UNION ALL
    SELECT (SELECT b.webhook_id FROM webhook_batches b WHERE b.state = 0 AND b.webhook_id > w.webhook_id
            ORDER BY b.webhook_id LIMIT 1)
    FROM w WHERE w.webhook_id IS NOT NULL
)
SELECT w.webhook_id::bigint AS webhook_id FROM w WHERE w.webhook_id IS NOT NULL LIMIT @n::int;

-- name: WebhookForDelivery :one
-- What posting to a live webhook needs.
SELECT id, user_id, url, events, secret FROM webhooks WHERE id = @id AND deleted_at IS NULL;

-- name: PendingWebhookBatches :many
-- A webhook's waiting rows, oldest first, until they hold max_events
-- events (at least one row).
SELECT b.id, b.send_id, b.kind, b.runs, COALESCE(b.events::text, '')::text AS events, b.n, b.created_at
FROM (
    SELECT f.id, sum(f.n) OVER (ORDER BY f.id) - f.n AS before
    FROM (SELECT p.id, p.n FROM webhook_batches p
          WHERE p.webhook_id = @webhook_id AND p.state = 0
          ORDER BY p.id
          LIMIT 1000) f
) o
JOIN webhook_batches b ON b.id = o.id
WHERE o.before < @max_events::bigint
ORDER BY b.id;

-- name: HookDeliveries :many
-- The addresses of a send's deliveries from lo to hi, by id: an outbox row
-- names runs of one batch range, and a walk of the range costs the
-- database a fifth of a lookup per id (the caller keeps the ids its runs
-- name). Their time is the row's: a batch's record sets sent_at to the
-- now() of the transaction that writes the row.
SELECT d.id, d.email
FROM deliveries d
WHERE d.send_id = @send_id AND d.id BETWEEN @lo::bigint AND @hi::bigint
ORDER BY d.id;

-- name: HookDeliveryEmails :many
-- The addresses of deliveries named by (send, id).
-- (The arrays are read by position: sqlc knows only one-array unnest.)
SELECT d.id, d.email
FROM unnest(@send_ids::bigint[]) WITH ORDINALITY AS k(send_id, i)
JOIN deliveries d ON d.send_id = k.send_id AND d.id = (@ids::bigint[])[k.i];

-- name: HookSendUTRs :many
-- The utr each send's events name: its automation's for an automation's
-- run, else its own.
SELECT s.id, s.utr::text AS utr, (a.utr IS NOT NULL)::bool AS automation
FROM single_sends s
LEFT JOIN automations a ON a.id = s.automation_id
WHERE s.id = ANY(@ids::bigint[]);

-- name: WebhookPosted :exec
-- The rows a successful POST carried are done.
DELETE FROM webhook_batches WHERE id = ANY(@ids::bigint[]) AND state = 0;

-- name: WebhookFailed :many
-- A failed POST: its rows count the attempt; those older than give_up_before
-- are given up. Answers the rows given up and their events.
UPDATE webhook_batches
SET attempts = attempts + 1,
    state = CASE WHEN created_at < @give_up_before::timestamptz THEN 2 ELSE 0 END,
    failed_at = CASE WHEN created_at < @give_up_before::timestamptz THEN now() END
WHERE id = ANY(@ids::bigint[]) AND state = 0
RETURNING id, n, state;

-- name: GiveUpWebhookBatches :many
-- After a failed POST, the webhook's other rows older than give_up_before
-- are given up too (a POST carries only the oldest few thousand events: a
-- dead endpoint would otherwise keep a day's later rows for ever).
UPDATE webhook_batches
SET state = 2, failed_at = now()
WHERE webhook_id = @webhook_id AND state = 0 AND created_at < @give_up_before::timestamptz
RETURNING id, n;

-- name: RecordWebhookAttempt :exec
-- Logs an attempt and keeps the webhook's last 100 (the DELETE does not
-- see the new row: it keeps 99 older ones).
WITH a AS (
    INSERT INTO webhook_attempts (webhook_id, status_code, latency_ms, error, events, result)
    VALUES (@webhook_id, sqlc.narg(status_code), @latency_ms, @error, @events, @result)
    RETURNING id
)
DELETE FROM webhook_attempts d
WHERE d.webhook_id = @webhook_id
  AND d.id <= (SELECT o.id FROM webhook_attempts o WHERE o.webhook_id = @webhook_id ORDER BY o.id DESC OFFSET 99 LIMIT 1);

-- name: WebhookAttempts :many
-- A webhook's attempts, newest first.
SELECT t.id, t.attempted_at, t.status_code, t.latency_ms, t.error, t.events, t.result
FROM webhook_attempts t
JOIN webhooks w ON w.id = t.webhook_id
WHERE t.webhook_id = @webhook_id AND w.user_id = @user_id AND w.deleted_at IS NULL
ORDER BY t.id DESC
LIMIT 100;

-- name: DropGivenUpWebhookBatches :execrows
-- Given-up rows are kept a week.
DELETE FROM webhook_batches WHERE state = 2 AND failed_at < now() - interval '7 days';

-- name: WebhooksExist :one
-- Whether any account has a live webhook.
SELECT EXISTS (SELECT 1 FROM webhooks WHERE deleted_at IS NULL)::bool;

-- name: EmitSendWebhookBatch :execrows
-- EmitWebhookBatch for deliveries of one send named by id runs, its
-- account read from the send.
INSERT INTO webhook_batches (webhook_id, send_id, kind, runs, n)
SELECT w.id, @send_id::bigint, @kind::smallint, @runs::bigint[], @n::int
FROM webhooks w
WHERE w.user_id = (SELECT s.user_id FROM single_sends s WHERE s.id = @send_id::bigint)
  AND w.deleted_at IS NULL AND w.events & @kind::int <> 0
ORDER BY w.id;
