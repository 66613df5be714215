package mail

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reserved field indexes into ContactRow.Fields (a reserved field's id - 1).
const (
	ColEmail = iota
	ColFirstName
	ColLastName
	ColAltEmail
	ColCountry
	ColState
	ColCity
	ColAddressLine1
	ColAddressLine2
	ColStateProvinceRegion
	ColPostalCode
	numReserved
)

// ContactRow is one valid row of a contact CSV file. Fields holds the
// reserved fields' cells by index (empty for columns the file lacks; see
// ContactCSV.Has); Country is the resolved country id (0: none); Custom is
// the row's custom values as a JSON object, nil when the file has no custom
// columns. The row is reused by the next call to Next.
type ContactRow struct {
	Line    int
	Fields  [numReserved]string
	Country int32
	Custom  []byte
}

// ContactCSV reads a contact CSV file row by row: UTF-8 (a BOM is
// dropped), comma separated, a header of reserved and custom field names
// (any case) with an email column. Rows with an invalid address are
// skipped and counted; any other problem is an EINVALID error on "file"
// naming the line, and the caller must discard the whole file.
type ContactCSV struct {
	r       *csv.Reader
	limit   *recordLimiter
	line    int // the line of the last record read
	country func(string) (int32, bool)

	reserved [numReserved]int // column of each reserved field, -1 when absent
	custom   []csvCustom      // custom columns
	rows     int              // data rows read
	skipped  int              // rows skipped for their address
	row      ContactRow
	buf      bytes.Buffer
}

type csvCustom struct {
	col   int
	field CustomField
	key   []byte // the field's name as a JSON string and a colon
}

// NewContactCSV reads the header. fields are the account's custom fields;
// country resolves a country id, ISO 3166-1 alpha-2 code or name.
func NewContactCSV(r io.Reader, fields []CustomField, country func(string) (int32, bool)) (*ContactCSV, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if bom, err := br.Peek(3); err == nil && bytes.Equal(bom, []byte("\xEF\xBB\xBF")) {
		br.Discard(3)
	}
	limit := &recordLimiter{r: br}
	cr := csv.NewReader(limit)
	cr.ReuseRecord = true
	c := &ContactCSV{r: cr, limit: limit, country: country}
	for i := range c.reserved {
		c.reserved[i] = -1
	}
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fileError("The file is empty.")
	}
	if err != nil {
		return nil, c.csvError(err)
	}
	c.line = 1
	limit.n = 0
	byName := map[string]int{}
	for _, f := range ReservedFields {
		byName[f.Name] = int(f.ID - 1)
	}
	customByName := map[string]CustomField{}
	for _, f := range fields {
		customByName[strings.ToLower(f.Name)] = f
	}
	seen := map[string]bool{}
	for col, raw := range header {
		if !utf8.ValidString(raw) {
			return nil, fileError("Line 1 is not valid UTF-8.")
		}
		if strings.IndexByte(raw, 0) >= 0 {
			return nil, fileError("Line 1 contains a NUL character.")
		}
		name := strings.ToLower(strings.TrimSpace(raw))
		if name == "" {
			return nil, fileError(fmt.Sprintf("Line 1: column %d has no name.", col+1))
		}
		if seen[name] {
			return nil, fileError(fmt.Sprintf("Line 1: the column %q appears twice.", raw))
		}
		seen[name] = true
		if i, ok := byName[name]; ok {
			c.reserved[i] = col
		} else if f, ok := customByName[name]; ok {
			k, _ := json.Marshal(f.Name)
			c.custom = append(c.custom, csvCustom{col: col, field: f, key: append(k, ':')})
		} else {
			return nil, fileError(fmt.Sprintf("Line 1: the column %q is neither a reserved field nor one of your custom fields.", strings.TrimSpace(raw)))
		}
	}
	if c.reserved[ColEmail] < 0 {
		return nil, fileError("Line 1: the file has no email column.")
	}
	return c, nil
}

// Has reports whether the file has the reserved field's column (ColEmail…).
func (c *ContactCSV) Has(col int) bool { return c.reserved[col] >= 0 }

// CustomColumns are the names of the custom fields the file has columns for.
func (c *ContactCSV) CustomColumns() []string {
	out := make([]string, len(c.custom))
	for i, cc := range c.custom {
		out[i] = cc.field.Name
	}
	return out
}

// CustomFieldIDs are the ids of the custom fields the file has columns for.
func (c *ContactCSV) CustomFieldIDs() []int64 {
	out := make([]int64, len(c.custom))
	for i, cc := range c.custom {
		out[i] = cc.field.ID
	}
	return out
}

// Skipped is the number of rows skipped for an invalid address so far.
func (c *ContactCSV) Skipped() int { return c.skipped }

// Rows is the number of data rows read so far, skipped ones included.
func (c *ContactCSV) Rows() int { return c.rows }

// Next returns the next valid row, or io.EOF after the last one.
func (c *ContactCSV) Next() (*ContactRow, error) {
	for {
		rec, err := c.r.Read()
		if errors.Is(err, io.EOF) {
			if c.rows == 0 {
				return nil, fileError("The file has a header but no rows.")
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, c.csvError(err)
		}
		c.rows++
		c.limit.n = 0
		line, _ := c.r.FieldPos(0)
		c.line = line
		for _, v := range rec {
			if !utf8.ValidString(v) {
				return nil, fileError(fmt.Sprintf("Line %d is not valid UTF-8.", line))
			}
			if strings.IndexByte(v, 0) >= 0 {
				return nil, fileError(fmt.Sprintf("Line %d contains a NUL character.", line))
			}
		}
		row := &c.row
		row.Line = line
		for i, col := range c.reserved {
			if col >= 0 {
				row.Fields[i] = strings.TrimSpace(rec[col])
			} else {
				row.Fields[i] = ""
			}
		}
		for i, v := range row.Fields {
			if i != ColEmail && i != ColAltEmail && i != ColCountry && v != "" {
				if msg := LineProblem(ReservedFields[i].Name, v); msg != "" {
					return nil, fileError(fmt.Sprintf("Line %d: %s", line, msg))
				}
			}
		}
		email, ok := ParseEmail(row.Fields[ColEmail])
		if !ok {
			c.skipped++
			continue
		}
		row.Fields[ColEmail] = string(email)
		if v := row.Fields[ColAltEmail]; v != "" {
			if _, why := CheckEmail(v); why != EmailOK {
				return nil, fileError(fmt.Sprintf("Line %d: the alt_email %q is not a valid email address%s.", line, v, why.Why()))
			}
		}
		row.Country = 0
		if v := row.Fields[ColCountry]; v != "" {
			id, ok := c.country(v)
			if !ok {
				return nil, fileError(fmt.Sprintf("Line %d: the country %q is not a known country id, ISO 3166-1 alpha-2 code or name.", line, v))
			}
			row.Country = id
		}
		row.Custom = nil
		if len(c.custom) > 0 {
			if err := c.encodeCustom(rec, line); err != nil {
				return nil, err
			}
			row.Custom = c.buf.Bytes()
		}
		return row, nil
	}
}

// encodeCustom writes the row's non-empty custom values as a JSON object.
func (c *ContactCSV) encodeCustom(rec []string, line int) error {
	c.buf.Reset()
	c.buf.WriteByte('{')
	n := 0
	for _, cc := range c.custom {
		v, err := cc.field.ParseCustomValue(rec[cc.col])
		if err != nil {
			return fileError(fmt.Sprintf("Line %d: %s", line, err))
		}
		if v == nil {
			continue
		}
		if n > 0 {
			c.buf.WriteByte(',')
		}
		n++
		c.buf.Write(cc.key)
		switch v := v.(type) {
		case int64:
			c.buf.WriteString(strconv.FormatInt(v, 10))
		case float64:
			c.buf.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		default:
			b, _ := json.Marshal(v)
			c.buf.Write(b)
		}
	}
	c.buf.WriteByte('}')
	return nil
}

func fileError(msg string) error { return Invalid("file", msg) }

// csvError names the line of a malformed-CSV error. An error of the
// underlying reader (the upload itself) comes back as a *ReadError.
func (c *ContactCSV) csvError(err error) error {
	var pe *csv.ParseError
	switch {
	case errors.Is(err, errRecordTooLong):
		return fileError(fmt.Sprintf("Line %d: a record is longer than %d bytes (is a closing quote missing?).", c.line+1, maxRecordBytes))
	case errors.As(err, &pe):
		switch {
		case errors.Is(pe.Err, csv.ErrFieldCount):
			return fileError(fmt.Sprintf("Line %d has a different number of fields than the header.", pe.StartLine))
		case errors.Is(pe.Err, csv.ErrQuote), errors.Is(pe.Err, csv.ErrBareQuote):
			return fileError(fmt.Sprintf("Line %d: a quote is misplaced or not closed.", pe.StartLine))
		}
		return fileError(fmt.Sprintf("Line %d: %v.", pe.StartLine, pe.Err))
	}
	return &ReadError{Err: err}
}

// ReadError is a failure to read the file itself (a broken or oversized
// upload), as opposed to a problem with its content.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return "mail: reading the file: " + e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// maxRecordBytes caps one CSV record. encoding/csv holds a whole record in
// memory, so without a cap an unclosed quote would read the rest of the
// file into one.
const maxRecordBytes = 1 << 20

var errRecordTooLong = errors.New("csv record too long")

// recordLimiter fails a read once n, the bytes read since the last record
// ended (reset by ContactCSV), passes maxRecordBytes; encoding/csv reads
// ahead at most its 4 KB buffer, so the cap is close to exact.
type recordLimiter struct {
	r io.Reader
	n int
}

func (l *recordLimiter) Read(p []byte) (int, error) {
	if l.n > maxRecordBytes {
		return 0, errRecordTooLong
	}
	n, err := l.r.Read(p)
	l.n += n
	return n, err
}
