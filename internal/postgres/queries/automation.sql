-- name: CreateAutomation :one
-- A new automation, a draft (0).
INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table,
    exit_criteria, unsubscribe_group_id)
VALUES (@user_id, (@utr::text)::uuid, @automation_name, @automation_type, @automation_for, @automation_for_table,
    @exit_criteria, sqlc.narg(unsubscribe_group_id))
RETURNING id;

-- name: LockAutomation :one
-- A live (not deleted) automation of the account, locked for a change of
-- its status or its schedules.
SELECT id, status FROM automations
WHERE utr = (@utr::text)::uuid AND user_id = @user_id AND deleted_at IS NULL
FOR UPDATE;

-- name: AutomationLiveCheck :one
-- What set-live asks of a locked automation: its unsubscribe group is
-- still the account's, it has a schedule, its target is live.
SELECT
    EXISTS (SELECT 1 FROM unsubscribe_groups g WHERE g.id = a.unsubscribe_group_id AND g.user_id = a.user_id) AS group_ok,
    EXISTS (SELECT 1 FROM automation_schedules s WHERE s.automation_id = a.id AND s.deleted_at IS NULL) AS has_schedule,
    CASE a.automation_for_table
        WHEN 'contacts_' THEN EXISTS (SELECT 1 FROM contact_types t
                                      WHERE t.id = a.automation_for AND t.user_id = a.user_id AND t.deleted_at IS NULL)
        ELSE EXISTS (SELECT 1 FROM segments sg
                     WHERE sg.id = a.automation_for AND sg.user_id = a.user_id AND sg.deleted_at IS NULL)
    END::boolean AS target_ok
FROM automations a WHERE a.id = @id;

-- name: SetAutomationLive :exec
-- A locked draft goes live, with its event.
WITH a AS (
    UPDATE automations au SET status = 1, live_at = now(), updated_at = now()
    WHERE au.id = @id AND au.status = 0
    RETURNING au.id, au.user_id, au.automation_name, au.automation_type
)
INSERT INTO events (user_id, kind, subject_type, subject_id, payload)
SELECT a.user_id, 'automation.set_live', 'automation', a.id,
    jsonb_build_object('automation_name', a.automation_name, 'automation_type', a.automation_type)
FROM a;

-- name: PauseAutomation :exec
-- A locked live automation goes back to 0, with its event.
WITH a AS (
    UPDATE automations au SET status = 0, updated_at = now()
    WHERE au.id = @id AND au.status = 1
    RETURNING au.id, au.user_id, au.automation_name
)
INSERT INTO events (user_id, kind, subject_type, subject_id, payload)
SELECT a.user_id, 'automation.paused', 'automation', a.id, jsonb_build_object('automation_name', a.automation_name)
FROM a;

-- name: LockAutomationForCopy :one
-- The automation a duplicate copies, held in place (its schedules too:
-- adding one locks it FOR UPDATE) while it is copied.
SELECT id FROM automations
WHERE utr = (@utr::text)::uuid AND user_id = @user_id AND deleted_at IS NULL
FOR SHARE;

-- name: DuplicateAutomation :one
-- A draft copy of an automation: its fields, a new utr, no live_at,
-- every counter at zero.
INSERT INTO automations (user_id, utr, automation_name, automation_type, automation_for, automation_for_table,
    exit_criteria, unsubscribe_group_id)
SELECT src.user_id, (@utr::text)::uuid, src.automation_name, src.automation_type, src.automation_for,
    src.automation_for_table, src.exit_criteria, src.unsubscribe_group_id
FROM automations src WHERE src.id = @id
RETURNING id;

-- name: DuplicateAutomationSchedules :exec
-- The live schedules of src copied to dst in their order, each with a new
-- utr.
INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject, waiting_period,
    waiting_type, preview_img, template_json, template_html)
SELECT s.user_id, @dst_id, gen_random_uuid(), s.sender_id, s.template_id, s.subject, s.waiting_period,
    s.waiting_type, s.preview_img, s.template_json, s.template_html
FROM automation_schedules s
WHERE s.automation_id = @src_id AND s.deleted_at IS NULL
ORDER BY s.id;

-- name: LockAutomationsByID :many
-- The live automations of the account among ids (distinct), locked in id
-- order.
SELECT id FROM automations
WHERE id = ANY(@ids::bigint[]) AND user_id = @user_id AND deleted_at IS NULL
ORDER BY id
FOR UPDATE;

-- name: DeleteAutomations :exec
-- Soft-deletes locked automations; their active enrollments leave
-- (state 2), so nothing more is sent for them.
WITH a AS (
    UPDATE automations au SET deleted_at = now(), updated_at = now()
    WHERE au.id = ANY(@ids::bigint[]) AND au.deleted_at IS NULL
    RETURNING au.id
)
UPDATE automation_enrollments e SET state = 2, step = NULL, due_at = NULL, updated_at = now()
FROM a WHERE e.automation_id = a.id AND e.state = 0;

-- name: CountAutomations :one
SELECT count(*) FROM automations WHERE user_id = @user_id AND deleted_at IS NULL;

-- name: AutomationIDByUTR :one
-- A live automation of the account, for its schedule list.
SELECT id FROM automations
WHERE utr = (@utr::text)::uuid AND user_id = @user_id AND deleted_at IS NULL;

-- name: CountAutomationSchedules :one
SELECT count(*) FROM automation_schedules WHERE automation_id = @automation_id AND deleted_at IS NULL;

-- name: CreateAutomationSchedule :exec
INSERT INTO automation_schedules (user_id, automation_id, utr, sender_id, template_id, subject, waiting_period,
    waiting_type, preview_img, template_json, template_html)
VALUES (@user_id, @automation_id, (@utr::text)::uuid, @sender_id, @template_id, @subject, @waiting_period,
    @waiting_type, @preview_img, @template_json, @template_html);

-- name: DeleteAutomationSchedule :execrows
-- Soft-deletes a live schedule of a live automation of the account.
UPDATE automation_schedules s SET deleted_at = now(), updated_at = now()
FROM automations a
WHERE s.utr = (@utr::text)::uuid AND s.user_id = @user_id AND s.deleted_at IS NULL
  AND a.id = s.automation_id AND a.deleted_at IS NULL;
