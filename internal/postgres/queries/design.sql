-- name: ScheduleDesign :one
-- A live schedule of a live automation of the account, with what the
-- design editor shows and renders: its template, subject and sender
-- (places by name; has_sender false when the sender is gone).
SELECT s.utr::text AS utr, s.subject, s.sender_id, s.template_id, s.template_json, s.template_html,
    a.automation_name, a.utr::text AS automation_utr,
    (se.id IS NOT NULL)::boolean AS has_sender, COALESCE(se.from_name, '')::text AS from_name,
    COALESCE(se.from_email, '')::text AS from_email, COALESCE(se.reply_to_email, '')::text AS reply_to_email,
    TRIM(BOTH ' ' FROM COALESCE(se.company_address, '') || ' ' || COALESCE(se.company_address2, ''))::text AS company_address,
    COALESCE(ci.name, '')::text AS city, COALESCE(st.name, '')::text AS state, COALESCE(co.name, '')::text AS country
FROM automation_schedules s
JOIN automations a ON a.id = s.automation_id AND a.deleted_at IS NULL
LEFT JOIN senders se ON se.id = s.sender_id AND se.user_id = s.user_id AND se.deleted_at IS NULL
LEFT JOIN cities ci ON ci.id = se.city_id
LEFT JOIN states st ON st.id = se.state_id
LEFT JOIN countries co ON co.id = se.country_id
WHERE s.utr = (@utr::text)::uuid AND s.user_id = @user_id AND s.deleted_at IS NULL;

-- name: SaveScheduleDesign :execrows
-- A live schedule of a live automation of the account takes a design: the
-- automation's later mails are made from it.
UPDATE automation_schedules s
SET template_json = sqlc.narg(template_json), template_html = @template_html::text, updated_at = now()
FROM automations a
WHERE s.utr = (@utr::text)::uuid AND s.user_id = @user_id AND s.deleted_at IS NULL
  AND a.id = s.automation_id AND a.deleted_at IS NULL;

-- name: SaveSendDesign :exec
-- A locked draft or ready send takes a design; its status and version
-- stay (a ready send's dispatch reads the template when it starts).
UPDATE single_sends
SET template_json = sqlc.narg(template_json), template_html = @template_html::text, updated_at = now()
WHERE id = @id;

-- name: ContactRecipient :one
-- A live contact of the account by address (the first made, when several
-- contact types hold it), with what a mail shows of it. Found through
-- each of the account's contact types' (type, address) index.
SELECT c.id, c.email, c.first_name, c.last_name, COALESCE(c.alt_email, '')::text AS alt_email,
    COALESCE(co.name, '')::text AS country, c.state, c.city, c.address_line1, c.address_line2,
    c.state_province_region, c.postal_code, c.custom::text AS custom
FROM contacts c
LEFT JOIN countries co ON co.id = c.country
WHERE c.contact_type_id IN (SELECT t.id FROM contact_types t WHERE t.user_id = @user_id AND t.deleted_at IS NULL)
  AND c.email_lc = lower(@email::text) AND c.user_id = @user_id AND c.deleted_at IS NULL
ORDER BY c.id
LIMIT 1;

-- name: ContactRecipientByID :one
-- A live contact of the account by id, as ContactRecipient reads it.
SELECT c.id, c.email, c.first_name, c.last_name, COALESCE(c.alt_email, '')::text AS alt_email,
    COALESCE(co.name, '')::text AS country, c.state, c.city, c.address_line1, c.address_line2,
    c.state_province_region, c.postal_code, c.custom::text AS custom
FROM contacts c
LEFT JOIN countries co ON co.id = c.country
WHERE c.id = @id AND c.user_id = @user_id AND c.deleted_at IS NULL;

-- name: CreateDesignTest :one
INSERT INTO design_tests (user_id, sender_id, contact_id, subject, preheader, html, recipients)
VALUES (@user_id, @sender_id, sqlc.narg(contact_id), @subject, @preheader, @html, @recipients::text[])
RETURNING id;

-- name: DesignTest :one
-- A test mail waiting to go, with its sender as a send's (places by name;
-- has_sender false when it is gone).
SELECT t.id, t.user_id, t.contact_id, t.subject, t.preheader, t.html, t.recipients, t.done,
    (se.id IS NOT NULL)::boolean AS has_sender, COALESCE(se.from_name, '')::text AS from_name,
    COALESCE(se.from_email, '')::text AS from_email, COALESCE(se.reply_to_email, '')::text AS reply_to_email,
    TRIM(BOTH ' ' FROM COALESCE(se.company_address, '') || ' ' || COALESCE(se.company_address2, ''))::text AS company_address,
    COALESCE(ci.name, '')::text AS city, COALESCE(st.name, '')::text AS state, COALESCE(co.name, '')::text AS country
FROM design_tests t
LEFT JOIN senders se ON se.id = t.sender_id AND se.user_id = t.user_id AND se.deleted_at IS NULL
LEFT JOIN cities ci ON ci.id = se.city_id
LEFT JOIN states st ON st.id = se.state_id
LEFT JOIN countries co ON co.id = se.country_id
WHERE t.id = @id;

-- name: DesignTestSent :exec
-- One address of a test mail went (or was refused for good).
UPDATE design_tests SET done = array_append(done, @email::text) WHERE id = @id;

-- name: DeleteDesignTests :exec
-- A test mail whose addresses are all done, and any older than a day.
DELETE FROM design_tests WHERE id = @id OR created_at < now() - interval '1 day';

-- name: LockMediaUploads :exec
-- Holds the account's uploads still until the transaction ends: the quota
-- check and the insert are one step.
SELECT pg_advisory_xact_lock(1835361633, mod(@user_id::bigint, 2147483647)::int);

-- name: MediaUploaded :one
-- The bytes of the account's uploads, and whether key is among them.
SELECT COALESCE(sum(bytes), 0)::bigint AS used, COALESCE(bool_or(key = @key), false)::bool AS has
FROM media_uploads WHERE user_id = @user_id;

-- name: AddMediaUpload :exec
INSERT INTO media_uploads (user_id, key, bytes) VALUES (@user_id, @key, @bytes);
