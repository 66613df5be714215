-- +goose Up

-- Segments: a contact type narrowed by conditions. select_field,
-- select_operator and value are kept as the API shows them (value holds
-- each condition's operands in order); query_type is NULL ("and"), "and"
-- or "or".
CREATE TABLE segments (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         bigint      NOT NULL REFERENCES accounts (id),
    contact_type_id bigint      NOT NULL REFERENCES contact_types (id),
    segment_name    text        NOT NULL,
    select_field    text[]      NOT NULL,
    select_operator text[]      NOT NULL,
    value           text[]      NOT NULL,
    query_type      text,
    deleted_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX segments_user ON segments (user_id, id) WHERE deleted_at IS NULL;
CREATE INDEX segments_type ON segments (contact_type_id) WHERE deleted_at IS NULL;

-- Segment recipients: the matching contacts (contact_id set; their names
-- and address are read from the contact) kept current as contacts change,
-- plus recipients stored by hand (contact_id NULL, with their own fields).
-- No foreign keys: rebuilding a million-member segment is bulk work.
CREATE TABLE segment_recipients (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    bigint      NOT NULL,
    segment_id bigint      NOT NULL,
    contact_id bigint,
    first_name text,
    last_name  text,
    email      text,
    email_lc   text        GENERATED ALWAYS AS (lower(email)) STORED,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX segment_recipients_contact ON segment_recipients (segment_id, contact_id) WHERE contact_id IS NOT NULL;
CREATE UNIQUE INDEX segment_recipients_manual ON segment_recipients (segment_id, email_lc) WHERE contact_id IS NULL;
-- A segment's list, its count and its delete.
CREATE INDEX segment_recipients_segment ON segment_recipients (segment_id, id);

-- +goose Down
DROP TABLE segment_recipients, segments;
