package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"
)

// The envelope: {"status":"success","message":…} or
// {"status":"failed","errors":…}. Every response goes through writeJSON.
type success struct {
	Status  string `json:"status"`
	Message any    `json:"message"`
}

type failure struct {
	Status string `json:"status"`
	Errors any    `json:"errors"`
}

// ok answers 200 with message in the success envelope.
func ok(c *gin.Context, message any) {
	writeJSON(c, http.StatusOK, success{Status: "success", Message: message})
}

// okUnderErrors answers 200 with the text under "errors": the contract's
// shape for segment, contact type and sender deletes.
func okUnderErrors(c *gin.Context, text string) {
	writeJSON(c, http.StatusOK, struct {
		Status string `json:"status"`
		Errors string `json:"errors"`
	}{"success", text})
}

// failed answers status with errs in the failure envelope.
func failed(c *gin.Context, status int, errs any) {
	writeJSON(c, status, failure{Status: "failed", Errors: errs})
}

// writeJSON encodes v without HTML escaping (bodies carry templates) and
// aborts the handler chain.
func writeJSON(c *gin.Context, status int, v any) {
	var buf bytes.Buffer
	encode(&buf, v)
	c.Abort()
	c.Data(status, "application/json; charset=utf-8", buf.Bytes())
}

// encodeEnvelope writes message's success envelope to buf.
func encodeEnvelope(buf *bytes.Buffer, message any) {
	encode(buf, success{Status: "success", Message: message})
}

// encode appends v's JSON to buf, without HTML escaping or a newline.
func encode(buf *bytes.Buffer, v any) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only our own types get here; a failure is a bug
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
}

// fields is a validation error's field map, encoded in report order.
type fields struct {
	names []string
	m     map[string][]string
}

func (f fields) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range f.names {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		encode(&buf, f.m[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
