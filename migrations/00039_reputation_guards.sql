-- +goose Up

-- Reputation guards (docs/deliverability.md). A running single send is
-- paused (status stays 2, paused_at and paused_reason set) when its hard
-- bounces reach pause_bounce_rate of its attempted mails, once it has
-- attempted pause_bounce_after, or its complaints reach
-- pause_complaint_rate of its delivered mails, once it has delivered
-- pause_complaint_after. A rate of 0 turns that guard off. The defaults
-- follow the mailbox providers' published limits: 5 % hard bounces after
-- 1,000 attempts, 0.3 % complaints after 1,000 delivered.
ALTER TABLE accounts
    ADD COLUMN pause_bounce_rate     double precision NOT NULL DEFAULT 0.05  CHECK (pause_bounce_rate BETWEEN 0 AND 1),
    ADD COLUMN pause_bounce_after    integer          NOT NULL DEFAULT 1000  CHECK (pause_bounce_after >= 1),
    ADD COLUMN pause_complaint_rate  double precision NOT NULL DEFAULT 0.003 CHECK (pause_complaint_rate BETWEEN 0 AND 1),
    ADD COLUMN pause_complaint_after integer          NOT NULL DEFAULT 1000  CHECK (pause_complaint_after >= 1);

-- attempted: the send's mails with a final answer (delivered, bounced,
-- refused for good); complaints: its mails reported as spam. The guard_
-- counts are the send's counts when it was last resumed: the guards
-- judge what came after.
ALTER TABLE single_sends
    ADD COLUMN attempted        bigint NOT NULL DEFAULT 0,
    ADD COLUMN complaints       bigint NOT NULL DEFAULT 0,
    ADD COLUMN paused_at        timestamptz,
    ADD COLUMN paused_reason    text,
    ADD COLUMN guard_attempted  bigint NOT NULL DEFAULT 0,
    ADD COLUMN guard_bounces    bigint NOT NULL DEFAULT 0,
    ADD COLUMN guard_delivered  bigint NOT NULL DEFAULT 0,
    ADD COLUMN guard_complaints bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE single_sends DROP COLUMN paused_reason, DROP COLUMN paused_at, DROP COLUMN complaints, DROP COLUMN attempted,
    DROP COLUMN guard_attempted, DROP COLUMN guard_bounces, DROP COLUMN guard_delivered, DROP COLUMN guard_complaints;
ALTER TABLE accounts DROP COLUMN pause_complaint_after, DROP COLUMN pause_complaint_rate,
    DROP COLUMN pause_bounce_after, DROP COLUMN pause_bounce_rate;
