-- +goose Up

-- The account's contacts whose address is suppressed, by id: one row per
-- contact and list that suppresses its address (list 0 the global
-- unsubscribe list, a group's id, -1 the hard bounces). The console's
-- counts of a contact type and of a segment read these ids for the type
-- (and join them to the segment's members), where they probed the type's
-- address index once per suppressed address (at a million contacts and
-- 40,000 suppressed addresses, 200-310 ms a segment's count;
-- docs/console.md). Triggers keep the rows: a suppression added or
-- removed maps its address to the live contacts that have it, and
-- contacts added, or moved to another address or type, look their address
-- up in the suppressions; a contact deleted loses its rows.
--
-- Each trigger reads the other table as it is when it runs: a contact and
-- a suppression of its address written by two transactions that overlap
-- see neither the other's row, and that contact's row is then missing (or
-- left over) until its address or the suppression changes again
-- (docs/console.md). Only the console's count reads these rows; the
-- expansion reads the suppressions themselves.
--
-- The writers of the three tables wait while this runs: a write committed
-- between the fill below and the triggers would be in neither.
LOCK TABLE contacts, unsubscribes, bounces IN SHARE ROW EXCLUSIVE MODE;

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

-- The statement triggers work over the changed rows as a set (an import,
-- or a send's bounces, is one join, not a call per row). Their statements
-- are planned at each call (EXECUTE), for the number of rows it has: a
-- plan kept from a first call of one row probed per row on a later batch
-- of thousands (5.6 s for 5,000 bounces in an account of 500 contact
-- types), and one kept from a batch read every contact on a later single
-- row.

-- A suppression's rows. A deleted contact type's contacts are deleted
-- with it (contact_types_user holds the live types).
-- +goose StatementBegin
CREATE FUNCTION suppressed_contacts_of_suppressions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    list text := CASE WHEN TG_TABLE_NAME = 'bounces' THEN '-1' ELSE 'COALESCE(%1$s.unsubscribe_groups_id, 0)' END;
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        EXECUTE format('DELETE FROM suppressed_contacts s USING old_rows o
            WHERE s.user_id = o.user_id AND s.email_lc = o.email_lc AND s.list = ' || list, 'o');
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        EXECUTE format('INSERT INTO suppressed_contacts (user_id, email_lc, list, contact_type_id, contact_id)
            SELECT n.user_id, n.email_lc, ' || list || ', c.contact_type_id, c.id
            FROM new_rows n JOIN contact_types t ON t.user_id = n.user_id AND t.deleted_at IS NULL
            JOIN contacts c ON c.contact_type_id = t.id AND c.email_lc = n.email_lc AND c.deleted_at IS NULL
            ON CONFLICT DO NOTHING', 'n');
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

-- The lists that suppress an account's address (as suppressed_contacts
-- numbers them), each probed by its index.
-- +goose StatementBegin
CREATE FUNCTION suppressions_of(user_id bigint, email_lc text) RETURNS TABLE (list bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT COALESCE(u.unsubscribe_groups_id, 0) FROM unsubscribes u
    WHERE u.user_id = suppressions_of.user_id AND u.email_lc = suppressions_of.email_lc
    UNION ALL
    SELECT -1 FROM bounces b WHERE b.user_id = suppressions_of.user_id AND b.email_lc = suppressions_of.email_lc
$$;
-- +goose StatementEnd

-- Contacts added: their addresses looked up in the account's suppressions
-- (an insert of 200,000 contacts into an account with 35,000 suppressed
-- addresses took 2.1-2.5 s with this trigger and without). A few rows (a
-- contact added through the API) take a plan kept from the first such
-- call, which probes the suppressions per row: planned at each call, one
-- added contact took 2.5-2.6 ms instead of 1.7-1.9. Contacts removed
-- outright (nothing in the service does; a contact is deleted by
-- deleted_at) lose their rows.
-- +goose StatementBegin
CREATE FUNCTION suppressed_contacts_of_contacts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    add text := 'INSERT INTO suppressed_contacts (user_id, email_lc, list, contact_type_id, contact_id)
        SELECT n.user_id, n.email_lc, COALESCE(u.unsubscribe_groups_id, 0), n.contact_type_id, n.id
        FROM new_rows n JOIN unsubscribes u ON u.user_id = n.user_id AND u.email_lc = n.email_lc
        WHERE n.deleted_at IS NULL
        UNION ALL
        SELECT n.user_id, n.email_lc, -1, n.contact_type_id, n.id
        FROM new_rows n JOIN bounces b ON b.user_id = n.user_id AND b.email_lc = n.email_lc
        WHERE n.deleted_at IS NULL
        ON CONFLICT DO NOTHING';
BEGIN
    IF TG_OP = 'DELETE' THEN
        EXECUTE 'DELETE FROM suppressed_contacts s USING old_rows o
            WHERE s.user_id = o.user_id AND s.email_lc = o.email_lc AND s.contact_id = o.id';
    ELSIF EXISTS (SELECT 1 FROM new_rows OFFSET 16) THEN
        EXECUTE add;
    ELSE
        -- at most 16 rows: one address at a time, a plan kept
        INSERT INTO suppressed_contacts (user_id, email_lc, list, contact_type_id, contact_id)
        SELECT n.user_id, n.email_lc, x.list, n.contact_type_id, n.id
        FROM new_rows n, LATERAL suppressions_of(n.user_id, n.email_lc) x
        WHERE n.deleted_at IS NULL
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER contacts_suppressed_insert AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_contacts();
CREATE TRIGGER contacts_suppressed_delete AFTER DELETE ON contacts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_contacts();

-- A contact moved to another address or type, or deleted: an edit or a
-- deletion, so a row trigger; it costs nothing on the updates that do
-- neither (an import's). Soft-deleting 200,000 contacts took 2.2-2.6 s
-- with it and 1.3-1.4 s without.
-- +goose StatementBegin
CREATE FUNCTION suppressed_contacts_of_changed_contact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM suppressed_contacts s
    WHERE s.user_id = OLD.user_id AND s.email_lc = OLD.email_lc AND s.contact_id = OLD.id;
    IF NEW.deleted_at IS NULL THEN
        INSERT INTO suppressed_contacts (user_id, email_lc, list, contact_type_id, contact_id)
        SELECT NEW.user_id, NEW.email_lc, x.list, NEW.contact_type_id, NEW.id FROM suppressions_of(NEW.user_id, NEW.email_lc) x
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER contacts_suppressed_change AFTER UPDATE OF email, contact_type_id, deleted_at ON contacts FOR EACH ROW
    WHEN (OLD.email_lc IS DISTINCT FROM NEW.email_lc OR OLD.contact_type_id IS DISTINCT FROM NEW.contact_type_id
          OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION suppressed_contacts_of_changed_contact();

-- A table emptied outright takes its rows with it.
-- +goose StatementBegin
CREATE FUNCTION suppressed_contacts_of_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    CASE TG_TABLE_NAME
        WHEN 'contacts' THEN DELETE FROM suppressed_contacts;
        WHEN 'bounces' THEN DELETE FROM suppressed_contacts WHERE list = -1;
        ELSE DELETE FROM suppressed_contacts WHERE list >= 0;
    END CASE;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER contacts_suppressed_truncate AFTER TRUNCATE ON contacts
    FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_truncate();
CREATE TRIGGER unsubscribes_suppressed_truncate AFTER TRUNCATE ON unsubscribes
    FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_truncate();
CREATE TRIGGER bounces_suppressed_truncate AFTER TRUNCATE ON bounces
    FOR EACH STATEMENT EXECUTE FUNCTION suppressed_contacts_of_truncate();

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

-- The live contacts of contact type type_id whose address an exclude list
-- has: each address probed in the type's index (index only), in the
-- index's order. The addresses are sorted bytewise (COLLATE "C"): the
-- order only keeps the probes near each other, and a byte compare costs a
-- fraction of the database collation's. LIMIT keeps a probe a nested loop
-- (a hash join read all of the type's rows). The planner inlines it.
-- +goose StatementBegin
CREATE FUNCTION excluded_contacts(user_id bigint, type_id bigint, exclude_type_ids bigint[], exclude_segment_ids bigint[])
RETURNS TABLE (id bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT hit.id
    FROM (SELECT r.email_lc FROM send_excluded(excluded_contacts.user_id, excluded_contacts.exclude_type_ids,
                                               excluded_contacts.exclude_segment_ids) AS r(email_lc)
          ORDER BY r.email_lc COLLATE "C") r,
    LATERAL (SELECT c.id FROM contacts c
             WHERE c.contact_type_id = excluded_contacts.type_id AND c.email_lc = r.email_lc AND c.deleted_at IS NULL
             LIMIT 1) hit
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
DROP FUNCTION excluded_contacts(bigint, bigint, bigint[], bigint[]);
DROP FUNCTION send_excluded(bigint, bigint[], bigint[]);
DROP TRIGGER bounces_suppressed_truncate ON bounces;
DROP TRIGGER unsubscribes_suppressed_truncate ON unsubscribes;
DROP TRIGGER contacts_suppressed_truncate ON contacts;
DROP FUNCTION suppressed_contacts_of_truncate();
DROP TRIGGER contacts_suppressed_change ON contacts;
DROP FUNCTION suppressed_contacts_of_changed_contact();
DROP TRIGGER contacts_suppressed_delete ON contacts;
DROP TRIGGER contacts_suppressed_insert ON contacts;
DROP FUNCTION suppressed_contacts_of_contacts();
DROP FUNCTION suppressions_of(bigint, text);
DROP TRIGGER bounces_suppressed_delete ON bounces;
DROP TRIGGER bounces_suppressed_update ON bounces;
DROP TRIGGER bounces_suppressed_insert ON bounces;
DROP TRIGGER unsubscribes_suppressed_delete ON unsubscribes;
DROP TRIGGER unsubscribes_suppressed_update ON unsubscribes;
DROP TRIGGER unsubscribes_suppressed_insert ON unsubscribes;
DROP FUNCTION suppressed_contacts_of_suppressions();
DROP TABLE suppressed_contacts;
