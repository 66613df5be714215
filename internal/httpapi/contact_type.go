package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

func (s *Server) contactTypeRoutes(api *gin.RouterGroup) {
	api.GET("/contacts-type", s.contactTypes)
	api.POST("/contacts-type/add", s.addContactType)
	api.GET("/contacts-type/view", s.viewContactType)
	api.POST("/contacts-type/update", s.updateContactType)
	api.DELETE("/contacts-type/delete", longWrite, s.deleteByID("contact_type_id", s.db.DeleteContactType, deletedUnderErrors))
}

// contactTypeJSON is a contact type as the view shows it.
type contactTypeJSON struct {
	ID        int64   `json:"id"`
	UserID    int64   `json:"user_id"`
	Name      string  `json:"name"`
	DeletedAt *string `json:"deleted_at"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

// contactTypeCountJSON is a contact type as the list shows it.
type contactTypeCountJSON struct {
	contactTypeJSON
	ContactsCount int64 `json:"contacts_count"`
}

func renderContactType(t mail.ContactType) contactTypeJSON {
	return contactTypeJSON{ID: t.ID, UserID: t.UserID, Name: t.Name, DeletedAt: tsPtr(t.DeletedAt),
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt)}
}

// contactTypes answers GET /contacts-type.
func (s *Server) contactTypes(c *gin.Context) {
	page, err := readPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	types, total, err := s.db.ContactTypes(c.Request.Context(), userID(c), page)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]contactTypeCountJSON, len(types))
	for i, t := range types {
		out[i] = contactTypeCountJSON{renderContactType(t), t.Contacts}
	}
	ok(c, struct {
		ContactTypes []contactTypeCountJSON `json:"contactTypes"`
		Pagination   *pagination            `json:"pagination,omitempty"`
	}{out, paged(page, total)})
}

// addContactType answers POST /contacts-type/add.
func (s *Server) addContactType(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	name, err := mail.ParseContactTypeName(f.str("name"))
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.db.CreateContactType(c.Request.Context(), userID(c), name); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Added Successfully")
}

// viewContactType answers GET /contacts-type/view?contact_type_id=.
func (s *Server) viewContactType(c *gin.Context) {
	id, err := queryID(c, "contact_type_id")
	if err != nil {
		s.fail(c, err)
		return
	}
	t, err := s.db.ContactType(c.Request.Context(), userID(c), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, struct {
		ContactType contactTypeJSON `json:"contactType"`
	}{renderContactType(t)})
}

// updateContactType answers POST /contacts-type/update.
func (s *Server) updateContactType(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, idErr := parseID("id", f.str("id"))
	name, nameErr := mail.ParseContactTypeName(f.str("name"))
	if err := f.checked(mail.JoinInvalid(idErr, nameErr)); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.RenameContactType(c.Request.Context(), userID(c), id, name); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Updated Successfully")
}
