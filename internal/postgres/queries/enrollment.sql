-- name: StartMembersEnrollment :exec
-- At a live custom automation's first set-live only, its members are to
-- be enrolled: the chunks start (a welcome automation enrolls only those
-- who join after; a resume enrolls nobody new).
UPDATE automations SET members_enrolled_at = @now::timestamptz, members_enroll_after = ''
WHERE id = @automation_id AND members_enrolled_at IS NULL AND status = 1 AND automation_type = 2 AND deleted_at IS NULL;

-- name: EnrollMembersChunk :one
-- The next chunk of a live custom automation's members (at most n, in the
-- order of an index: a contact type's by email_lc, a segment's by contact
-- id) gets active enrollments at the first schedule; the automation's row
-- is locked for the chunk and its cursor moves on (NULL after the last
-- chunk). A paused or deleted automation's chunk does nothing.
WITH p AS (SELECT @now::timestamptz AS now),
a AS (
    SELECT au.id, au.user_id, au.automation_for, au.automation_for_table, au.members_enroll_after AS after
    FROM automations au
    WHERE au.id = @automation_id AND au.members_enroll_after IS NOT NULL AND au.status = 1 AND au.deleted_at IS NULL
    FOR UPDATE
),
m AS (
    (SELECT c.id AS contact_id, c.email_lc AS ekey, 0::bigint AS ikey
     FROM a JOIN contacts c ON c.contact_type_id = a.automation_for AND c.deleted_at IS NULL AND c.email_lc > a.after
     WHERE a.automation_for_table = 'contacts_' AND c.user_id = a.user_id
     ORDER BY c.email_lc LIMIT @n::int)
    UNION ALL
    (SELECT sr.contact_id, '', sr.contact_id
     FROM a JOIN segment_members sr ON sr.segment_id = a.automation_for
          AND sr.contact_id > COALESCE(NULLIF(a.after, '')::bigint, 0)
     WHERE a.automation_for_table = 'segments_' AND sr.user_id = a.user_id
     ORDER BY sr.contact_id LIMIT @n::int)
),
ins AS (
    INSERT INTO automation_enrollments (automation_id, user_id, contact_id, step, due_at)
    SELECT a.id, a.user_id, m.contact_id, f.id, p.now + schedule_wait(f.waiting_period, f.waiting_type)
    FROM p, a
    CROSS JOIN LATERAL (SELECT s.id, s.waiting_period, s.waiting_type FROM automation_schedules s
                        WHERE s.automation_id = a.id AND s.deleted_at IS NULL ORDER BY s.id LIMIT 1) f
    CROSS JOIN m
    ON CONFLICT (automation_id, contact_id) WHERE state = 0 DO NOTHING
    RETURNING 1
),
up AS (
    UPDATE automations au
    SET members_enroll_after = CASE WHEN (SELECT count(*) FROM m) < @n::int THEN NULL
                                    WHEN a.automation_for_table = 'contacts_' THEN (SELECT max(m.ekey) FROM m)
                                    ELSE (SELECT max(m.ikey) FROM m)::text END
    FROM a WHERE au.id = a.id
    RETURNING au.members_enroll_after
)
SELECT (SELECT count(*) FROM ins)::bigint AS enrolled,
       EXISTS (SELECT 1 FROM up WHERE up.members_enroll_after IS NOT NULL)::bool AS more;

-- name: MembersToEnroll :many
-- Live custom automations whose members' enrollment has not finished (a
-- set-live whose task was lost, a worker stopped mid-way): the sweeper
-- queues it again.
SELECT id FROM automations
WHERE automation_type = 2 AND status = 1 AND deleted_at IS NULL
  AND (members_enrolled_at IS NULL OR members_enroll_after IS NOT NULL);

-- name: ClaimDueEnrollments :many
-- Due active enrollments of live automations, locked for this stepper;
-- those another holds are skipped, and so are those of a schedule waiting
-- for its next run (run_after). Taken automation by automation, each
-- through the (automation, due_at) index in due order, so no pass sorts a
-- backlog (a plan joining first and sorting after spilled 300,000 rows to
-- disk for every pass of 5,000); a paused automation's are not read.
SELECT e.id, e.automation_id, e.contact_id, e.step
FROM (SELECT au.id FROM automations au WHERE au.status = 1 AND au.deleted_at IS NULL ORDER BY au.id) a
CROSS JOIN LATERAL (
    SELECT en.id, en.automation_id, en.contact_id, en.step
    FROM automation_enrollments en
    WHERE en.automation_id = a.id AND en.state = 0 AND en.due_at <= @now::timestamptz
      AND NOT EXISTS (SELECT 1 FROM automation_schedules sc WHERE sc.id = en.step AND sc.run_after > @now::timestamptz)
    ORDER BY en.due_at
    LIMIT @n::int
    FOR UPDATE SKIP LOCKED
) e
LIMIT @n::int;

-- name: StepPending :one
-- Whether any live automation has an enrollment due whose schedule may
-- run (asked automation by automation through the same index), and the
-- send id the next run would get about (the last one made, plus one: no
-- id is drawn from the sequence to ask).
SELECT EXISTS (SELECT 1 FROM automations a
               WHERE a.status = 1 AND a.deleted_at IS NULL
                 AND EXISTS (SELECT 1 FROM automation_enrollments e
                             WHERE e.automation_id = a.id AND e.state = 0 AND e.due_at <= @now::timestamptz
                               AND NOT EXISTS (SELECT 1 FROM automation_schedules sc
                                               WHERE sc.id = e.step AND sc.run_after > @now::timestamptz)))::bool AS due,
       (SELECT COALESCE(max(id), 0) + 1 FROM single_sends)::bigint AS next_id;

-- name: HoldSchedules :exec
-- After a stepping transaction: schedules whose sender stopped their run
-- make no other before until (apart from the transaction, as
-- AddAutomationTriggered: a schedule's row is never locked while
-- enrollments are).
UPDATE automation_schedules SET run_after = @until::timestamptz
WHERE id = ANY(@ids::bigint[]);

-- name: NoteSmallRuns :exec
-- After a stepping transaction: schedules that made a small run hold their
-- next for 2 s doubled by each small run that came after streak_from (twice
-- the longest hold before now), at most every_seconds; after a quieter
-- spell the streak starts over (a lone join goes at the next pass).
WITH p AS (SELECT @now::timestamptz AS now, @every_seconds::float8 AS every, @streak_from::timestamptz AS streak_from),
x AS (SELECT sc.id, CASE WHEN sc.last_run_at > p.streak_from THEN LEAST(sc.run_streak + 1, 20) ELSE 0 END AS streak
      FROM p, automation_schedules sc WHERE sc.id = ANY(@ids::bigint[]))
UPDATE automation_schedules s
SET run_streak = x.streak, last_run_at = p.now,
    run_after = p.now + make_interval(0, 0, 0, 0, 0, 0, LEAST(p.every, power(2, x.streak + 1)))
FROM p, x
WHERE s.id = x.id;

-- name: TryStepLock :one
-- One stepping pass at a time across all workers: a pass whose lock is
-- taken ends at once (steppers queued every 2 s while one loops through a
-- large backlog would otherwise each take a worker slot and contend on
-- the same rows).
SELECT pg_try_advisory_xact_lock(7885630533030798704)::bool; -- "mailstep"

-- name: ScheduleLive :one
-- Whether a schedule the stepper could not make a run of still exists (its
-- sender is what stopped it).
SELECT EXISTS (SELECT 1 FROM automation_schedules WHERE id = @id AND deleted_at IS NULL)::bool;

-- name: NextRunID :one
SELECT nextval(pg_get_serial_sequence('single_sends', 'id'))::bigint;

-- name: CreateRun :execrows
-- A run of a schedule: a row of single_sends the engine sends like a
-- single send (status 2 from birth). The template stays on the schedule
-- (SendForBatch reads it there): a run row is a few hundred bytes. No run
-- is made of a deleted schedule, nor while its sender is deleted or (unless
-- allow_unverified, ALLOW_UNVERIFIED_SENDERS) not verified (ScheduleLive
-- tells the two apart).
INSERT INTO single_sends (id, user_id, utr, template_id, sender_id, unsubscribe_group_id,
    single_send_name, subject, preheader, status, due_at, started_at, progress_at, unique_open_token,
    automation_id, automation_schedule_id)
OVERRIDING SYSTEM VALUE
SELECT @id::bigint, a.user_id, gen_random_uuid(), s.template_id, s.sender_id,
    COALESCE(a.unsubscribe_group_id, 0), a.automation_name, s.subject, '', 2, now(), now(), now(),
    jsonb_build_object(a.automation_for_table || a.automation_for, @list_token::text), a.id, s.id
FROM automation_schedules s JOIN automations a ON a.id = s.automation_id
JOIN senders se ON se.id = s.sender_id AND se.deleted_at IS NULL AND (se.is_verified = 1 OR @allow_unverified::bool)
WHERE s.id = @schedule_id AND s.deleted_at IS NULL;

-- name: SkipDeletedStep :exec
-- Enrollments whose next schedule was deleted move on to the one after it,
-- due now (or are done): a deleted mail is not sent.
WITH p AS (SELECT @now::timestamptz AS now)
UPDATE automation_enrollments e
SET step = nx.id, due_at = CASE WHEN nx.id IS NULL THEN NULL ELSE p.now END,
    state = CASE WHEN nx.id IS NULL THEN 1 ELSE 0 END, updated_at = now()
FROM p, unnest(@enrollment_ids::bigint[]) AS x(id)
JOIN automation_enrollments e0 ON e0.id = x.id -- by the primary key (as ExpandRun)
LEFT JOIN LATERAL (SELECT s.id FROM automation_schedules s
                   WHERE s.automation_id = e0.automation_id AND s.id > e0.step AND s.deleted_at IS NULL
                   ORDER BY s.id LIMIT 1) nx ON true
WHERE e.id = x.id;

-- name: ExpandRun :many
-- The run's deliveries: the enrollments' contacts still live, still in the
-- target when the automation's exit criteria says so, not unsubscribed
-- (globally or from the automation's group) nor bounced.
-- The enrollments are found by id through the primary key (unnest): as
-- id = ANY(…) the planner read every enrollment of the table for each run.
INSERT INTO deliveries (send_id, user_id, contact_id, email, list_key)
SELECT @run_id::bigint, c.user_id, c.id, c.email, a.automation_for_table || a.automation_for
FROM unnest(@enrollment_ids::bigint[]) AS x(id)
JOIN automation_enrollments e ON e.id = x.id
JOIN automations a ON a.id = e.automation_id
JOIN contacts c ON c.id = e.contact_id AND c.deleted_at IS NULL
WHERE (a.exit_criteria = 0 OR
       (a.automation_for_table = 'contacts_' AND c.contact_type_id = a.automation_for) OR
       (a.automation_for_table = 'segments_' AND EXISTS (SELECT 1 FROM segment_members sr
                                                        WHERE sr.segment_id = a.automation_for AND sr.contact_id = c.id)))
  AND NOT EXISTS (SELECT 1 FROM unsubscribes u
                  WHERE u.user_id = c.user_id AND u.email_lc = c.email_lc
                    AND COALESCE(u.unsubscribe_groups_id, 0) IN (0, COALESCE(a.unsubscribe_group_id, 0)))
  AND NOT EXISTS (SELECT 1 FROM bounces b WHERE b.user_id = c.user_id AND b.email_lc = c.email_lc)
ORDER BY c.email_lc
RETURNING contact_id;

-- name: AdvanceEnrollments :exec
-- Each stepped enrollment moves to its automation's next schedule, due
-- after its wait, or is done after the last; one whose contact got no
-- mail this step (gone, out of the target, suppressed: @got false at its
-- place, from ExpandRun's rows) leaves. (Asked of the run's deliveries
-- instead, the planner took a run for a few dozen rows and read all of
-- them for each enrollment: 0.3 s a pass of 5,000.)
WITH p AS (SELECT @now::timestamptz AS now)
UPDATE automation_enrollments e
SET step = nx.id,
    due_at = CASE WHEN nx.id IS NULL THEN NULL ELSE p.now + schedule_wait(nx.waiting_period, nx.waiting_type) END,
    state = CASE WHEN NOT (@got::bool[])[x.i] THEN 2 WHEN nx.id IS NULL THEN 1 ELSE 0 END,
    updated_at = now()
FROM p, unnest(@enrollment_ids::bigint[]) WITH ORDINALITY AS x(id, i)
JOIN automation_enrollments e0 ON e0.id = x.id -- by the primary key (as ExpandRun)
LEFT JOIN LATERAL (SELECT s.id, s.waiting_period, s.waiting_type FROM automation_schedules s
                   WHERE s.automation_id = e0.automation_id AND s.id > e0.step AND s.deleted_at IS NULL
                   ORDER BY s.id LIMIT 1) nx ON true
WHERE e.id = x.id;

-- name: StartRun :one
-- The run is under way: counters and batch ranges, like StartSend.
UPDATE single_sends s
SET triggered = @triggered, remaining = @triggered, batch_size = @batch_size,
    first_delivery_id = (SELECT min(d.id) FROM deliveries d WHERE d.send_id = s.id)
WHERE s.id = @id
RETURNING COALESCE(s.first_delivery_id, 0)::bigint AS first_delivery_id;

-- name: AddAutomationTriggered :exec
-- After a stepping transaction: its runs' recipients to the automations'
-- total_triggered (apart, so the stepper never holds an automation's row
-- while it holds enrollments: the delete takes them the other way round).
UPDATE automations a SET total_triggered = a.total_triggered + x.n
FROM (SELECT s.automation_id AS id, sum(s.triggered) AS n FROM single_sends s
      WHERE s.id = ANY(@run_ids::bigint[]) AND s.automation_id IS NOT NULL GROUP BY s.automation_id) x
WHERE a.id = x.id;

-- name: DeleteRun :exec
-- A run whose enrollments all left before their mail: nothing to send.
DELETE FROM single_sends WHERE id = @id AND automation_id IS NOT NULL;
