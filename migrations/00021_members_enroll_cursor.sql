-- +goose Up

-- A custom automation's members are enrolled in chunks, each its own short
-- transaction (one statement for 1,000,000 members held the automation's
-- row for 13 s): members_enroll_after is where the next chunk starts (the
-- last email_lc of a contact type, or the last contact id of a segment, as
-- text; '' before the first chunk), NULL once every member is enrolled. A
-- stopped worker's enrollment resumes from it (the sweeper queues it).
ALTER TABLE automations ADD COLUMN members_enroll_after text;
CREATE INDEX automations_members_enrolling ON automations (id)
    WHERE automation_type = 2 AND status = 1 AND deleted_at IS NULL
      AND (members_enrolled_at IS NULL OR members_enroll_after IS NOT NULL);

-- +goose Down
DROP INDEX automations_members_enrolling;
ALTER TABLE automations DROP COLUMN members_enroll_after;
