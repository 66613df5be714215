package httpapi

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/contactimport"
	"github.com/mailroom/mailroom/internal/mail"
)

const uploadPath = "/contacts/upload-csv"

func (s *Server) contactCSVRoutes(api *gin.RouterGroup) {
	api.POST(uploadPath, s.uploadContacts)
	api.GET("/contacts/csv-sample/download", s.contactCSVSample)
}

// uploadContacts imports a CSV file into a contact type. The multipart body
// is read as a stream: the file's rows go straight into PostgreSQL, so
// memory stays flat whatever the file's size, and contact_type_id may come
// before or after the file.
func (s *Server) uploadContacts(c *gin.Context) {
	ctx, uid := c.Request.Context(), userID(c)
	// A slow sender holds an import slot and a transaction: the body must
	// keep arriving (see slowReader); the deadline is lifted once it is read.
	rc := http.NewResponseController(c.Writer)
	idle := s.cfg.UploadIdle
	if idle <= 0 {
		idle = uploadIdle
	}
	c.Request.Body = &slowReader{r: c.Request.Body, rc: rc, idle: idle}
	rc.SetReadDeadline(time.Now().Add(idle)) // not supported by test recorders: no deadline there
	// The server's write timeout (HTTP_WRITE_TIMEOUT) would cut the answer
	// of an import that takes longer to upload and merge: lifted here.
	rc.SetWriteDeadline(time.Time{})
	ct, params, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if ct != "multipart/form-data" || params["boundary"] == "" {
		// Not multipart: there can be no file.
		f, ferr := readForm(c)
		if ferr != nil {
			s.fail(c, ferr)
			return
		}
		_, typeErr := parseID("contact_type_id", f.str("contact_type_id"))
		s.fail(c, f.checked(mail.JoinInvalid(typeErr, mail.Invalid("file", mail.RequiredMessage("file")))))
		return
	}
	body := newCloseWatcher(c.Request.Body, params["boundary"])
	mr := multipart.NewReader(body, params["boundary"])

	var (
		typeID    int64
		typeErr   = mail.Invalid("contact_type_id", mail.RequiredMessage("contact_type_id"))
		typeShape bool // contact_type_id[…] sent: an array, refused as other forms refuse it
		fileSeen  bool
		imp       *contactimport.Import
	)
	defer func() {
		if imp != nil {
			imp.Close(ctx)
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.fail(c, s.uploadError(multipartError(err)))
			return
		}
		switch name := part.FormName(); {
		case strings.HasPrefix(name, "contact_type_id["):
			typeShape = true
			typeErr = mail.Invalid("contact_type_id", shapeMessage("contact_type_id"))
		case name == "contact_type_id" && !typeShape:
			v, err := io.ReadAll(io.LimitReader(part, 64))
			if err != nil {
				s.fail(c, s.uploadError(err))
				return
			}
			typeID, typeErr = parseID("contact_type_id", string(v))
			if typeErr == nil && !fileSeen {
				// Known before the file: refuse an unknown type before reading it.
				if ok, err := s.db.LiveContactType(ctx, uid, typeID); err != nil || !ok {
					s.fail(c, mail.JoinInvalid(orInvalidType(err)))
					return
				}
			}
		case name == "file":
			if fileSeen || part.FileName() == "" {
				continue
			}
			fileSeen = true
			if !strings.EqualFold(filepath.Ext(part.FileName()), ".csv") {
				s.fail(c, mail.Invalid("file", "The file must be a file of type: csv."))
				return
			}
			if imp, err = s.importer.Start(ctx, uid); err != nil {
				s.fail(c, err)
				return
			}
			if err := imp.Copy(ctx, part); err != nil {
				s.fail(c, s.uploadError(err))
				return
			}
		}
	}
	// Read the body to its end (net/http then watches the connection for a
	// hang-up), and lift the deadline, which would also bound that watch:
	// the merge may take its time.
	if _, err := io.Copy(io.Discard, c.Request.Body); err != nil {
		s.fail(c, s.uploadError(err))
		return
	}
	rc.SetReadDeadline(time.Time{})
	if !body.closed {
		s.fail(c, errUpload) // cut off: the parts read may not be all that was sent
		return
	}
	var fileErr error
	if !fileSeen {
		fileErr = mail.Invalid("file", mail.RequiredMessage("file"))
	}
	if err := mail.JoinInvalid(typeErr, fileErr); err != nil {
		s.fail(c, err)
		return
	}
	if _, err := imp.Commit(ctx, typeID); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Imported Successfully")
}

// An upload must deliver uploadChunk bytes within every uploadIdle (or
// Config.UploadIdle), about 1 KB/s at the least; a slower one is dropped.
const (
	uploadIdle  = time.Minute
	uploadChunk = 64 << 10
)

// slowReader moves the connection's read deadline each time another
// uploadChunk bytes have arrived, so a client trickling a byte at a time
// cannot keep an import open for ever.
type slowReader struct {
	r     io.ReadCloser
	rc    *http.ResponseController
	idle  time.Duration
	since int
}

func (r *slowReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if r.since += n; r.since >= uploadChunk {
		r.since = 0
		r.rc.SetReadDeadline(time.Now().Add(r.idle))
	}
	return n, err
}

func (r *slowReader) Close() error { return r.r.Close() }

func orInvalidType(err error) error {
	if err != nil {
		return err
	}
	return mail.Invalid("contact_type_id", "The selected contact type id is invalid.")
}

// uploadError names the cap when the body outgrew it, and answers any
// other failure to read the multipart body as a 422.
func (s *Server) uploadError(err error) error {
	var tooBig *http.MaxBytesError
	var readErr *mail.ReadError
	switch {
	case errors.As(err, &tooBig):
		return mail.Invalid("file", fmt.Sprintf("The file may not be larger than %d bytes.", tooBig.Limit))
	case errors.As(err, &readErr), errors.Is(err, io.ErrUnexpectedEOF), err == errMultipart:
		return errUpload
	}
	return err
}

var errUpload = mail.Invalid("file", "The upload is not a well-formed multipart body.")

// lookupCountry resolves a CSV country cell: id, ISO alpha-2 code or name.
func (s *Server) lookupCountry(v string) (int32, bool) {
	co, ok := s.geo.set.LookupCountry(v)
	return co.ID, ok
}

// contactCSVSample answers a CSV file with the columns an upload takes (the
// reserved fields, then the account's custom fields) and one example row.
func (s *Server) contactCSVSample(c *gin.Context) {
	fields, err := s.db.CustomFieldDefs(c.Request.Context(), userID(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	example := map[string]string{
		"email": "jane.doe@example.com", "first_name": "Jane", "last_name": "Doe", "alt_email": "jane@example.org",
		"country": "US", "state": "California", "city": "Los Angeles", "address_line1": "1 Main Street",
		"address_line2": "Suite 200", "state_province_region": "CA", "postal_code": "90001",
	}
	var header, row []string
	for _, f := range mail.ReservedFields {
		header = append(header, f.Name)
		row = append(row, example[f.Name])
	}
	for _, f := range fields {
		header = append(header, f.Name)
		switch f.Type {
		case mail.FieldNumber:
			row = append(row, "42")
		case mail.FieldDatetime:
			row = append(row, "2026-01-31T09:30")
		default:
			row = append(row, "example")
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(header)
	w.Write(row)
	w.Flush()
	c.Header("Content-Disposition", `attachment; filename="contacts-sample.csv"`)
	c.Data(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
}
