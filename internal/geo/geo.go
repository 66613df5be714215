// Package geo holds the embedded geography data set: ISO 3166-1 countries,
// ISO 3166-2 subdivisions and GeoNames cities (see NOTICE and
// docs/geography.md). It is read once per process.
package geo

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

//go:embed data/*.tsv.gz
var dataFS embed.FS

// Country is an ISO 3166-1 country; ID is its numeric code.
type Country struct {
	ID   int32  `json:"id"`
	Name string `json:"name"`
	ISO2 string `json:"iso2"`
	ISO3 string `json:"iso3"`
}

// State is an ISO 3166-2 subdivision.
type State struct {
	ID        int32  `json:"id"`
	CountryID int32  `json:"country_id"`
	Name      string `json:"name"`
	Code      string `json:"code"`
}

// City is a GeoNames populated place; StateID is 0 when unknown.
type City struct {
	ID        int32  `json:"id"`
	StateID   int32  `json:"state_id"`
	CountryID int32  `json:"country_id"`
	Name      string `json:"name"`
}

// Set is the whole data set with its lookups.
type Set struct {
	Countries []Country
	States    []State
	Cities    []City
	// Version identifies the data set (a hash of the embedded files).
	Version string

	countryByID   map[int32]int
	countryByISO2 map[string]int
	countryByName map[string]int
	stateByID     map[int32]int
	cityByID      map[int32]int
}

// Load parses the embedded data set.
func Load() (*Set, error) {
	s := &Set{}
	h := sha256.New()
	read := func(name string, cols int, row func([]string) error) error {
		f, err := dataFS.Open("data/" + name)
		if err != nil {
			return err
		}
		defer f.Close()
		return readTSV(io.TeeReader(f, h), cols, func(line int, fields []string) error {
			if err := row(fields); err != nil {
				return fmt.Errorf("geo: %s line %d: %w", name, line, err)
			}
			return nil
		})
	}
	err := read("countries.tsv.gz", 4, func(f []string) error {
		id, err := atoi(f[0])
		s.Countries = append(s.Countries, Country{ID: id, ISO2: f[1], ISO3: f[2], Name: f[3]})
		return err
	})
	if err == nil {
		err = read("states.tsv.gz", 4, func(f []string) error {
			id, err1 := atoi(f[0])
			cid, err2 := atoi(f[1])
			s.States = append(s.States, State{ID: id, CountryID: cid, Code: f[2], Name: f[3]})
			return firstErr(err1, err2)
		})
	}
	if err == nil {
		err = read("cities.tsv.gz", 4, func(f []string) error {
			id, err1 := atoi(f[0])
			var sid int32
			var err2 error
			if f[1] != "" {
				sid, err2 = atoi(f[1])
			}
			cid, err3 := atoi(f[2])
			s.Cities = append(s.Cities, City{ID: id, StateID: sid, CountryID: cid, Name: f[3]})
			return firstErr(err1, err2, err3)
		})
	}
	if err != nil {
		return nil, err
	}
	s.Version = hex.EncodeToString(h.Sum(nil))[:16]
	s.index()
	return s, nil
}

func (s *Set) index() {
	s.countryByID = make(map[int32]int, len(s.Countries))
	s.countryByISO2 = make(map[string]int, len(s.Countries))
	s.countryByName = make(map[string]int, len(s.Countries))
	for i, c := range s.Countries {
		s.countryByID[c.ID] = i
		s.countryByISO2[strings.ToUpper(c.ISO2)] = i
		s.countryByName[strings.ToLower(c.Name)] = i
	}
	s.stateByID = make(map[int32]int, len(s.States))
	for i, st := range s.States {
		s.stateByID[st.ID] = i
	}
	s.cityByID = make(map[int32]int, len(s.Cities))
	for i, c := range s.Cities {
		s.cityByID[c.ID] = i
	}
}

// Country returns the country with the given id.
func (s *Set) Country(id int32) (Country, bool) {
	i, ok := s.countryByID[id]
	if !ok {
		return Country{}, false
	}
	return s.Countries[i], true
}

// State returns the subdivision with the given id.
func (s *Set) State(id int32) (State, bool) {
	i, ok := s.stateByID[id]
	if !ok {
		return State{}, false
	}
	return s.States[i], true
}

// City returns the city with the given id.
func (s *Set) City(id int32) (City, bool) {
	i, ok := s.cityByID[id]
	if !ok {
		return City{}, false
	}
	return s.Cities[i], true
}

// LookupCountry finds a country by numeric id, ISO 3166-1 alpha-2 code or
// name (case-insensitive), as a CSV import's country column may hold any.
func (s *Set) LookupCountry(v string) (Country, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return Country{}, false
	}
	if id, err := strconv.ParseInt(v, 10, 32); err == nil {
		return s.Country(int32(id))
	}
	if len(v) == 2 {
		if i, ok := s.countryByISO2[strings.ToUpper(v)]; ok {
			return s.Countries[i], true
		}
	}
	if i, ok := s.countryByName[strings.ToLower(v)]; ok {
		return s.Countries[i], true
	}
	return Country{}, false
}

func readTSV(r io.Reader, cols int, row func(line int, fields []string) error) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != cols {
			return fmt.Errorf("geo: line %d has %d fields, want %d", n, len(fields), cols)
		}
		if err := row(n, fields); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// Drain so the hash covers the whole file.
	_, err = io.Copy(io.Discard, zr)
	return err
}

func atoi(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Filter narrows the set to one country (countryID > 0) or one state
// (stateID > 0): that country or the state's country, its or the state's
// subdivisions, and their cities. Unknown ids give empty slices.
func (s *Set) Filter(countryID, stateID int32) ([]Country, []State, []City) {
	if stateID > 0 {
		st, ok := s.State(stateID)
		if !ok || (countryID > 0 && st.CountryID != countryID) {
			return []Country{}, []State{}, []City{}
		}
		c, _ := s.Country(st.CountryID)
		cities := []City{}
		for _, ci := range s.Cities {
			if ci.StateID == stateID {
				cities = append(cities, ci)
			}
		}
		return []Country{c}, []State{st}, cities
	}
	c, ok := s.Country(countryID)
	if !ok {
		return []Country{}, []State{}, []City{}
	}
	states := []State{}
	for _, st := range s.States {
		if st.CountryID == countryID {
			states = append(states, st)
		}
	}
	cities := []City{}
	for _, ci := range s.Cities {
		if ci.CountryID == countryID {
			cities = append(cities, ci)
		}
	}
	return []Country{c}, states, cities
}
