-- +goose Up

-- Test mails of the design editor waiting for the worker (task
-- design:test-send): the mail as it was in the editor when the test was
-- asked for (subject, preheader, HTML), made for contact_id's values
-- (NULL: the sample contact) from sender_id, to each of recipients; done
-- holds the addresses sent already, so a retry sends only the others. A
-- test mail counts in no statistic: it has no deliveries row, no event
-- and no tracked link. A row goes once its mails went, or after a day.
CREATE TABLE design_tests (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    sender_id  bigint      NOT NULL,
    contact_id bigint,
    subject    text        NOT NULL,
    preheader  text        NOT NULL DEFAULT '',
    html       text        NOT NULL,
    recipients text[]      NOT NULL,
    done       text[]      NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX design_tests_created ON design_tests (created_at);

-- +goose Down
DROP TABLE design_tests;
