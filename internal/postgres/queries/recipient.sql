-- name: RecipientsByID :many
-- The live contacts of the account among ids, with what a mail needs of
-- them: reserved fields (the country by name) and custom values.
SELECT c.id, c.email, c.first_name, c.last_name, COALESCE(c.alt_email, '')::text AS alt_email,
    COALESCE(co.name, '')::text AS country, c.state, c.city, c.address_line1, c.address_line2,
    c.state_province_region, c.postal_code, c.custom::text AS custom
FROM unnest(@ids::bigint[]) AS x(id)
JOIN contacts c ON c.id = x.id
LEFT JOIN countries co ON co.id = c.country
WHERE c.user_id = @user_id AND c.deleted_at IS NULL
ORDER BY c.id;
