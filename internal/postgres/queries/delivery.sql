-- name: LockSendForDispatch :one
-- The send a dispatch task names, locked: the task acts only when it is
-- still ready, of that version, and due.
SELECT id, user_id, status, version, due_at, (due_at IS NOT NULL AND due_at > now())::bool AS not_due, unsubscribe_group_id,
    recipient_id::text AS recipient_id, exclude_specific_recipient_id::text AS exclude_specific_recipient_id
FROM single_sends
WHERE id = @id AND deleted_at IS NULL
FOR UPDATE;

-- name: ExpandSend :execrows
-- The send's recipients, set-based: its audience (send_audience,
-- migrations/00034_send_audience.sql: the lists, one row per lower-cased
-- address, minus excludes and suppressions). Rows go in by address, so a
-- batch's id range is a stretch of the alphabet.
INSERT INTO deliveries (send_id, user_id, contact_id, segment_recipient_id, email, list_key)
SELECT @send_id::bigint, @user_id::bigint, a.contact_id, a.segment_recipient_id, a.email, a.list_key
FROM send_audience(@user_id::bigint, @type_ids::bigint[], @segment_ids::bigint[], @group_id::bigint,
    @exclude_type_ids::bigint[], @exclude_segment_ids::bigint[]) a
ORDER BY a.email_lc;

-- name: ExpandSendUpTo :execrows
-- ExpandSend for the addresses up to @until (a large send's first step):
-- the bound goes down into each list's index, so the step reads about the
-- rows it inserts.
INSERT INTO deliveries (send_id, user_id, contact_id, segment_recipient_id, email, list_key)
SELECT @send_id::bigint, @user_id::bigint, a.contact_id, a.segment_recipient_id, a.email, a.list_key
FROM send_audience(@user_id::bigint, @type_ids::bigint[], @segment_ids::bigint[], @group_id::bigint,
    @exclude_type_ids::bigint[], @exclude_segment_ids::bigint[]) a
WHERE a.email_lc <= @until::text
ORDER BY a.email_lc;

-- name: ExpandSendRest :one
-- ExpandSend for the rest of a large send: its audience now, less what the
-- first step inserted, by contact and by address (read again seconds
-- later, a contact whose address changed meanwhile is neither mailed twice
-- nor left out): how many went in, and the first of their ids.
WITH ins AS (
    INSERT INTO deliveries (send_id, user_id, contact_id, segment_recipient_id, email, list_key)
    SELECT @send_id::bigint, @user_id::bigint, a.contact_id, a.segment_recipient_id, a.email, a.list_key
    FROM send_audience(@user_id::bigint, @type_ids::bigint[], @segment_ids::bigint[], @group_id::bigint,
        @exclude_type_ids::bigint[], @exclude_segment_ids::bigint[]) a
    WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.send_id = @send_id::bigint AND lower(d.email) = a.email_lc)
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.send_id = @send_id::bigint AND d.contact_id = a.contact_id)
    ORDER BY a.email_lc
    RETURNING id
)
SELECT count(*)::bigint AS n, COALESCE(min(id), 0)::bigint AS first_id FROM ins;

-- name: ExpandBoundary :many
-- The address @n places into a contact type's live contacts (index only):
-- a large send's first step ends there. None when the type is shorter.
SELECT c.email_lc::text FROM contacts c
WHERE c.contact_type_id = @type_id::bigint AND c.deleted_at IS NULL
ORDER BY c.email_lc
OFFSET @n::bigint LIMIT 1;

-- name: SetExpandAfter :exec
UPDATE single_sends SET expand_after = @after::text WHERE id = @id;

-- name: SendToExpand :one
-- A running send whose rest is still to expand, with its lists.
SELECT id, user_id, status, unsubscribe_group_id, recipient_id::text AS recipient_id,
    exclude_specific_recipient_id::text AS exclude_specific_recipient_id, COALESCE(expand_after, '')::text AS expand_after,
    COALESCE(first_delivery_id, 0)::bigint AS first_delivery_id, COALESCE(batch_size, 0)::int AS batch_size, triggered
FROM single_sends
WHERE id = @id AND deleted_at IS NULL;

-- name: FinishExpansion :one
-- The rest of the audience is in: counted, and the send may complete. (A
-- first step that inserted nothing left no first id: the rest's is it.)
-- No row: the send was deleted or stopped meanwhile.
UPDATE single_sends
SET triggered = triggered + @n::bigint, remaining = remaining + @n::bigint, expand_after = NULL, progress_at = now(), updated_at = now(),
    first_delivery_id = COALESCE(first_delivery_id, NULLIF(@first_id::bigint, 0))
WHERE id = @id AND expand_after = @after::text AND status = 2 AND deleted_at IS NULL
RETURNING triggered, remaining, COALESCE(first_delivery_id, 0)::bigint AS first_delivery_id;

-- name: SendsToExpand :many
-- Running sends whose rest was not expanded yet (the sweeper schedules it
-- again: a lost task, a worker stopped mid-way).
SELECT id FROM single_sends WHERE status = 2 AND expand_after IS NOT NULL AND deleted_at IS NULL
ORDER BY id
LIMIT 500;

-- name: CountAudience :one
-- How many recipients a send of these lists would have if it were
-- expanded now: the rows ExpandSend would insert, counted.
SELECT count(*)::bigint FROM send_audience(@user_id::bigint, @type_ids::bigint[], @segment_ids::bigint[], @group_id::bigint,
    @exclude_type_ids::bigint[], @exclude_segment_ids::bigint[]);

-- name: AudienceListSizes :many
-- The kept lengths of an account's contact types and segments among
-- these (list_counts); a list of another account has none.
SELECT kind, key, COALESCE(sum(n), 0)::bigint AS n FROM list_counts
WHERE user_id = @user_id::bigint AND (kind = 'contact_type' AND key = ANY(@type_ids::bigint[])
    OR kind = 'segment' AND key = ANY(@segment_ids::bigint[]))
GROUP BY kind, key;

-- name: CountAudienceBeyondList :one
-- The rows send_audience would give for these lists whose address is not
-- a live contact of contact type @type_id (the account's own: the caller
-- knows it from AudienceListSizes): added to CountListAudience of that
-- type, the audience of the type and these lists together. Each row
-- probes the type's index, index only.
SELECT count(*)::bigint FROM send_audience(@user_id::bigint, @type_ids::bigint[], @segment_ids::bigint[], @group_id::bigint,
    @exclude_type_ids::bigint[], @exclude_segment_ids::bigint[]) AS x(id)
WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.contact_type_id = @list_type_id::bigint AND c.email_lc = x.email_lc
                  AND c.deleted_at IS NULL);

-- name: SegmentsWithinType :many
-- The account's segments among these whose every entry is a live contact
-- of contact type @type_id: segments of that type with no recipient
-- stored by hand (a segment's members are live contacts of its type).
-- Beside that type's list they add no address to an audience.
SELECT g.id FROM segments g
WHERE g.user_id = @user_id::bigint AND g.id = ANY(@segment_ids::bigint[]) AND g.contact_type_id = @type_id::bigint
  AND NOT EXISTS (SELECT 1 FROM segment_recipients r WHERE r.segment_id = g.id);

-- name: SegmentContactType :one
-- The contact type of a segment of the account's.
SELECT contact_type_id FROM segments WHERE id = @id::bigint AND user_id = @user_id::bigint;

-- name: CountSegmentAudience :one
-- CountListAudience for one segment of contact type @type_id (the caller
-- knows it from SegmentContactType: given as a value, the planner knows
-- how many suppressed contacts the type has and joins them by hash): its
-- kept length (list_counts: its members and its recipients stored by
-- hand) less the hand-stored ones whose address is also a member's, less
-- its members whose address is removed, less its hand-stored recipients
-- whose address is removed. A segment's members are live contacts of its
-- contact type (a deleted contact leaves its segments), one per
-- lower-cased address, and its hand-stored recipients one per address
-- (segment_recipients_manual), so this is send_audience counted. The
-- members whose address is suppressed are a join of two sets of ids:
-- the type's suppressed contacts (suppressed_contacts) and the segment's
-- members; the members whose address is in an exclude list, and not
-- suppressed too, are probed by address (excluded_contacts). The hand-stored
-- recipients, few, are walked.
WITH seg AS (
    SELECT 1 FROM segments g WHERE g.id = @segment_id::bigint AND g.user_id = @user_id::bigint AND g.contact_type_id = @type_id::bigint
), manual AS MATERIALIZED (
    -- its hand-stored recipients, and whether a member has the address
    SELECT m.email_lc, EXISTS (SELECT 1 FROM contacts c JOIN segment_members sm ON sm.segment_id = @segment_id::bigint AND sm.contact_id = c.id
                               WHERE c.contact_type_id = @type_id::bigint AND c.email_lc = m.email_lc AND c.deleted_at IS NULL) AS member
    FROM segment_recipients m WHERE m.segment_id = @segment_id::bigint
), excluded AS (
    SELECT x.id FROM excluded_contacts(@user_id::bigint, @type_id::bigint, @exclude_type_ids::bigint[], @exclude_segment_ids::bigint[]) AS x(id)
)
SELECT CASE WHEN EXISTS (SELECT 1 FROM seg) THEN
    (SELECT COALESCE(sum(n), 0) FROM list_counts WHERE user_id = @user_id::bigint AND kind = 'segment' AND key = @segment_id::bigint)
    - (SELECT count(*) FROM manual WHERE member)
    - (SELECT count(*) FROM segment_members sm
       WHERE sm.segment_id = @segment_id::bigint
         AND sm.contact_id IN (SELECT x.contact_id FROM suppressed_contacts x
                               WHERE x.contact_type_id = @type_id::bigint AND x.list IN (-1, 0, @group_id::bigint)))
    - (SELECT count(DISTINCT e.id) FROM excluded e
       WHERE EXISTS (SELECT 1 FROM segment_members sm WHERE sm.segment_id = @segment_id::bigint AND sm.contact_id = e.id)
         AND NOT EXISTS (SELECT 1 FROM suppressed_contacts x
                         WHERE x.contact_type_id = @type_id::bigint AND x.list IN (-1, 0, @group_id::bigint) AND x.contact_id = e.id))
    - (SELECT count(*) FROM manual m WHERE NOT m.member
         AND m.email_lc IN (SELECT r.email_lc FROM send_removed(@user_id::bigint, @group_id::bigint, @exclude_type_ids::bigint[], @exclude_segment_ids::bigint[]) AS r(email_lc)))
    ELSE 0 END::bigint;

-- name: CountAudienceBeyondSegment :one
-- CountAudienceBeyondList with a segment of the account's as the large
-- list: the rows whose address is neither a member's nor stored by hand
-- in it.
SELECT count(*)::bigint FROM send_audience(@user_id::bigint, @type_ids::bigint[], @segment_ids::bigint[], @group_id::bigint,
    @exclude_type_ids::bigint[], @exclude_segment_ids::bigint[]) AS x(id)
WHERE NOT EXISTS (SELECT 1 FROM contacts c JOIN segment_members sm ON sm.segment_id = @list_segment_id::bigint AND sm.contact_id = c.id
                  WHERE c.contact_type_id = (SELECT g.contact_type_id FROM segments g WHERE g.id = @list_segment_id::bigint)
                    AND c.email_lc = x.email_lc AND c.deleted_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM segment_recipients m WHERE m.segment_id = @list_segment_id::bigint AND m.email_lc = x.email_lc);

-- name: CountListAudience :one
-- CountAudience for one contact type with no segment: the list's kept
-- length (list_counts) less its live contacts whose address is removed
-- (the suppressions and the exclude lists, send_audience's NOT EXISTS
-- terms). A contact type holds one live contact per lower-cased address
-- (contacts_type_email), so this is send_audience counted. The contacts
-- whose address is suppressed are the type's rows of suppressed_contacts
-- (one per contact and suppressing list, hence the UNION); those whose
-- address is in an exclude list are probed in the list's index
-- (excluded_contacts; a contact type's contacts are its account's, so the
-- account is checked once, on the type), never the list itself.
SELECT CASE WHEN EXISTS (SELECT 1 FROM contact_types t WHERE t.id = @type_id::bigint AND t.user_id = @user_id::bigint) THEN
    (SELECT COALESCE(sum(n), 0) FROM list_counts WHERE user_id = @user_id::bigint AND kind = 'contact_type' AND key = @type_id::bigint)
    - (SELECT count(*) FROM (
        SELECT x.contact_id FROM suppressed_contacts x WHERE x.contact_type_id = @type_id::bigint AND x.list IN (-1, 0, @group_id::bigint)
        UNION
        SELECT e.id FROM excluded_contacts(@user_id::bigint, @type_id::bigint, @exclude_type_ids::bigint[], @exclude_segment_ids::bigint[]) AS e(id)
      ) removed)
    ELSE 0 END::bigint;

-- name: SegmentsRebuilding :one
-- Whether any of these segments is between rebuild steps (its membership
-- half old, half new): a send over it waits.
SELECT EXISTS (SELECT 1 FROM segments WHERE id = ANY(@ids::bigint[]) AND rebuild_next IS NOT NULL)::bool;

-- name: StartSend :one
-- The send is running: its batches are fixed by its first delivery id.
UPDATE single_sends s
SET status = 2, triggered = @triggered, remaining = @triggered, batch_size = @batch_size, started_at = now(), progress_at = now(),
    first_delivery_id = (SELECT min(d.id) FROM deliveries d WHERE d.send_id = s.id),
    updated_at = now()
WHERE s.id = @id
RETURNING COALESCE(s.first_delivery_id, 0)::bigint AS first_delivery_id;

-- name: RecordSendEvent :exec
INSERT INTO events (user_id, kind, subject_type, subject_id, payload)
VALUES (@user_id, @kind, 'single_send', @send_id, @payload::jsonb);

-- name: SendForBatch :one
-- What a batch needs of a running send to make its mails: the template
-- (an automation run's from its schedule), the sender (places by name),
-- the batch ranges, the open tokens, the account's sending rate (0: none).
SELECT s.id, s.user_id, s.version, s.status, s.template_id, COALESCE(s.template_html, sc.template_html, '')::text AS template_html,
    s.subject, s.preheader, s.unsubscribe_group_id, COALESCE(s.first_delivery_id, 0)::bigint AS first_delivery_id,
    COALESCE(s.batch_size, 0)::int AS batch_size, s.unique_open_token::text AS unique_open_token,
    COALESCE(se.from_name, '')::text AS from_name, COALESCE(se.from_email, '')::text AS from_email,
    COALESCE(se.reply_to_email, '')::text AS reply_to_email,
    TRIM(BOTH ' ' FROM COALESCE(se.company_address, '') || ' ' || COALESCE(se.company_address2, ''))::text AS company_address,
    COALESCE(ci.name, '')::text AS city, COALESCE(st.name, '')::text AS state, COALESCE(co.name, '')::text AS country,
    COALESCE((SELECT ac.send_rate FROM accounts ac WHERE ac.id = s.user_id), 0)::int AS send_rate,
    (s.expand_after IS NOT NULL)::bool AS expanding, COALESCE(s.relay, '')::text AS relay,
    -- the sender's domain's warm-up, when it is a sending domain of the
    -- account warming up
    COALESCE(wu.domain, '')::text AS warmup_domain, wu.warmup_from, wu.warmup_schedule::int[] AS warmup_schedule
FROM single_sends s
LEFT JOIN automation_schedules sc ON sc.id = s.automation_schedule_id -- a run's template is its schedule's
LEFT JOIN senders se ON se.id = s.sender_id
LEFT JOIN cities ci ON ci.id = se.city_id
LEFT JOIN states st ON st.id = se.state_id
LEFT JOIN countries co ON co.id = se.country_id
LEFT JOIN sending_domains wu ON wu.user_id = s.user_id AND wu.domain = lower(split_part(se.from_email, '@', 2))
    AND wu.deleted_at IS NULL AND wu.warmup_from IS NOT NULL
WHERE s.id = @id AND s.deleted_at IS NULL;

-- name: LeaseRange :one
-- Takes batch range k of a send for lease_seconds for owner, when it is
-- free or its lease ran out (a worker that did not come back) and the
-- send is not paused. leased 0: another batch holds it, or the send is
-- paused (paused says so).
WITH p AS (
    SELECT COALESCE((SELECT s.paused_at IS NOT NULL FROM single_sends s WHERE s.id = @send_id::bigint), false) AS paused
), taken AS (
    INSERT INTO delivery_ranges AS r (send_id, k, lease_until, owner)
    SELECT @send_id, @k, now() + make_interval(secs => @lease_seconds::int), @owner FROM p WHERE NOT p.paused
    ON CONFLICT (send_id, k) DO UPDATE SET lease_until = EXCLUDED.lease_until, owner = EXCLUDED.owner
    WHERE r.lease_until < now()
    RETURNING 1
)
SELECT p.paused::bool AS paused, (SELECT count(*) FROM taken)::bigint AS leased FROM p;

-- name: RenewRange :execrows
-- Extends owner's lease of a range; 0 rows: it is no longer owner's.
UPDATE delivery_ranges SET lease_until = now() + make_interval(secs => @lease_seconds::int)
WHERE send_id = @send_id AND k = @k AND owner = @owner;

-- name: ReleaseRange :exec
DELETE FROM delivery_ranges WHERE send_id = @send_id AND k = @k AND owner = @owner;

-- name: SkipSuppressed :many
-- The pending rows of a range whose address was suppressed since the
-- dispatch (a global unsubscribe, the send's group, a hard bounce) are
-- skipped (5): no mail goes to a suppressed address, however long the
-- send runs. Answers their ids (dropped webhook events).
UPDATE deliveries d
SET status = 5, error = 'suppressed after the send started'
WHERE d.send_id = @send_id AND d.id >= @from_id AND d.id < @to_id AND d.status = 0
  AND (EXISTS (SELECT 1 FROM unsubscribes u
               WHERE u.user_id = d.user_id AND u.email_lc = lower(d.email)
                 AND COALESCE(u.unsubscribe_groups_id, 0) IN (0, @group_id::bigint))
       OR EXISTS (SELECT 1 FROM bounces b WHERE b.user_id = d.user_id AND b.email_lc = lower(d.email)))
RETURNING d.id;

-- name: TakeRemaining :exec
UPDATE single_sends SET remaining = remaining - @n::bigint WHERE id = @id;

-- name: ClaimDeliveries :many
-- The pending rows of a leased range that are due, with what a mail needs
-- of each recipient, in one statement. (Rows are not written: the range's
-- lease keeps other batches off them.)
SELECT d.id, d.email, d.list_key, d.attempts + 1 AS attempts, COALESCE(c.id, 0)::bigint AS contact_id,
    COALESCE(c.first_name, sr.first_name, '')::text AS first_name, COALESCE(c.last_name, sr.last_name, '')::text AS last_name,
    COALESCE(c.alt_email, '')::text AS alt_email, COALESCE(co.name, '')::text AS country,
    COALESCE(c.state, '')::text AS state, COALESCE(c.city, '')::text AS city,
    COALESCE(c.address_line1, '')::text AS address_line1, COALESCE(c.address_line2, '')::text AS address_line2,
    COALESCE(c.state_province_region, '')::text AS state_province_region, COALESCE(c.postal_code, '')::text AS postal_code,
    COALESCE(c.custom, '{}')::text AS custom
FROM deliveries d
LEFT JOIN contacts c ON c.id = d.contact_id
LEFT JOIN segment_recipients sr ON sr.id = d.segment_recipient_id
LEFT JOIN countries co ON co.id = c.country
WHERE d.send_id = @send_id AND d.id >= @from_id AND d.id < @to_id
  AND d.status = 0 AND (d.next_at IS NULL OR d.next_at <= now())
ORDER BY d.id;

-- name: RecordDeliveries :one
-- The outcomes of a batch in one statement: 2 sent, 3 bounced, 4 failed,
-- 0 pending again (a temporary failure, retried at next_at). Only rows
-- still pending change (a second run of the range after a lost lease
-- records nothing twice). Answers how many became final, and the counts
-- the statistics take: sent, bounced, failed (soft bounces) and put off
-- (deferred: tried and pending again, or held for the domain).
-- (The arrays are read by position: sqlc knows only one-array unnest.)
WITH r AS (
    UPDATE deliveries d
    SET status = (@statuses::smallint[])[r.i], attempts = d.attempts + (@tried::smallint[])[r.i],
        next_at = CASE WHEN (@statuses::smallint[])[r.i] = 0 THEN (@next_ats::timestamptz[])[r.i] END,
        error = NULLIF((@errors::text[])[r.i], ''),
        sent_at = CASE WHEN (@statuses::smallint[])[r.i] = 2 THEN now() END
    FROM unnest(@ids::bigint[]) WITH ORDINALITY AS r(id, i)
    -- The ids' span bounds the rows read whatever plan is chosen: right
    -- after the expansion the statistics still say the send has a few
    -- rows, and a plan that reads all of its rows for each outcome took
    -- seconds per batch at 100,000 recipients.
    WHERE d.send_id = @send_id AND d.id >= @min_id::bigint AND d.id <= @max_id::bigint AND d.id = r.id AND d.status = 0
    RETURNING d.status, (@deferred::smallint[])[r.i] AS deferred, r.i
)
SELECT count(*) FILTER (WHERE r.status <> 0)::bigint AS finals,
       count(*) FILTER (WHERE r.status = 2)::bigint AS delivered,
       count(*) FILTER (WHERE r.status = 3)::bigint AS bounced,
       count(*) FILTER (WHERE r.status = 4)::bigint AS failed,
       count(*) FILTER (WHERE r.status = 0 AND r.deferred = 1)::bigint AS deferred,
       -- the outcomes (1-based) that changed their row: the providers'
       -- statistics count these
       COALESCE(array_agg(r.i::int), '{}')::int[] AS changed
FROM r;

-- name: BumpSendCounters :one
-- Once per batch: the counters, and the deliveries left; an automation's
-- run adds to its automation's totals too. Answers the deliveries left,
-- and what the reputation guards judge: the send's counters, whether it
-- is paused, and its account's thresholds (delivery.Guards).
WITH s AS (
    UPDATE single_sends ss
    SET delivered = ss.delivered + @delivered, bounces = ss.bounces + @bounced, remaining = ss.remaining - @finals,
        attempted = ss.attempted + @finals, progress_at = now()
    WHERE ss.id = @send_id::bigint
    RETURNING ss.remaining, ss.automation_id, ss.user_id, (ss.attempted - ss.guard_attempted)::bigint AS attempted, (ss.bounces - ss.guard_bounces)::bigint AS bounces,
        (ss.delivered - ss.guard_delivered)::bigint AS delivered, (ss.complaints - ss.guard_complaints)::bigint AS complaints,
        (ss.paused_at IS NOT NULL)::bool AS paused
), a AS (
    UPDATE automations au
    SET total_delivered = au.total_delivered + @delivered, total_bounces = au.total_bounces + @bounced
    WHERE au.id = (SELECT s.automation_id FROM s) AND (@delivered::bigint > 0 OR @bounced::bigint > 0)
)
SELECT s.remaining, s.attempted, s.bounces, s.delivered, s.complaints, s.paused::bool AS paused, (s.automation_id IS NOT NULL)::bool AS run,
    ac.pause_bounce_rate, ac.pause_bounce_after, ac.pause_complaint_rate, ac.pause_complaint_after
FROM s JOIN accounts ac ON ac.id = s.user_id;

-- name: BumpProviderStats :exec
-- A record's outcomes by receiving provider (mail.Provider), in this
-- hour's row of the send's: delivered, put off, hard-bounced, refused for
-- good, complained. Providers in order, so that the batches of a send
-- take the rows in one order.
INSERT INTO provider_stats AS p (send_id, provider, hour, user_id, delivered, deferred, bounced, blocked, complained)
SELECT @send_id::bigint, (@providers::smallint[])[g.i], date_trunc('hour', now()), @user_id::bigint,
    (@delivered::bigint[])[g.i], (@deferred::bigint[])[g.i], (@bounced::bigint[])[g.i], (@blocked::bigint[])[g.i],
    (@complained::bigint[])[g.i]
FROM generate_subscripts(@providers::smallint[], 1) AS g(i)
ORDER BY (@providers::smallint[])[g.i]
ON CONFLICT (send_id, provider, hour) DO UPDATE SET delivered = p.delivered + EXCLUDED.delivered,
    deferred = p.deferred + EXCLUDED.deferred, bounced = p.bounced + EXCLUDED.bounced, blocked = p.blocked + EXCLUDED.blocked,
    complained = p.complained + EXCLUDED.complained;

-- name: PauseSend :one
-- Pauses a running single send for reason (a reputation guard): its
-- ranges are not leased again until it is resumed. No row when it is
-- paused already, not running, or an automation's run.
UPDATE single_sends SET paused_at = now(), paused_reason = @reason::text
WHERE id = @id::bigint AND status = 2 AND paused_at IS NULL AND automation_id IS NULL
RETURNING user_id, utr::text AS utr, triggered, attempted, bounces, delivered, complaints;

-- name: AddBounces :execrows
-- Hard bounces suppress the address for the account's later sends, with
-- an address.bounced event for each address newly bounced.
WITH added AS (
    INSERT INTO bounces (user_id, email_lc, send_id, reason)
    SELECT @user_id::bigint, lower(a.email), @send_id::bigint, (@reasons::text[])[a.i]
    FROM unnest(@emails::text[]) WITH ORDINALITY AS a(email, i)
    ORDER BY lower(a.email)
    ON CONFLICT DO NOTHING
    RETURNING email_lc, reason
)
INSERT INTO events (user_id, kind, subject_type, subject_id, payload)
SELECT @user_id::bigint, 'address.bounced', 'single_send', @send_id::bigint,
    jsonb_build_object('email_address', a.email_lc, 'reason', a.reason)
FROM added a;

-- name: CompleteSend :one
-- Marks the send completed when no delivery is left and its audience is
-- whole: a guarded update, so of all the batches that try, exactly one
-- succeeds. A send a guard paused while its last mails were in flight is
-- done all the same: the pause goes with it.
UPDATE single_sends s
SET status = 3, sent_at = now(), updated_at = now(), paused_at = NULL, paused_reason = NULL
WHERE s.id = @id AND s.status = 2 AND s.remaining <= 0 AND s.expand_after IS NULL
RETURNING s.user_id, s.triggered, s.delivered, s.bounces, s.automation_id;

-- name: LastDeliveryID :one
SELECT COALESCE(max(id), 0)::bigint FROM deliveries WHERE send_id = @send_id;

-- name: DueSends :many
-- Ready sends whose time has come (the sweeper dispatches them: a lost
-- dispatch task only delays a send).
SELECT id, version FROM single_sends
WHERE status = 1 AND deleted_at IS NULL AND due_at <= now()
ORDER BY due_at
LIMIT 500;

-- name: StalledSends :many
-- Running sends that made no progress for a while: their batch chain was
-- lost (a flushed Redis, a killed worker) or is waiting on retries.
SELECT id, COALESCE(first_delivery_id, 0)::bigint AS first_delivery_id, COALESCE(batch_size, 0)::int AS batch_size
FROM single_sends
WHERE status = 2 AND paused_at IS NULL AND progress_at < now() - make_interval(secs => @idle_seconds::int)
  -- A range still leased is a batch still at work (slow, not lost).
  AND NOT EXISTS (SELECT 1 FROM delivery_ranges r WHERE r.send_id = single_sends.id AND r.lease_until >= now())
ORDER BY progress_at
LIMIT 500;

-- name: OpenRanges :many
-- The batch ranges of a send that hold rows a batch could take now and
-- are not leased (read through the primary key: only for stalled sends).
SELECT DISTINCT ((d.id - @first_id::bigint) / @batch_size::bigint)::bigint AS k
FROM deliveries d
WHERE d.send_id = @send_id AND d.status = 0 AND (d.next_at IS NULL OR d.next_at <= now())
  AND NOT EXISTS (SELECT 1 FROM delivery_ranges r
                  WHERE r.send_id = @send_id AND r.k = (d.id - @first_id::bigint) / @batch_size::bigint AND r.lease_until >= now())
ORDER BY 1
LIMIT @n::int;

-- name: TouchSend :exec
UPDATE single_sends SET progress_at = now() WHERE id = @id;

-- name: CountSendUnsubscribe :exec
WITH s AS (
    UPDATE single_sends ss SET unsubscribes = ss.unsubscribes + @n::bigint WHERE ss.id = @send_id::bigint AND ss.user_id = @user_id
    RETURNING ss.automation_id
)
UPDATE automations au SET total_unsubscribe = au.total_unsubscribe + @n::bigint WHERE au.id = (SELECT s.automation_id FROM s);
