-- name: BounceDelivery :one
-- An asynchronous hard bounce of a delivery, marked once (bounced_at): a
-- sent row becomes bounced (3); a pending one keeps its state for the
-- batch that records it (its outcome still counts). No row when it bounced
-- already (at RCPT TO, status 3, or by an earlier report), never went out
-- (skipped), or is not to one of match (when match is not empty).
UPDATE deliveries d
SET bounced_at = now(), status = CASE WHEN d.status = 2 THEN 3 ELSE d.status END,
    error = COALESCE(NULLIF(@reason::text, ''), d.error)
WHERE d.send_id = @send_id AND d.id = @id AND d.bounced_at IS NULL AND d.status IN (0, 2, 4)
  AND (cardinality(@match::text[]) = 0 OR lower(d.email) = ANY(@match::text[]))
RETURNING d.user_id, d.email;

-- name: ComplainDelivery :one
-- A complaint about a delivery's mail, marked once (complained_at). No row
-- when it was counted already, the mail never went out (skipped), or it
-- is not to one of match (when match is not empty).
UPDATE deliveries d
SET complained_at = now()
WHERE d.send_id = @send_id AND d.id = @id AND d.complained_at IS NULL AND d.status <> 5
  AND (cardinality(@match::text[]) = 0 OR lower(d.email) = ANY(@match::text[]))
RETURNING d.user_id, d.email;

-- name: FeedbackDelivery :one
-- The delivery a report names, when its mail went out (not skipped) and,
-- when match is not empty, it is to one of match.
SELECT d.user_id, d.email
FROM deliveries d
WHERE d.send_id = @send_id AND d.id = @id AND d.status <> 5
  AND (cardinality(@match::text[]) = 0 OR lower(d.email) = ANY(@match::text[]));

-- name: AddFeedbackBounce :exec
-- An asynchronous hard bounce suppresses the address for the account's
-- later sends (when it is not already) and records address.bounced, once
-- per delivery.
WITH added AS (
    INSERT INTO bounces (user_id, email_lc, send_id, reason)
    VALUES (@user_id::bigint, lower(@email::text), @send_id::bigint, @reason::text)
    ON CONFLICT DO NOTHING
    RETURNING 1
)
INSERT INTO events (user_id, kind, subject_type, subject_id, payload)
VALUES (@user_id::bigint, 'address.bounced', 'single_send', @send_id::bigint,
    jsonb_build_object('email_address', lower(@email::text), 'reason', @reason::text, 'status', @status::text,
        'delivery_id', @delivery_id::bigint, 'via', @via::text));

-- name: CountSendBounce :one
-- One more bounce of a send (and of its automation, for a run); answers
-- what the reputation guards judge (as BumpSendCounters does).
WITH s AS (
    UPDATE single_sends ss SET bounces = ss.bounces + 1 WHERE ss.id = @send_id::bigint
    RETURNING ss.user_id, ss.automation_id, (ss.attempted - ss.guard_attempted)::bigint AS attempted, (ss.bounces - ss.guard_bounces)::bigint AS bounces,
        (ss.delivered - ss.guard_delivered)::bigint AS delivered, (ss.complaints - ss.guard_complaints)::bigint AS complaints,
        (ss.paused_at IS NOT NULL)::bool AS paused
), a AS (
    UPDATE automations au SET total_bounces = au.total_bounces + 1 WHERE au.id = (SELECT s.automation_id FROM s)
)
SELECT s.attempted, s.bounces, s.delivered, s.complaints, s.paused::bool AS paused, (s.automation_id IS NOT NULL)::bool AS run,
    ac.pause_bounce_rate, ac.pause_bounce_after, ac.pause_complaint_rate, ac.pause_complaint_after
FROM s JOIN accounts ac ON ac.id = s.user_id;

-- name: AddComplaint :one
-- A complaint puts the address on the account's global list (reason
-- 'complaint'; left as it is when already there) and records
-- address.complained, once per delivery. Answers how many addresses were
-- added (0 or 1).
WITH added AS (
    INSERT INTO unsubscribes (user_id, unsubscribe_groups_id, email_address, send_id, reason)
    VALUES (@user_id::bigint, NULL, @email::text, @send_id::bigint, 'complaint')
    ON CONFLICT DO NOTHING
    RETURNING id
), recorded AS (
    INSERT INTO events (user_id, kind, subject_type, subject_id, payload)
    VALUES (@user_id::bigint, 'address.complained', 'single_send', @send_id::bigint,
        jsonb_build_object('email_address', @email::text, 'feedback_type', @feedback_type::text,
            'delivery_id', @delivery_id::bigint, 'unsubscribe_id', (SELECT a.id FROM added a)))
)
SELECT count(*) FROM added;

-- name: CountSendComplaint :one
-- One more complaint of a send; answers what the reputation guards judge
-- (as BumpSendCounters does).
WITH s AS (
    UPDATE single_sends ss SET complaints = ss.complaints + 1 WHERE ss.id = @send_id::bigint
    RETURNING ss.user_id, (ss.attempted - ss.guard_attempted)::bigint AS attempted, (ss.bounces - ss.guard_bounces)::bigint AS bounces,
        (ss.delivered - ss.guard_delivered)::bigint AS delivered, (ss.complaints - ss.guard_complaints)::bigint AS complaints, ss.paused_at IS NOT NULL AS paused,
        ss.automation_id
)
SELECT s.attempted, s.bounces, s.delivered, s.complaints, s.paused::bool AS paused, (s.automation_id IS NOT NULL)::bool AS run,
    ac.pause_bounce_rate, ac.pause_bounce_after, ac.pause_complaint_rate, ac.pause_complaint_after
FROM s JOIN accounts ac ON ac.id = s.user_id;

-- name: KeepInbound :one
-- An inbound message kept for inspection.
INSERT INTO inbound_messages (mail_from, rcpt, reason, send_id, delivery_id, size, raw)
VALUES (@mail_from, @rcpt, @reason, sqlc.narg(send_id), sqlc.narg(delivery_id), @size, @raw)
RETURNING id;

-- name: PruneInbound :execrows
-- Inbound messages kept longer than keep_seconds are deleted.
DELETE FROM inbound_messages WHERE received_at < now() - make_interval(secs => @keep_seconds::double precision);
