-- +goose Up

-- owner: the batch run that holds a range's lease. It renews the lease
-- while it sends and gives it back when it has recorded; a run whose lease
-- was taken over (it stalled past its lease) can neither renew nor give
-- back the new holder's.
ALTER TABLE delivery_ranges ADD COLUMN owner uuid NOT NULL DEFAULT gen_random_uuid();

-- +goose Down
ALTER TABLE delivery_ranges DROP COLUMN owner;
