-- name: CreateSegment :one
-- A new segment, its rebuild to run (rebuild_next 0).
INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value, query_type, rebuild_next)
SELECT t.user_id, t.id, @segment_name::text, @select_field::text[], @select_operator::text[], @value::text[], sqlc.narg(query_type)::text, 0
FROM contact_types t
WHERE t.id = @contact_type_id AND t.user_id = @user_id AND t.deleted_at IS NULL
FOR SHARE OF t
RETURNING id, rebuild_gen;

-- name: UpdateSegment :one
-- New conditions: a new rebuild generation, to run from the first contact.
UPDATE segments s SET contact_type_id = t.id, segment_name = @segment_name, select_field = @select_field,
    select_operator = @select_operator, value = @value, query_type = sqlc.narg(query_type), updated_at = now(),
    rebuild_gen = s.rebuild_gen + 1, rebuild_next = 0
FROM contact_types t
WHERE s.id = @id AND s.user_id = @user_id AND s.deleted_at IS NULL
  AND t.id = (SELECT l.id FROM contact_types l
              WHERE l.id = @contact_type_id AND l.user_id = @user_id AND l.deleted_at IS NULL
              FOR SHARE)
RETURNING s.rebuild_gen;

-- name: RenameSegment :execrows
-- A change of name only: the members stay.
UPDATE segments SET segment_name = @segment_name, updated_at = now()
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: LockTypeForRebuild :exec
-- A rebuild step holds its type's writer lock exclusive: contact writers
-- (shared) in flight commit first and are seen by the step; later ones
-- wait and then re-evaluate against the new conditions. An advisory lock
-- because the lock manager queues requests in order: a FOR UPDATE row lock
-- waiting behind writers' FOR SHARE lets later FOR SHARE through, and a
-- busy type starved its rebuild.
SELECT pg_advisory_xact_lock(1954115685, mod(@id::bigint, 2147483647)::int);

-- name: RebuildState :one
-- A live segment's rebuild, its row locked for one step.
SELECT id, user_id, contact_type_id, select_field, select_operator, value, query_type, rebuild_gen, rebuild_next
FROM segments WHERE id = @id AND deleted_at IS NULL
FOR UPDATE;

-- name: RebuildStepEnd :one
-- The last contact id of the next step: the n-th live contact of the type
-- from lo on (none: the step runs to the end).
SELECT id FROM contacts
WHERE user_id = @user_id AND contact_type_id = @contact_type_id AND deleted_at IS NULL AND id >= @lo
ORDER BY id
OFFSET @n::bigint LIMIT 1;

-- name: SetRebuildNext :exec
UPDATE segments SET rebuild_next = sqlc.narg(next) WHERE id = @id;

-- name: RestartClockRebuilds :many
-- Segments whose conditions compare with the clock ("is within the last")
-- start a new rebuild once their last one began @every_seconds ago: members
-- leave as they age out and join as a future value comes due. One process
-- wins each restart (the row is updated once); PendingRebuilds then runs it.
UPDATE segments SET rebuild_gen = rebuild_gen + 1, rebuild_next = 0, rebuilt_at = now()
WHERE deleted_at IS NULL AND rebuild_next IS NULL
  AND 'is within the last' = ANY(select_operator)
  AND rebuilt_at < now() - make_interval(secs => @every_seconds::float8)
RETURNING id;

-- name: PendingRebuilds :many
SELECT id, user_id, rebuild_gen FROM segments
WHERE rebuild_next IS NOT NULL AND deleted_at IS NULL
ORDER BY id;

-- name: SegmentExists :one
SELECT EXISTS (SELECT 1 FROM segments WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL);

-- name: LockSegment :one
SELECT id, user_id, contact_type_id, segment_name, select_field, select_operator, value, query_type,
    deleted_at, created_at, updated_at
FROM segments WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL
FOR UPDATE;

-- name: SegmentByID :one
SELECT id, user_id, contact_type_id, segment_name, select_field, select_operator, value, query_type,
    deleted_at, created_at, updated_at
FROM segments WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: ListSegments :many
SELECT s.id, s.user_id, s.contact_type_id, s.segment_name, s.select_field, s.select_operator, s.value, s.query_type,
    s.deleted_at, s.created_at, s.updated_at,
    (SELECT COALESCE(sum(k.n), 0) FROM list_counts k
     WHERE k.user_id = s.user_id AND k.kind = 'segment' AND k.key = s.id)::bigint AS segment_emails_count
FROM segments s
WHERE s.user_id = @user_id AND s.deleted_at IS NULL
ORDER BY s.id
LIMIT sqlc.narg(row_limit)::bigint OFFSET @row_offset::bigint;

-- name: CountSegments :one
SELECT count(*) FROM segments WHERE user_id = @user_id AND deleted_at IS NULL;

-- name: LiveSegmentsOfTypes :many
SELECT id, contact_type_id, select_field, select_operator, value, query_type
FROM segments
WHERE user_id = @user_id AND contact_type_id = ANY(@type_ids::bigint[]) AND deleted_at IS NULL
ORDER BY id;

-- name: SegmentsUsingField :many
SELECT id, contact_type_id, select_field, select_operator, value, query_type
FROM segments
WHERE user_id = @user_id AND @field_id::text = ANY(select_field) AND deleted_at IS NULL
ORDER BY id;

-- name: DeleteSegment :execrows
UPDATE segments SET deleted_at = now()
WHERE id = @id AND user_id = @user_id AND deleted_at IS NULL;

-- name: DeleteSegmentRecipientsOf :one
-- A deleted segment's members and hand-stored recipients: how many.
WITH m AS (DELETE FROM segment_members sm WHERE sm.segment_id = @segment_id RETURNING 1),
h AS (DELETE FROM segment_recipients sr WHERE sr.segment_id = @segment_id RETURNING 1)
SELECT ((SELECT count(*) FROM m) + (SELECT count(*) FROM h))::bigint AS n;

-- name: DeleteTypeMemberships :many
-- The contacts of a deleted type leave every segment: how many per segment.
WITH d AS (
    DELETE FROM segment_members r
    WHERE r.segment_id IN (
        SELECT s.id FROM segments s WHERE s.user_id = @user_id AND s.contact_type_id = @contact_type_id)
    RETURNING r.segment_id
)
SELECT d.segment_id, count(*)::bigint AS n FROM d GROUP BY d.segment_id ORDER BY d.segment_id;

-- name: LeaveSegments :many
-- Deleted contacts leave the given segments (those of their types): one
-- statement for every segment, the contacts joined as a set. How many left
-- each segment.
WITH d AS (
    DELETE FROM segment_members r
    USING unnest(@contact_ids::bigint[]) AS x(id)
    WHERE r.segment_id = ANY(@segment_ids::bigint[]) AND r.contact_id = x.id
    RETURNING r.segment_id
)
SELECT d.segment_id, count(*)::bigint AS n FROM d GROUP BY d.segment_id ORDER BY d.segment_id;

-- name: StoreSegmentRecipient :one
INSERT INTO segment_recipients (user_id, segment_id, first_name, last_name, email)
SELECT s.user_id, s.id, @first_name::text, @last_name::text, @email::text
FROM segments s
WHERE s.id = @segment_id AND s.user_id = @user_id AND s.deleted_at IS NULL
ON CONFLICT (segment_id, email_lc) DO UPDATE SET
    first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name, email = EXCLUDED.email, updated_at = now()
RETURNING id, (xmax::text = $$0$$) AS inserted;

-- name: DeleteSegmentRecipient :many
-- Answers the recipient's segment (no row: nothing deleted). A member is
-- found by (segment, id) among the account's live segments: members have
-- no index of their id alone.
WITH live AS (SELECT g.id FROM segments g WHERE g.user_id = @user_id AND g.deleted_at IS NULL),
h AS (
    DELETE FROM segment_recipients r USING live
    WHERE r.id = @id AND r.user_id = @user_id AND r.segment_id = live.id
    RETURNING r.segment_id
), m AS (
    DELETE FROM segment_members sm USING live
    WHERE sm.id = @id AND sm.user_id = @user_id AND sm.segment_id = live.id
    RETURNING sm.segment_id
)
SELECT h.segment_id FROM h UNION ALL SELECT m.segment_id FROM m;
