package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net/http"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/geo"
)

// geoResponse is the whole geography answer, rendered and gzipped once per
// process: the data never changes while it runs.
type geoResponse struct {
	set  *geo.Set
	body []byte // the success envelope
	gz   []byte // body, gzipped
	etag string
}

type geoMessage struct {
	Countries []geo.Country `json:"countries"`
	States    []geo.State   `json:"states"`
	Cities    []geoCity     `json:"cities"`
}

// geoCity renders an unknown state as null.
type geoCity struct {
	ID        int32  `json:"id"`
	StateID   *int32 `json:"state_id"`
	CountryID int32  `json:"country_id"`
	Name      string `json:"name"`
}

// geoResponses are the rendered geographies by their set: a set never
// changes, and a process (or a test binary) that makes many servers over
// one set renders it once.
var geoResponses sync.Map // *geo.Set → *geoResponse

func newGeoResponse(s *geo.Set) *geoResponse {
	if s == nil {
		return nil
	}
	if r, ok := geoResponses.Load(s); ok {
		return r.(*geoResponse)
	}
	body, gz := renderGeo(s.Countries, s.States, s.Cities)
	sum := sha256.Sum256(body)
	r, _ := geoResponses.LoadOrStore(s, &geoResponse{set: s, body: body, gz: gz, etag: `"` + hex.EncodeToString(sum[:16]) + `"`})
	return r.(*geoResponse)
}

func renderGeo(countries []geo.Country, states []geo.State, cities []geo.City) (body, gz []byte) {
	cs := make([]geoCity, len(cities))
	for i, c := range cities {
		cs[i] = geoCity{ID: c.ID, CountryID: c.CountryID, Name: c.Name}
		if c.StateID != 0 {
			cs[i].StateID = &cities[i].StateID
		}
	}
	var buf bytes.Buffer
	encodeEnvelope(&buf, geoMessage{Countries: countries, States: states, Cities: cs})
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	zw.Write(buf.Bytes())
	zw.Close()
	return buf.Bytes(), z.Bytes()
}

// geography answers GET /get/country-state-city, optionally narrowed by
// country_id or state_id. It is cacheable: a matching If-None-Match gets 304.
func (s *Server) geography(c *gin.Context) {
	var countryID, stateID int64
	var err error
	if c.Query("country_id") != "" {
		if countryID, err = queryID(c, "country_id"); err != nil {
			s.fail(c, err)
			return
		}
	}
	if c.Query("state_id") != "" {
		if stateID, err = queryID(c, "state_id"); err != nil {
			s.fail(c, err)
			return
		}
	}
	body, gz, etag := s.geo.body, s.geo.gz, s.geo.etag
	if countryID > 0 || stateID > 0 {
		if countryID > math.MaxInt32 || stateID > math.MaxInt32 {
			countryID, stateID = -1, 0 // no such place: empty arrays
		}
		body, gz = renderGeo(s.geo.set.Filter(int32(countryID), int32(stateID)))
		sum := sha256.Sum256(body)
		etag = `"` + hex.EncodeToString(sum[:16]) + `"`
	}
	h := c.Writer.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("Vary", "Accept-Encoding")
	if match := c.GetHeader("If-None-Match"); match != "" && (match == etag || match == "W/"+etag || match == "*") {
		c.AbortWithStatus(http.StatusNotModified)
		return
	}
	if acceptsGzip(c.GetHeader("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = gz
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
}

func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}
