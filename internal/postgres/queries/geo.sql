-- name: GeoVersion :one
SELECT version FROM geo_version;

-- name: SetGeoVersion :exec
INSERT INTO geo_version (version) VALUES (@version)
ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version;

-- name: CopyCountries :copyfrom
INSERT INTO countries (id, iso2, iso3, name) VALUES (@id, @iso2, @iso3, @name);

-- name: CopyStates :copyfrom
INSERT INTO states (id, country_id, code, name) VALUES (@id, @country_id, @code, @name);

-- name: CopyCities :copyfrom
INSERT INTO cities (id, state_id, country_id, name) VALUES (@id, @state_id, @country_id, @name);
