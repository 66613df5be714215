-- +goose Up

-- The addresses a send's audience leaves out (send_audience's NOT EXISTS
-- terms as a set): the account's global unsubscribes and the group's,
-- its hard bounces, and the addresses of the exclude lists. The console's
-- counts (CountListAudience, CountSegmentAudience) probe each of these in
-- the large list. A SQL function of one SELECT: the planner inlines it.
-- +goose StatementBegin
CREATE FUNCTION send_removed(user_id bigint, group_id bigint, exclude_type_ids bigint[], exclude_segment_ids bigint[])
RETURNS TABLE (email_lc text)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT u.email_lc FROM unsubscribes u
    WHERE u.user_id = send_removed.user_id AND COALESCE(u.unsubscribe_groups_id, 0) IN (0, send_removed.group_id)
    UNION
    SELECT b.email_lc FROM bounces b WHERE b.user_id = send_removed.user_id
    UNION
    SELECT e.email_lc FROM contacts e
    WHERE e.contact_type_id = ANY(send_removed.exclude_type_ids) AND e.user_id = send_removed.user_id AND e.deleted_at IS NULL
    UNION
    SELECT lower(COALESCE(ec.email, es.email)) FROM segment_entries es
    LEFT JOIN contacts ec ON ec.id = es.contact_id AND ec.deleted_at IS NULL
    WHERE es.segment_id = ANY(send_removed.exclude_segment_ids) AND es.user_id = send_removed.user_id
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION send_removed(bigint, bigint, bigint[], bigint[]);
