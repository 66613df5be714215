-- name: SendReferences :one
-- Which of the records a send names are the account's live ones, in one
-- round trip: the sender (-1: none; else its is_verified), the
-- unsubscribe group, and those of the contact types and segments.
SELECT
    COALESCE((SELECT s.is_verified FROM senders s
              WHERE s.id = @sender_id AND s.user_id = @user_id AND s.deleted_at IS NULL), -1)::smallint AS sender_verified,
    EXISTS (SELECT 1 FROM unsubscribe_groups g WHERE g.id = @group_id AND g.user_id = @user_id) AS group_exists,
    ARRAY(SELECT t.id FROM contact_types t
          WHERE t.id = ANY(@type_ids::bigint[]) AND t.user_id = @user_id AND t.deleted_at IS NULL)::bigint[] AS type_ids,
    ARRAY(SELECT sg.id FROM segments sg
          WHERE sg.id = ANY(@segment_ids::bigint[]) AND sg.user_id = @user_id AND sg.deleted_at IS NULL)::bigint[] AS segment_ids;

-- name: CreateSingleSend :one
-- A new send, ready (1) at version 1: due now, or at its schedule (UTC),
-- whose date and time are also kept apart as the API shows them.
INSERT INTO single_sends (user_id, utr, template_id, template_json, template_html, sender_id, unsubscribe_group_id,
    single_send_name, subject, preheader, recipient_id, exclude_specific_recipient_id, schedule_type,
    schedule_date, schedule_time, status, version, due_at, unique_open_token, relay)
VALUES (@user_id, (@utr::text)::uuid, @template_id, sqlc.narg(template_json), sqlc.narg(template_html), @sender_id,
    @unsubscribe_group_id, @single_send_name, @subject, @preheader, @recipient_id::jsonb,
    @exclude_specific_recipient_id::jsonb, @schedule_type,
    (sqlc.narg(schedule_at)::timestamptz AT TIME ZONE 'UTC')::date,
    (sqlc.narg(schedule_at)::timestamptz AT TIME ZONE 'UTC')::time,
    1, 1, COALESCE(sqlc.narg(schedule_at)::timestamptz, now()), @unique_open_token::jsonb, NULLIF(@relay::text, ''))
RETURNING id, version, due_at::timestamptz AS due_at;

-- name: LockSingleSend :one
-- A live send of the account, locked for a change: the dispatcher locks
-- it too, so a send is changed either before it starts or not at all.
SELECT id, status, recipient_id::text AS recipient_id, unique_open_token::text AS unique_open_token
FROM single_sends
WHERE utr = (@utr::text)::uuid AND user_id = @user_id AND deleted_at IS NULL AND automation_id IS NULL
FOR UPDATE;

-- name: UpdateSingleSend :one
-- The send takes the new fields and is ready again at the next version:
-- a dispatch task of an older version finds nothing to do.
UPDATE single_sends SET template_id = @template_id, template_json = sqlc.narg(template_json),
    template_html = sqlc.narg(template_html), sender_id = @sender_id, unsubscribe_group_id = @unsubscribe_group_id,
    single_send_name = @single_send_name, subject = @subject, preheader = @preheader,
    recipient_id = @recipient_id::jsonb, exclude_specific_recipient_id = @exclude_specific_recipient_id::jsonb,
    schedule_type = @schedule_type,
    schedule_date = (sqlc.narg(schedule_at)::timestamptz AT TIME ZONE 'UTC')::date,
    schedule_time = (sqlc.narg(schedule_at)::timestamptz AT TIME ZONE 'UTC')::time,
    status = 1, version = version + 1, due_at = COALESCE(sqlc.narg(schedule_at)::timestamptz, now()),
    unique_open_token = @unique_open_token::jsonb, relay = NULLIF(@relay::text, ''), updated_at = now()
WHERE id = @id
RETURNING version, due_at::timestamptz AS due_at;

-- name: LockSingleSendForCopy :one
-- The send a duplicate copies, held in place while it is copied.
SELECT id, recipient_id::text AS recipient_id
FROM single_sends
WHERE utr = (@utr::text)::uuid AND user_id = @user_id AND deleted_at IS NULL AND automation_id IS NULL
FOR SHARE;

-- name: DuplicateSingleSend :one
-- A draft (0) copy of a send: its fields and lists, a new utr, fresh open
-- tokens, no due time, every counter and the engine's columns at their
-- defaults.
INSERT INTO single_sends (user_id, utr, template_id, template_json, template_html, sender_id, unsubscribe_group_id,
    single_send_name, subject, preheader, recipient_id, exclude_specific_recipient_id, schedule_type,
    schedule_date, schedule_time, status, version, unique_open_token, relay)
SELECT src.user_id, (@utr::text)::uuid, src.template_id, src.template_json, src.template_html, src.sender_id,
    src.unsubscribe_group_id, src.single_send_name, src.subject, src.preheader, src.recipient_id,
    src.exclude_specific_recipient_id, src.schedule_type, src.schedule_date, src.schedule_time, 0, 1,
    @unique_open_token::jsonb, src.relay
FROM single_sends src WHERE src.id = @id
RETURNING id;

-- name: LockSingleSendsByID :many
-- The live sends of the account among ids (distinct), locked in id order.
SELECT s.id, s.status FROM single_sends s
WHERE s.id = ANY(@ids::bigint[]) AND s.user_id = @user_id AND s.deleted_at IS NULL AND s.automation_id IS NULL
ORDER BY s.id
FOR UPDATE;

-- name: DeleteSingleSends :exec
-- Soft-deletes sends locked by LockSingleSendsByID or LockSingleSend.
UPDATE single_sends SET deleted_at = now(), updated_at = now()
WHERE id = ANY(@ids::bigint[]) AND deleted_at IS NULL;

-- name: CountSingleSends :one
SELECT count(*) FROM single_sends WHERE user_id = @user_id AND deleted_at IS NULL AND automation_id IS NULL;

-- name: SingleSendIDByUTR :one
-- A single send of the account, not deleted, for its statistics.
SELECT id FROM single_sends
WHERE utr = (@utr::text)::uuid AND user_id = @user_id AND deleted_at IS NULL AND automation_id IS NULL;

-- name: SendSummaries :many
-- A page of the account's sends, newest first, with their counters and
-- without their templates (the console's list): single_sends_user walked
-- backwards, so a page costs its offset in index entries, not the sends'
-- rows.
SELECT id, utr::text AS utr, single_send_name, subject, status, schedule_type, due_at, started_at, sent_at, created_at,
    triggered, delivered, bounces, remaining, unique_opens, (paused_at IS NOT NULL)::bool AS paused, cancelled_at, cancelled
FROM single_sends
WHERE user_id = @user_id AND deleted_at IS NULL AND automation_id IS NULL
ORDER BY id DESC
LIMIT @n::bigint OFFSET @skip::bigint;

-- name: SendProgress :one
-- A live send of the account's counters as it runs: those the details
-- show (delivered, bounces), what is left of its deliveries, the
-- statistics' deferred tries, and why a reputation guard paused it.
SELECT s.id, s.status, s.triggered, s.delivered, s.bounces, s.remaining,
    s.due_at, s.started_at, s.sent_at,
    COALESCE((SELECT sum(st.deferred) FROM send_stats st WHERE st.scope = 's' AND st.scope_id = s.id), 0)::bigint AS deferred,
    clock_timestamp()::timestamptz AS read_at, COALESCE(s.paused_reason, '')::text AS paused_reason, s.cancelled_at, s.cancelled
FROM single_sends s
WHERE s.utr = (@utr::text)::uuid AND s.user_id = @user_id AND s.deleted_at IS NULL AND s.automation_id IS NULL;

-- name: ResumeSingleSend :one
-- Resumes an account's single send a reputation guard paused: its ranges
-- may be leased again, and it looks idle to the sweeper, which starts its
-- chains at its next pass; the guards judge its mails from here on.
-- resumed 0: it is not paused. No row: no such send.
WITH s AS (
    SELECT id, paused_at FROM single_sends
    WHERE utr = (@utr::text)::uuid AND user_id = @user_id::bigint AND deleted_at IS NULL AND automation_id IS NULL
), r AS (
    UPDATE single_sends ss
    SET paused_at = NULL, paused_reason = NULL, progress_at = now() - interval '1 day', updated_at = now(),
        guard_attempted = ss.attempted, guard_bounces = ss.bounces, guard_delivered = ss.delivered,
        guard_complaints = ss.complaints
    -- paused_at on the row itself too: of resumes at once, the ones that
    -- waited for the first's lock see it resumed and change nothing
    FROM s WHERE ss.id = s.id AND s.paused_at IS NOT NULL AND ss.paused_at IS NOT NULL AND ss.status = 2
    RETURNING ss.id
)
SELECT s.id, (SELECT count(*) FROM r)::bigint AS resumed FROM s;

-- name: LockSendToCancel :one
-- An account's single send, locked for a cancel, with whether a guard
-- paused it and whether a batch still holds a range of it (its mails in
-- flight are recorded first). No row: no such send.
SELECT s.id, s.status, (s.paused_at IS NOT NULL)::bool AS paused,
    EXISTS (SELECT 1 FROM delivery_ranges r WHERE r.send_id = s.id AND r.lease_until > now())::bool AS in_flight
FROM single_sends s
WHERE s.utr = (@utr::text)::uuid AND s.user_id = @user_id::bigint AND s.deleted_at IS NULL AND s.automation_id IS NULL
FOR UPDATE OF s;

-- name: SkipPending :execrows
-- A cancelled send's pending deliveries are skipped (5): not sent.
UPDATE deliveries SET status = 5, error = 'cancelled after a pause'
WHERE send_id = @send_id::bigint AND status = 0;

-- name: MarkCancelled :one
-- A cancelled send: what remained of it is cancelled (its pending
-- deliveries were skipped, and no batch holds a range) and nothing
-- remains, and the rest of its audience is not expanded (an expansion
-- under way finds it gone and rolls back).
UPDATE single_sends SET cancelled = remaining, remaining = 0, expand_after = NULL, cancelled_at = now(), updated_at = now()
WHERE id = @id::bigint
RETURNING user_id, delivered, bounces, cancelled;
