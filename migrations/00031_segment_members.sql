-- +goose Up

-- A segment's matched contacts (its members) are kept apart from the
-- recipients stored by hand. Every contact write adds and removes
-- memberships, an import of a million contacts into a type with 100
-- segments about two million: a membership is a narrow row with two
-- indexes (its key, and the page order), where the shared row carried
-- the hand-stored fields, a second id index and a partial unique index.
-- Inserting 200,000 memberships took 710-790 ms that way and 460 ms this
-- way (docs/segments.md). Members take their ids from the same sequence
-- as the hand-stored recipients, so a recipient id names one row of
-- either kind.
CREATE TABLE segment_members (
    user_id    bigint      NOT NULL,
    segment_id bigint      NOT NULL,
    contact_id bigint      NOT NULL,
    id         bigint      NOT NULL DEFAULT nextval('segment_recipients_id_seq'),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (segment_id, contact_id)
);
-- A segment's list (by id), its count and a recipient found by id.
CREATE INDEX segment_members_page ON segment_members (segment_id, id);

INSERT INTO segment_members (user_id, segment_id, contact_id, id, created_at)
SELECT user_id, segment_id, contact_id, id, created_at FROM segment_recipients WHERE contact_id IS NOT NULL;
DELETE FROM segment_recipients WHERE contact_id IS NOT NULL;

DROP INDEX segment_recipients_contact;
DROP INDEX segment_recipients_manual;
ALTER TABLE segment_recipients DROP COLUMN contact_id;
CREATE UNIQUE INDEX segment_recipients_manual ON segment_recipients (segment_id, email_lc);

-- Every recipient of a segment: its members (contact_id set; names and
-- address are the contact's) and those stored by hand.
CREATE VIEW segment_entries AS
SELECT id, user_id, segment_id, contact_id, NULL::text AS first_name, NULL::text AS last_name,
       NULL::text AS email, NULL::text AS email_lc, created_at, created_at AS updated_at
FROM segment_members
UNION ALL
SELECT id, user_id, segment_id, NULL::bigint, first_name, last_name, email, email_lc, created_at, updated_at
FROM segment_recipients;

-- +goose Down
DROP VIEW segment_entries;
DROP INDEX segment_recipients_manual;
ALTER TABLE segment_recipients ADD COLUMN contact_id bigint;
CREATE UNIQUE INDEX segment_recipients_contact ON segment_recipients (segment_id, contact_id) WHERE contact_id IS NOT NULL;
CREATE UNIQUE INDEX segment_recipients_manual ON segment_recipients (segment_id, email_lc) WHERE contact_id IS NULL;
INSERT INTO segment_recipients (id, user_id, segment_id, contact_id, created_at, updated_at)
OVERRIDING SYSTEM VALUE
SELECT id, user_id, segment_id, contact_id, created_at, created_at FROM segment_members;
DROP TABLE segment_members;
