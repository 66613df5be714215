-- +goose Up

-- Automations: drips that follow a contact over time (docs/automations.md).
-- automation_type 1 welcome (enrolls contacts that join the target after
-- set-live), 2 custom (also every member at set-live). automation_for is a
-- contact type id (automation_for_table 'contacts_') or a segment id
-- ('segments_'). status 0 draft or paused, 1 live. The counters are the
-- sums of its runs' (below), kept by the engine.
CREATE TABLE automations (
    id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id              bigint      NOT NULL REFERENCES accounts (id),
    utr                  uuid        NOT NULL UNIQUE,
    automation_name      text        NOT NULL,
    automation_type      smallint    NOT NULL CHECK (automation_type IN (1, 2)),
    automation_for       bigint      NOT NULL,
    automation_for_table text        NOT NULL CHECK (automation_for_table IN ('contacts_', 'segments_')),
    exit_criteria        smallint    NOT NULL DEFAULT 0 CHECK (exit_criteria IN (0, 1)),
    unsubscribe_group_id bigint,
    status               smallint    NOT NULL DEFAULT 0 CHECK (status IN (0, 1)),
    live_at              timestamptz,
    total_triggered      bigint      NOT NULL DEFAULT 0,
    total_delivered      bigint      NOT NULL DEFAULT 0,
    total_unique_opens   bigint      NOT NULL DEFAULT 0,
    total_opens          bigint      NOT NULL DEFAULT 0,
    total_bounces        bigint      NOT NULL DEFAULT 0,
    total_unsubscribe    bigint      NOT NULL DEFAULT 0,
    deleted_at           timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX automations_user ON automations (user_id, id) WHERE deleted_at IS NULL;
-- Enrollment's question on every contact write: the live automations of a
-- target.
CREATE INDEX automations_live_target ON automations (automation_for_table, automation_for)
    WHERE status = 1 AND deleted_at IS NULL;

-- The mails of an automation, in creation (id) order; waiting_type
-- instantly, hours or days.
CREATE TABLE automation_schedules (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id        bigint      NOT NULL,
    automation_id  bigint      NOT NULL REFERENCES automations (id),
    utr            uuid        NOT NULL UNIQUE,
    sender_id      bigint      NOT NULL,
    template_id    bigint      NOT NULL,
    subject        text        NOT NULL,
    waiting_period integer     NOT NULL,
    waiting_type   text        NOT NULL CHECK (waiting_type IN ('instantly', 'hours', 'days')),
    preview_img    text        NOT NULL DEFAULT '',
    template_json  text,
    template_html  text,
    deleted_at     timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX automation_schedules_automation ON automation_schedules (automation_id, id) WHERE deleted_at IS NULL;

-- Enrollments: a contact following an automation. step is the schedule
-- to send next (NULL: done), due_at when. state 0 active, 1 done, 2 left
-- (exit criteria, unsubscribed, bounced, deleted). At most one active
-- enrollment per contact and automation.
CREATE TABLE automation_enrollments (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    automation_id bigint      NOT NULL,
    user_id       bigint      NOT NULL,
    contact_id    bigint      NOT NULL,
    step          bigint,
    due_at        timestamptz,
    state         smallint    NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX automation_enrollments_active ON automation_enrollments (automation_id, contact_id) WHERE state = 0;
-- The stepper's question: active enrollments that are due.
CREATE INDEX automation_enrollments_due ON automation_enrollments (due_at) WHERE state = 0;

-- An automation's mails go out through the single-send engine: each
-- stepping pass of a schedule is a run, a row of single_sends with these
-- set (status 2 from birth, never shown by the single-send API), so that
-- deliveries, batches, tracking, recovery and fairness are one engine.
ALTER TABLE single_sends ADD COLUMN automation_id bigint, ADD COLUMN automation_schedule_id bigint;
DROP INDEX single_sends_user;
CREATE INDEX single_sends_user ON single_sends (user_id, id) WHERE deleted_at IS NULL AND automation_id IS NULL;

-- +goose Down
DROP INDEX single_sends_user;
CREATE INDEX single_sends_user ON single_sends (user_id, id) WHERE deleted_at IS NULL;
ALTER TABLE single_sends DROP COLUMN automation_schedule_id, DROP COLUMN automation_id;
DROP TABLE automation_enrollments, automation_schedules, automations;
