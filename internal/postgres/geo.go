package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/geo"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// geoLockID serializes geography loads across processes.
const geoLockID = 0x6d61696c67656f // "mailgeo"

// SyncGeo loads the geography data set into its tables unless that version
// is already there. One transaction under an advisory lock: processes
// starting together load it once, and readers never see a half-loaded set.
func (d *DB) SyncGeo(ctx context.Context, s *geo.Set) error {
	return d.InTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(geoLockID)); err != nil {
			return err
		}
		v, err := q.GeoVersion(ctx)
		if err == nil && v == s.Version {
			return nil
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if _, err := tx.Exec(ctx, "TRUNCATE countries, states, cities"); err != nil {
			return err
		}
		countries := make([]db.CopyCountriesParams, len(s.Countries))
		for i, c := range s.Countries {
			countries[i] = db.CopyCountriesParams{ID: c.ID, Iso2: c.ISO2, Iso3: c.ISO3, Name: c.Name}
		}
		states := make([]db.CopyStatesParams, len(s.States))
		for i, st := range s.States {
			states[i] = db.CopyStatesParams{ID: st.ID, CountryID: st.CountryID, Code: st.Code, Name: st.Name}
		}
		cities := make([]db.CopyCitiesParams, len(s.Cities))
		for i, c := range s.Cities {
			var sid *int32
			if c.StateID != 0 {
				sid = &c.StateID
			}
			cities[i] = db.CopyCitiesParams{ID: c.ID, StateID: sid, CountryID: c.CountryID, Name: c.Name}
		}
		if _, err := q.CopyCountries(ctx, countries); err != nil {
			return fmt.Errorf("postgres: load countries: %w", err)
		}
		if _, err := q.CopyStates(ctx, states); err != nil {
			return fmt.Errorf("postgres: load states: %w", err)
		}
		if _, err := q.CopyCities(ctx, cities); err != nil {
			return fmt.Errorf("postgres: load cities: %w", err)
		}
		d.log.Info("geography loaded", "version", s.Version, "countries", len(countries), "states", len(states), "cities", len(cities))
		return q.SetGeoVersion(ctx, s.Version)
	})
}
