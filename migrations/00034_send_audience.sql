-- +goose Up

-- The audience of a single send, the one definition of who gets it: every
-- live contact of the target contact types and every member of the target
-- segments (a member stored by hand has no contact), one per lower-cased
-- address, minus the exclude lists' addresses, the account's global
-- unsubscribes and the send's group, and hard bounces. list_key is the
-- first list (in key order) the address came from. The expansion inserts
-- these rows (ExpandSend) and the console's compose page counts them
-- (CountAudience), so the count is the send's by construction. A SQL
-- function of one SELECT, STABLE and not STRICT: the planner inlines it
-- into each caller and plans the whole statement with its arguments, as
-- when the SELECT was written inside ExpandSend.
-- +goose StatementBegin
CREATE FUNCTION send_audience(user_id bigint, type_ids bigint[], segment_ids bigint[], group_id bigint,
    exclude_type_ids bigint[], exclude_segment_ids bigint[])
RETURNS TABLE (contact_id bigint, segment_recipient_id bigint, email text, email_lc text, list_key text)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT DISTINCT ON (x.email_lc) x.contact_id, x.segment_recipient_id, x.email, x.email_lc, x.list_key
    FROM (
        SELECT c.id AS contact_id, NULL::bigint AS segment_recipient_id, c.email, c.email_lc,
               'contacts_' || c.contact_type_id AS list_key
        FROM contacts c
        WHERE c.user_id = send_audience.user_id AND c.contact_type_id = ANY(send_audience.type_ids) AND c.deleted_at IS NULL
        UNION ALL
        SELECT c.id, CASE WHEN sr.contact_id IS NULL THEN sr.id END, COALESCE(c.email, sr.email),
               lower(COALESCE(c.email, sr.email)), 'segments_' || sr.segment_id
        FROM segment_entries sr
        LEFT JOIN contacts c ON c.id = sr.contact_id AND c.deleted_at IS NULL
        WHERE sr.user_id = send_audience.user_id AND sr.segment_id = ANY(send_audience.segment_ids)
          AND (sr.contact_id IS NULL OR c.id IS NOT NULL) AND COALESCE(c.email, sr.email) IS NOT NULL
    ) x
    WHERE NOT EXISTS (SELECT 1 FROM unsubscribes u
                      WHERE u.user_id = send_audience.user_id AND u.email_lc = x.email_lc
                        AND COALESCE(u.unsubscribe_groups_id, 0) IN (0, send_audience.group_id))
      AND NOT EXISTS (SELECT 1 FROM bounces b WHERE b.user_id = send_audience.user_id AND b.email_lc = x.email_lc)
      AND NOT EXISTS (SELECT 1 FROM contacts e
                      WHERE e.contact_type_id = ANY(send_audience.exclude_type_ids) AND e.user_id = send_audience.user_id
                        AND e.email_lc = x.email_lc AND e.deleted_at IS NULL)
      AND NOT EXISTS (SELECT 1 FROM segment_entries es
                      LEFT JOIN contacts ec ON ec.id = es.contact_id AND ec.deleted_at IS NULL
                      WHERE es.segment_id = ANY(send_audience.exclude_segment_ids) AND es.user_id = send_audience.user_id
                        AND lower(COALESCE(ec.email, es.email)) = x.email_lc)
    ORDER BY x.email_lc, x.list_key, x.contact_id NULLS LAST
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION send_audience(bigint, bigint[], bigint[], bigint, bigint[], bigint[]);
