-- +goose Up

-- The images each account uploaded in the design editor, by their content
-- key (an image uploaded twice is one row), so an account's images are
-- held to MEDIA_QUOTA_BYTES. Images are not deleted: mails already sent
-- show them from {PUBLIC_URL}/media/{key} (docs/media.md).
CREATE TABLE media_uploads (
    user_id    bigint      NOT NULL,
    key        text        NOT NULL,
    bytes      bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
);

-- +goose Down
DROP TABLE media_uploads;
