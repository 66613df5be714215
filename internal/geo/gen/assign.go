package main

import (
	"fmt"
	"log"
	"math"
	"sort"
	"strings"
)

// assignStates gives every city of a country with ISO 3166-2 subdivisions one
// of them, in three steps:
//
//  1. its GeoNames admin1 code, mapped by mapAdmin1 and the overrides (by
//     code, by name, or by hand);
//  2. when the admin1 code is unmapped (GeoNames "Central Serbia", "West
//     Bank", Skopje) or "00", its admin2 code, which mapAdmin2 maps by code or
//     name (Serbian districts, Palestinian governorates);
//  3. otherwise the nearest subdivision (see assignNearest): for admin1 codes
//     iso-codes 4.15 does not know yet (Kazakhstan's and Indonesia's 2022
//     regions, Algeria's 2019 wilayas, Latvia's 2021 municipalities) and for
//     places GeoNames files under no division.
//
// Cities of countries without subdivisions (Puerto Rico, Hong Kong, ...) keep
// no state. A state is always a subdivision of the city's own country.
func assignStates(cities []*city, mapping map[string]mapped, admin2Names map[string]*admin1Info, subs *subdivisions, st *cityStats) error {
	mapAdmin2(cities, mapping, admin2Names, subs)
	for _, c := range cities {
		c.key = c.cc + "." + c.admin1
		if len(subs.byCountry[c.cc]) == 0 {
			continue
		}
		if m, ok := mapping[c.key]; ok && c.admin1 != "" && c.admin1 != "00" {
			c.stateID, c.method = m.sub.id, m.method
			continue
		}
		if c.admin2 == "" {
			continue
		}
		if m, ok := mapping[c.key+"."+c.admin2]; ok {
			c.stateID, c.method = m.sub.id, m.method
			c.key += "." + c.admin2
		}
	}
	assignNearest(cities, subs)

	byID := make(map[int]*subdivision, len(subs.list))
	for _, s := range subs.list {
		byID[s.id] = s
	}
	for _, c := range cities {
		if c.stateID == 0 {
			if len(subs.byCountry[c.cc]) > 0 {
				return fmt.Errorf("city %d %s (%s, admin1 %q) has no state although %s has subdivisions", c.id, c.name, c.cc, c.admin1, c.cc)
			}
			st.unmapped[c.key]++
			st.unmappedByCountry[c.cc]++
			continue
		}
		s := byID[c.stateID]
		if s == nil || s.countryID != c.countryID {
			return fmt.Errorf("city %d %s (%s): state %d is not a subdivision of its country", c.id, c.name, c.cc, c.stateID)
		}
		st.mapped++
		st.byMethod[c.method]++
		if c.method == "nearest" {
			st.nearest[nearestKey{c.key, s}]++
		} else {
			st.mappedByKey[c.key]++
		}
	}
	return nil
}

// mapAdmin2 maps the admin2 codes of cities whose admin1 code is unmapped,
// adding "CC.A1.A2" keys to mapping (overrides already there are kept):
//
//   - "admin2-code": the admin2 code is a former admin1 code of the same
//     country, already mapped to a subdivision whose name the admin2 name
//     confirms (Skopje's municipalities, admin1 codes before GeoNames grouped
//     them under "Grad Skopje");
//   - "admin2-name": exactly one subdivision of the country has the admin2
//     name ("North Gaza"), or else exactly one agrees with it token by token
//     ("Nišava" and "Nišavski okrug", "Khan Yunis Governorate" and "Khan
//     Yunis"); among several, the single top-level one.
func mapAdmin2(cities []*city, mapping map[string]mapped, admin2Names map[string]*admin1Info, subs *subdivisions) {
	seen := map[string]bool{}
	var keys []string
	for _, c := range cities {
		if c.admin2 == "" || len(subs.byCountry[c.cc]) == 0 {
			continue
		}
		k1 := c.cc + "." + c.admin1
		if _, ok := mapping[k1]; ok && c.admin1 != "" && c.admin1 != "00" {
			continue
		}
		k := k1 + "." + c.admin2
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := mapping[k]; ok {
			continue
		}
		a := admin2Names[k]
		if a == nil {
			continue
		}
		cc, rest, _ := strings.Cut(k, ".")
		_, a2, _ := strings.Cut(rest, ".")
		if m, ok := mapping[cc+"."+a2]; ok && a2 != "00" && looseMatch(a.names, m.sub.name) {
			mapping[k] = mapped{m.sub, "admin2-code", a}
			continue
		}
		cands := subs.byCountry[cc]
		m := narrow(strongMatches(a.names, cands), nil)
		if len(m) != 1 {
			m = narrow(coverMatches(a.names, cands), nil)
		}
		if len(m) == 1 {
			mapping[k] = mapped{m[0], "admin2-name", a}
		}
	}
}

// coverMatches returns the subdivisions whose significant name tokens all
// loosely match (see looseMatch) tokens of one of names, or the other way
// round: "Nišava" and "Nišavski okrug", "Deir Al Balah" and "Deir El Balah".
// Of several, those agreeing on the most letters (summed common prefixes of
// the tokens): "Opstina Gjorce Petrov" is "Gjorče Petrov" (12), not
// "Petrovec" (6); "Priekule" is "Priekules novads" (8), not "Priekuļu
// novads" (7).
func coverMatches(names []string, cands []*subdivision) []*subdivision {
	var out []*subdivision
	most := 0
	for _, s := range cands {
		b := sigTokens(s.name)
		score := 0
		for _, n := range names {
			a := sigTokens(n)
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			score = max(score, cover(a, b), cover(b, a))
		}
		switch {
		case score == 0 || score < most:
		case score > most:
			most, out = score, []*subdivision{s}
		default:
			out = append(out, s)
		}
	}
	return out
}

// cover returns, when every token of a loosely matches one of b, the sum
// over a's tokens of their longest common prefix with a token of b; else 0.
func cover(a, b []string) int {
	sum := 0
	for _, t := range a {
		best := 0
		for _, u := range b {
			if p := commonPrefix(t, u); p >= min(4, len(t), len(u)) {
				best = max(best, p)
			}
		}
		if best == 0 {
			return 0
		}
		sum += best
	}
	return sum
}

// assignNearest gives each city still without a state, in a country with
// subdivisions, the subdivision of that country whose centre is nearest on
// the sphere.
//
// A subdivision's centre is the mean position (as a unit vector) of the
// cities steps 1 and 2 gave it. Only the level those cities use counts: the
// top level unless most of the country's mapped cities lie in subdivisions
// that have a parent (Indonesia's provinces under its island groups), as
// mapAdmin1 decides. A subdivision of that level no city was given gets its
// seat as centre, when one of the country's cities bears its name ("Monte-
// Carlo", "Beograd"); the seat is the city with the highest feature code
// (PPLC, PPLA, PPLA2, PPLA3, others), then the largest population, then the
// smallest geonameid. Ties between centres go to the smaller state id.
func assignNearest(cities []*city, subs *subdivisions) {
	byCountry := map[string][]*city{}
	var ccs []string
	for _, c := range cities {
		if len(byCountry[c.cc]) == 0 {
			ccs = append(ccs, c.cc)
		}
		byCountry[c.cc] = append(byCountry[c.cc], c)
	}
	sort.Strings(ccs)
	byID := make(map[int]*subdivision, len(subs.list))
	for _, s := range subs.list {
		byID[s.id] = s
	}
	for _, cc := range ccs {
		list := byCountry[cc]
		cands := subs.byCountry[cc]
		if len(cands) == 0 {
			continue
		}
		var todo []*city
		sum := map[*subdivision]vec3{}
		top, lower := 0, 0
		for _, c := range list {
			if c.stateID == 0 {
				todo = append(todo, c)
				continue
			}
			s := byID[c.stateID]
			sum[s] = sum[s].add(unitVec(c.lat, c.lon))
			if s.hasParent {
				lower++
			} else {
				top++
			}
		}
		if len(todo) == 0 {
			continue
		}
		wantParent := lower > top
		type centre struct {
			sub *subdivision
			v   vec3
		}
		var centres []centre
		var seats map[string]*city
		for _, s := range cands { // sorted by code, so by id
			if s.hasParent != wantParent {
				continue
			}
			if v, ok := sum[s]; ok {
				centres = append(centres, centre{s, v.norm()})
				continue
			}
			if seats == nil {
				seats = seatIndex(list)
			}
			if c := seats[nameKey(s.name)]; c != nil {
				centres = append(centres, centre{s, unitVec(c.lat, c.lon)})
			}
		}
		if len(centres) == 0 {
			log.Printf("warning: %s: no subdivision with a known position, %d cities left without a state", cc, len(todo))
			continue
		}
		for _, c := range todo {
			p := unitVec(c.lat, c.lon)
			best, bestDot := centres[0].sub, math.Inf(-1)
			for _, ce := range centres {
				if d := p.dot(ce.v); d > bestDot {
					best, bestDot = ce.sub, d
				}
			}
			c.stateID, c.method = best.id, "nearest"
		}
	}
}

// seatIndex indexes a country's cities by the normalised form (nameKey) of
// each of their names, keeping per name the likeliest seat.
func seatIndex(list []*city) map[string]*city {
	idx := map[string]*city{}
	for _, c := range list {
		for _, n := range append([]string{c.name}, strings.Split(c.altNames, ",")...) {
			k := nameKey(n)
			if k == "" {
				continue
			}
			if o := idx[k]; o == nil || seatBefore(c, o) {
				idx[k] = c
			}
		}
	}
	return idx
}

var seatRank = map[string]int{"PPLC": 1, "PPLG": 2, "PPLA": 3, "PPLA2": 4, "PPLA3": 5}

func seatBefore(a, b *city) bool {
	ra, rb := seatRank[a.feature], seatRank[b.feature]
	if ra == 0 {
		ra = 9
	}
	if rb == 0 {
		rb = 9
	}
	if ra != rb {
		return ra < rb
	}
	if a.pop != b.pop {
		return a.pop > b.pop
	}
	return a.id < b.id
}

type vec3 [3]float64

func unitVec(lat, lon float64) vec3 {
	φ, λ := lat*math.Pi/180, lon*math.Pi/180
	return vec3{math.Cos(φ) * math.Cos(λ), math.Cos(φ) * math.Sin(λ), math.Sin(φ)}
}

func (v vec3) add(w vec3) vec3    { return vec3{v[0] + w[0], v[1] + w[1], v[2] + w[2]} }
func (v vec3) dot(w vec3) float64 { return v[0]*w[0] + v[1]*w[1] + v[2]*w[2] }

func (v vec3) norm() vec3 {
	n := math.Sqrt(v.dot(v))
	if n == 0 {
		return v
	}
	return vec3{v[0] / n, v[1] / n, v[2] / n}
}
