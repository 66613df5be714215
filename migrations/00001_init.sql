-- +goose Up

-- Accounts: the owners of every other record. The secret key is kept only as
-- its SHA-256.
CREATE TABLE accounts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text        NOT NULL,
    public_key  text        NOT NULL UNIQUE,
    secret_hash bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Geography: loaded from the embedded data set at start-up (internal/geo);
-- geo_version records which data set is loaded.
CREATE TABLE countries (
    id   integer PRIMARY KEY, -- ISO 3166-1 numeric
    iso2 char(2) NOT NULL UNIQUE,
    iso3 char(3) NOT NULL,
    name text    NOT NULL
);
CREATE INDEX countries_name_lc ON countries (lower(name));

CREATE TABLE states (
    id         integer PRIMARY KEY,
    country_id integer NOT NULL,
    code       text    NOT NULL,
    name       text    NOT NULL
);
CREATE INDEX states_country ON states (country_id);

CREATE TABLE cities (
    id         integer PRIMARY KEY, -- GeoNames id
    state_id   integer,
    country_id integer NOT NULL,
    name       text    NOT NULL
);

CREATE TABLE geo_version (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version   text    NOT NULL
);

-- +goose Down
DROP TABLE geo_version, cities, states, countries, accounts;
