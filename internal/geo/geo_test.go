package geo_test

import (
	"testing"

	"github.com/mailroom/mailroom/internal/geo"
)

// TestEveryCityHasAStateOfItsCountry checks the whole embedded data set, not
// a sample: every city lies in a known country; every city of a country with
// ISO 3166-2 subdivisions has a state, and every state a city names exists
// and belongs to the city's own country. Only cities of countries without
// subdivisions (Puerto Rico, Hong Kong, ...) may have no state.
func TestEveryCityHasAStateOfItsCountry(t *testing.T) {
	t.Parallel()
	s, err := geo.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cities) < 100000 {
		t.Fatalf("only %d cities", len(s.Cities))
	}
	hasStates := map[int32]bool{}
	for _, st := range s.States {
		if _, ok := s.Country(st.CountryID); !ok {
			t.Errorf("state %+v: unknown country", st)
		}
		hasStates[st.CountryID] = true
	}

	var withState, noSubdivisions, bad int
	fail := func(format string, args ...any) {
		bad++
		if bad <= 20 {
			t.Errorf(format, args...)
		}
	}
	for _, c := range s.Cities {
		if _, ok := s.Country(c.CountryID); !ok {
			fail("city %+v: unknown country", c)
			continue
		}
		if c.StateID == 0 {
			if hasStates[c.CountryID] {
				fail("city %+v has no state although its country has subdivisions", c)
			}
			noSubdivisions++
			continue
		}
		st, ok := s.State(c.StateID)
		switch {
		case !ok:
			fail("city %+v: state %d does not exist", c, c.StateID)
		case st.CountryID != c.CountryID:
			fail("city %+v lies in state %+v of another country", c, st)
		default:
			withState++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d cities fail", bad, len(s.Cities))
	}
	t.Logf("%d cities with a state, %d in countries without subdivisions", withState, noSubdivisions)
}

// TestCityStates spot-checks the state of cities placed by each method of the
// generator (docs/geography.md).
func TestCityStates(t *testing.T) {
	t.Parallel()
	s, err := geo.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   int32
		name string
		code string // "" = no state
	}{
		{5368361, "Los Angeles", "US-CA"}, // admin1 code
		{1280737, "Lhasa", "CN-XZ"},       // override
		{1070940, "Antananarivo", "MG-T"}, // override: region -> former province
		{1626542, "Sorong", "ID-PB"},      // override: 2022 province -> the one it left
		{1519422, "Semey", "KZ-VOS"},      // idem
		{2475475, "Touggourt", "DZ-30"},   // override: 2019 wilaya -> the one it left
		{792680, "Belgrade", "RS-00"},     // admin2 override
		{787657, "Niš", "RS-20"},          // admin2 name
		{282239, "Ramallah", "PS-RBH"},    // admin2 name
		{281133, "Gaza", "PS-GZA"},        // admin2 name
		{461602, "Aizpute", "LV-003"},     // admin2 name
		{2992741, "Monte-Carlo", "MC-MC"}, // nearest (seat)
		{4568127, "San Juan", ""},         // Puerto Rico: no subdivisions
	} {
		c, ok := s.City(tc.id)
		if !ok || c.Name != tc.name {
			t.Errorf("city %d: got %+v, want %s", tc.id, c, tc.name)
			continue
		}
		code := ""
		if st, ok := s.State(c.StateID); ok {
			code = st.Code
		}
		if code != tc.code {
			t.Errorf("%s: state %q, want %q", tc.name, code, tc.code)
		}
	}
}
