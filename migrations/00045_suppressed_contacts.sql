-- +goose Up

-- The account's contacts whose address is suppressed, by id: one row per
-- contact and list that suppresses its address (list 0 the global
-- unsubscribe list, a group's id, -1 the hard bounces). The console's
-- count of a segment reads these ids for the segment's type and joins them
-- to its members, where it probed the type's address index once per
-- suppressed address (at a million contacts and 40,000 suppressed
-- addresses, 200-310 ms a count; docs/console.md). Triggers keep the rows:
-- a suppression added or removed maps its address to the live contacts
-- that have it, and contacts added, or moved to another address or type,
-- look their address up in the suppressions; a contact deleted loses its
-- rows.
CREATE TABLE suppressed_contacts (
    user_id         bigint NOT NULL,
    email_lc        text   NOT NULL,
    list            bigint NOT NULL,
    contact_type_id bigint NOT NULL,
    contact_id      bigint NOT NULL,
    PRIMARY KEY (contact_type_id, list, contact_id)
);
-- A suppression removed, or a contact moved, finds its rows by address.
CREATE INDEX suppressed_contacts_email ON suppressed_contacts (user_id, email_lc);

INSERT INTO suppressed_contacts (user_id, email_lc, list, contact_type_id, contact_id)
SELECT u.user_id, u.email_lc, COALESCE(u.unsubscribe_groups_id, 0), c.contact_type_id, c.id
FROM unsubscribes u JOIN contact_types t ON t.user_id = u.user_id
JOIN contacts c ON c.contact_type_id = t.id AND c.email_lc = u.email_lc AND c.deleted_at IS NULL
UNION
SELECT b.user_id, b.email_lc, -1, c.contact_type_id, c.id
FROM bounces b JOIN contact_types t ON t.user_id = b.user_id
JOIN contacts c ON c.contact_type_id = t.id AND c.email_lc = b.email_lc AND c.deleted_at IS NULL;
-- The counts join these by hash only when the planner knows how many a
-- type has.
ANALYZE suppressed_contacts;

-- A suppression's rows: statement triggers over the changed rows as a
-- set (an import or a send's bounces is one join, not a call per row).
-- +goose StatementBegin
CREATE FUNCTION suppressed_contacts_of_suppressions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        IF TG_TABLE_NAME = 'bounces' THEN
            DELETE FROM suppressed_contacts s USING old_rows o
            WHERE s.user_id = o.user_id AND s.email_lc = o.email_lc AND s.list = -1;
        ELSE
            DELETE FROM suppressed_contacts s USING old_rows o
            WHERE s.user_id = o.user_id AND s.email_lc = o.email_lc AND s.list = COALESCE(o.unsubscribe_groups_id, 0);
        END IF;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        IF TG_TABLE_NAME = 'bounces' THEN
            INSERT INTO suppressed_contacts (user_id, email_lc, list, contact_type_id, contact_id)
            SELECT n.user_id, n.email_lc, -1, c.contact_type_id, c.id
            FROM new_rows n JOIN contact_types t ON t.user_id = n.user_id
            JOIN contacts c ON c.contact_type_id = t.id AND c.email_lc = n.email_lc AND c.deleted_at IS NULL
            ON CONFLICT DO NOTHING;
        ELSE
            INSERT INTO suppressed_contacts (user_id, email_lc, list, contact_type_id, contact_id)
            SELECT n.user_id, n.email_lc, COALESCE(n.unsubscribe_groups_id, 0), c.contact_type_id, c.id
            FROM new_rows n JOIN contact_types t ON t.user_id = n.user_id
            JOIN contacts c ON c.contact_type_id = t.id AND c.email_lc = n.email_lc AND c.deleted_at IS NULL
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER unsubscribes_suppressed_insert AFTER INSERT ON unsubscribes
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_suppressions();
CREATE TRIGGER unsubscribes_suppressed_update AFTER UPDATE ON unsubscribes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_suppressions();
CREATE TRIGGER unsubscribes_suppressed_delete AFTER DELETE ON unsubscribes
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_suppressions();
CREATE TRIGGER bounces_suppressed_insert AFTER INSERT ON bounces
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_suppressions();
CREATE TRIGGER bounces_suppressed_update AFTER UPDATE ON bounces
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_suppressions();
CREATE TRIGGER bounces_suppressed_delete AFTER DELETE ON bounces
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_suppressions();

-- Contacts added: their addresses looked up in the account's suppressions,
-- one join per statement (an import of 200,000 contacts took no longer
-- with it: 2.1-2.5 s either way).
-- +goose StatementBegin
CREATE FUNCTION suppressed_contacts_of_new_contacts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO suppressed_contacts (user_id, email_lc, list, contact_type_id, contact_id)
    SELECT n.user_id, n.email_lc, COALESCE(u.unsubscribe_groups_id, 0), n.contact_type_id, n.id
    FROM new_rows n JOIN unsubscribes u ON u.user_id = n.user_id AND u.email_lc = n.email_lc
    WHERE n.deleted_at IS NULL
    UNION ALL
    SELECT n.user_id, n.email_lc, -1, n.contact_type_id, n.id
    FROM new_rows n JOIN bounces b ON b.user_id = n.user_id AND b.email_lc = n.email_lc
    WHERE n.deleted_at IS NULL
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER contacts_suppressed_insert AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_new_contacts();

-- A contact moved to another address or type, or deleted: an edit or a
-- deletion, so a row trigger; it costs nothing on the updates that do
-- neither (an import's).
-- +goose StatementBegin
CREATE FUNCTION suppressed_contacts_of_changed_contact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM suppressed_contacts s
    WHERE s.user_id = OLD.user_id AND s.email_lc = OLD.email_lc AND s.contact_id = OLD.id;
    IF NEW.deleted_at IS NULL THEN
        INSERT INTO suppressed_contacts (user_id, email_lc, list, contact_type_id, contact_id)
        SELECT NEW.user_id, NEW.email_lc, COALESCE(u.unsubscribe_groups_id, 0), NEW.contact_type_id, NEW.id
        FROM unsubscribes u WHERE u.user_id = NEW.user_id AND u.email_lc = NEW.email_lc
        UNION ALL
        SELECT NEW.user_id, NEW.email_lc, -1, NEW.contact_type_id, NEW.id
        FROM bounces b WHERE b.user_id = NEW.user_id AND b.email_lc = NEW.email_lc
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER contacts_suppressed_change AFTER UPDATE OF email, contact_type_id, deleted_at ON contacts FOR EACH ROW
    WHEN (OLD.email_lc IS DISTINCT FROM NEW.email_lc OR OLD.contact_type_id IS DISTINCT FROM NEW.contact_type_id
          OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION suppressed_contacts_of_changed_contact();

-- The exclude lists' addresses, send_removed's last terms, on their own:
-- a segment's count takes the suppressed contacts from the table above and
-- probes only these.
-- +goose StatementBegin
CREATE FUNCTION send_excluded(user_id bigint, exclude_type_ids bigint[], exclude_segment_ids bigint[])
RETURNS TABLE (email_lc text)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT e.email_lc FROM contacts e
    WHERE e.contact_type_id = ANY(send_excluded.exclude_type_ids) AND e.user_id = send_excluded.user_id AND e.deleted_at IS NULL
    UNION ALL
    SELECT lower(COALESCE(ec.email, es.email)) FROM segment_entries es
    LEFT JOIN contacts ec ON ec.id = es.contact_id AND ec.deleted_at IS NULL
    WHERE es.segment_id = ANY(send_excluded.exclude_segment_ids) AND es.user_id = send_excluded.user_id
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION send_removed(user_id bigint, group_id bigint, exclude_type_ids bigint[], exclude_segment_ids bigint[])
RETURNS TABLE (email_lc text)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT u.email_lc FROM unsubscribes u
    WHERE u.user_id = send_removed.user_id AND COALESCE(u.unsubscribe_groups_id, 0) IN (0, send_removed.group_id)
    UNION
    SELECT b.email_lc FROM bounces b WHERE b.user_id = send_removed.user_id
    UNION
    SELECT x.email_lc FROM send_excluded(send_removed.user_id, send_removed.exclude_type_ids, send_removed.exclude_segment_ids) x
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION send_removed(user_id bigint, group_id bigint, exclude_type_ids bigint[], exclude_segment_ids bigint[])
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
DROP FUNCTION send_excluded(bigint, bigint[], bigint[]);
DROP TRIGGER contacts_suppressed_change ON contacts;
DROP FUNCTION suppressed_contacts_of_changed_contact();
DROP TRIGGER contacts_suppressed_insert ON contacts;
DROP FUNCTION suppressed_contacts_of_new_contacts();
DROP TRIGGER bounces_suppressed_delete ON bounces;
DROP TRIGGER bounces_suppressed_update ON bounces;
DROP TRIGGER bounces_suppressed_insert ON bounces;
DROP TRIGGER unsubscribes_suppressed_delete ON unsubscribes;
DROP TRIGGER unsubscribes_suppressed_update ON unsubscribes;
DROP TRIGGER unsubscribes_suppressed_insert ON unsubscribes;
DROP FUNCTION suppressed_contacts_of_suppressions();
DROP TABLE suppressed_contacts;
