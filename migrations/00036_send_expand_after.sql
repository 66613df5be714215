-- +goose Up

-- A large send's audience is expanded in two steps: the addresses up to a
-- boundary at dispatch, so its first mails go within a second, then the
-- rest by a task of its own (docs/deliveries.md). expand_after is the
-- boundary while the rest is still to come (NULL: the audience is whole);
-- a send is not completed while it is set.
ALTER TABLE single_sends ADD COLUMN expand_after text;

-- +goose Down
ALTER TABLE single_sends DROP COLUMN expand_after;
