package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"testing"
)

func TestGeographyFiltered(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	r := a.do(req{method: "GET", path: "/api/get/country-state-city?country_id=20", acct: &acct})
	if r.code != 200 {
		t.Fatalf("got %d %s", r.code, r.body)
	}
	golden(t, "geo_andorra", r.body)

	r = a.do(req{method: "GET", path: "/api/get/country-state-city?state_id=6", acct: &acct})
	r.expect(t, 200, `{"status":"success","message":{"countries":[{"id":20,"name":"Andorra","iso2":"AD","iso3":"AND"}],`+
		`"states":[{"id":6,"country_id":20,"name":"Andorra la Vella","code":"AD-07"}],`+
		`"cities":[{"id":3041563,"state_id":6,"country_id":20,"name":"Andorra la Vella"}]}}`)

	a.do(req{method: "GET", path: "/api/get/country-state-city?country_id=99999", acct: &acct}).
		expect(t, 200, `{"status":"success","message":{"countries":[],"states":[],"cities":[]}}`)
	a.do(req{method: "GET", path: "/api/get/country-state-city?country_id=20&state_id=5000", acct: &acct}).
		expect(t, 200, `{"status":"success","message":{"countries":[],"states":[],"cities":[]}}`)
	a.do(req{method: "GET", path: "/api/get/country-state-city?country_id=AD", acct: &acct}).
		expect(t, 422, `{"status":"failed","errors":{"country_id":["The country id must be an integer."]}}`)
	a.do(req{method: "GET", path: "/api/get/country-state-city?state_id=-1", acct: &acct}).
		expect(t, 422, `{"status":"failed","errors":{"state_id":["The state id must be an integer."]}}`)
}

func TestGeographyWhole(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	plain := a.do(req{method: "GET", path: "/api/get/country-state-city", acct: &acct})
	if plain.code != 200 || plain.header.Get("Content-Encoding") != "" {
		t.Fatalf("got %d %v", plain.code, plain.header)
	}
	var got struct {
		Status  string
		Message struct {
			Countries []struct {
				ID         int
				Name, ISO2 string
			}
			States []struct {
				ID        int
				CountryID int `json:"country_id"`
				Name      string
			}
			Cities []struct {
				ID        int
				StateID   *int `json:"state_id"`
				CountryID int  `json:"country_id"`
				Name      string
			}
		}
	}
	if err := json.Unmarshal([]byte(plain.body), &got); err != nil {
		t.Fatal(err)
	}
	m := got.Message
	if got.Status != "success" || len(m.Countries) < 240 || len(m.States) < 4000 || len(m.Cities) < 100000 {
		t.Fatalf("status %s, %d countries, %d states, %d cities", got.Status, len(m.Countries), len(m.States), len(m.Cities))
	}
	countries := map[int]bool{}
	for _, c := range m.Countries {
		countries[c.ID] = true
		if c.ID == 276 && (c.Name != "Germany" || c.ISO2 != "DE") {
			t.Errorf("276 is %+v", c)
		}
	}
	states := map[int]int{}
	for _, s := range m.States {
		states[s.ID] = s.CountryID
		if !countries[s.CountryID] {
			t.Fatalf("state %+v of unknown country", s)
		}
	}
	hasStates := map[int]bool{}
	for _, cid := range states {
		hasStates[cid] = true
	}
	// Every city, not a sample: a state of its own country whenever the
	// country has subdivisions; null only in countries that have none.
	for _, c := range m.Cities {
		if !countries[c.CountryID] || c.Name == "" {
			t.Fatalf("city %+v", c)
		}
		if c.StateID == nil {
			if hasStates[c.CountryID] {
				t.Fatalf("city %+v has no state although its country has subdivisions", c)
			}
			continue
		}
		if states[*c.StateID] != c.CountryID {
			t.Fatalf("city %+v lies in a state of another country", c)
		}
	}

	// Gzip when accepted; the same bytes once inflated.
	gz := a.do(req{method: "GET", path: "/api/get/country-state-city", acct: &acct, header: map[string]string{"Accept-Encoding": "gzip, br"}})
	if gz.code != 200 || gz.header.Get("Content-Encoding") != "gzip" || len(gz.body) >= len(plain.body)/3 {
		t.Fatalf("gzip: %d %v, %d bytes of %d", gz.code, gz.header, len(gz.body), len(plain.body))
	}
	zr, err := gzip.NewReader(bytes.NewReader([]byte(gz.body)))
	if err != nil {
		t.Fatal(err)
	}
	inflated, _ := io.ReadAll(zr)
	if string(inflated) != plain.body {
		t.Fatal("gzipped body differs")
	}

	// Cacheable: the ETag answers 304 with no body.
	etag := plain.header.Get("ETag")
	if etag == "" || gz.header.Get("ETag") != etag {
		t.Fatalf("etag %q vs %q", etag, gz.header.Get("ETag"))
	}
	nm := a.do(req{method: "GET", path: "/api/get/country-state-city", acct: &acct, header: map[string]string{"If-None-Match": etag}})
	if nm.code != 304 || nm.body != "" {
		t.Fatalf("If-None-Match: %d %q", nm.code, nm.body)
	}
}

// BenchmarkGeography serves the whole geography answer through the router
// (authentication included), plain and gzipped.
func BenchmarkGeography(b *testing.B) {
	a := newAPI(b)
	acct := a.account()
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			var size int
			for i := 0; i < b.N; i++ {
				r := a.do(req{method: "GET", path: "/api/get/country-state-city", acct: &acct, header: map[string]string{"Accept-Encoding": enc}})
				if r.code != 200 {
					b.Fatal(r.code)
				}
				size = len(r.body)
			}
			b.ReportMetric(float64(size)/(1<<20), "MB/response")
		})
	}
}

func TestGeographyHugeIDs(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	acct := a.account()
	for _, q := range []string{"country_id=4294967296", "state_id=99999999999"} {
		a.do(req{method: "GET", path: "/api/get/country-state-city?" + q, acct: &acct}).
			expect(t, 200, `{"status":"success","message":{"countries":[],"states":[],"cities":[]}}`)
	}
}
