-- +goose Up

-- How long a schedule waits after the previous mail (instantly: 0).
-- +goose StatementBegin
CREATE FUNCTION schedule_wait(period integer, kind text) RETURNS interval
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE kind WHEN 'hours' THEN period * interval '1 hour'
                     WHEN 'days' THEN period * interval '1 day'
                     ELSE interval '0' END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION schedule_wait(integer, text);
