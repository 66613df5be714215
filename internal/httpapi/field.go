package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

func (s *Server) fieldRoutes(api *gin.RouterGroup) {
	api.GET("/reserve-fields", s.reservedFields)
	api.GET("/custom-fields", s.customFields)
	api.POST("/custom-fields/save", s.saveCustomField)
	api.DELETE("/custom-fields/delete", longWrite, s.deleteByID("id", s.db.DeleteCustomField, deleted))
}

// fieldJSON is a reserved or custom field; a reserved field has no owner
// and no times.
type fieldJSON struct {
	ID         int64   `json:"id"`
	UserID     *int64  `json:"user_id"`
	FieldName  string  `json:"field_name"`
	FieldType  string  `json:"field_type"`
	IsReserved int     `json:"is_reserved"`
	CreatedAt  *string `json:"created_at"`
	UpdatedAt  *string `json:"updated_at"`
}

// reservedFields answers GET /reserve-fields: the same eleven fields for
// every account.
func (s *Server) reservedFields(c *gin.Context) {
	page, err := readPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	fields := mail.ReservedFields
	if page != nil {
		lo := min(page.Offset(), int64(len(fields)))
		fields = fields[lo:min(lo+page.Size, int64(len(fields)))]
	}
	out := make([]fieldJSON, len(fields))
	for i, f := range fields {
		out[i] = fieldJSON{ID: f.ID, FieldName: f.Name, FieldType: f.Type(), IsReserved: 1}
	}
	ok(c, struct {
		ReservedFields []fieldJSON `json:"reservedFields"`
		Pagination     *pagination `json:"pagination,omitempty"`
	}{out, paged(page, int64(len(mail.ReservedFields)))})
}

// customFields answers GET /custom-fields.
func (s *Server) customFields(c *gin.Context) {
	page, err := readPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	fields, total, err := s.db.CustomFields(c.Request.Context(), userID(c), page)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]fieldJSON, len(fields))
	for i, f := range fields {
		out[i] = fieldJSON{ID: f.ID, UserID: &fields[i].UserID, FieldName: f.Name, FieldType: f.Type,
			CreatedAt: tsPtr(&fields[i].CreatedAt), UpdatedAt: tsPtr(&fields[i].UpdatedAt)}
	}
	ok(c, struct {
		CustomFields []fieldJSON `json:"customFields"`
		Pagination   *pagination `json:"pagination,omitempty"`
	}{out, paged(page, total)})
}

// saveCustomField answers POST /custom-fields/save.
func (s *Server) saveCustomField(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	field, err := mail.ParseCustomField(f.str("field_name"), f.str("field_type"))
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.db.CreateCustomField(c.Request.Context(), userID(c), field); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Added Successfully")
}
