package httpapi

import (
	"fmt"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
)

func (s *Server) contactRoutes(api *gin.RouterGroup) {
	api.GET("/contacts/list", s.listContacts)
	api.GET("/contacts/details", s.contactDetails)
	api.POST("/contacts/add", s.addContact)
	api.POST("/contacts/update", s.updateContact)
	api.DELETE("/contacts/delete", s.deleteByID("contact_id", one(s.db.DeleteContacts), deleted))
	api.POST("/contacts/bulk-delete", s.bulkDelete(s.db.DeleteContacts))
}

type contactJSON struct {
	ID                  int64                  `json:"id"`
	UserID              int64                  `json:"user_id"`
	ContactTypeID       int64                  `json:"contact_type_id"`
	FirstName           string                 `json:"first_name"`
	LastName            string                 `json:"last_name"`
	Email               string                 `json:"email"`
	AltEmail            *string                `json:"alt_email"`
	Country             *string                `json:"country"`
	State               string                 `json:"state"`
	City                string                 `json:"city"`
	AddressLine1        string                 `json:"address_line1"`
	AddressLine2        string                 `json:"address_line2"`
	StateProvinceRegion string                 `json:"state_province_region"`
	PostalCode          string                 `json:"postal_code"`
	CustomField         map[string]customValue `json:"custom_field"`
	DeletedAt           *string                `json:"deleted_at"`
	CreatedAt           string                 `json:"created_at"`
	UpdatedAt           string                 `json:"updated_at"`
	Fullname            string                 `json:"fullname"`
	ContactType         *contactTypeJSON       `json:"contact_type,omitempty"`
}

type customValue struct {
	FieldName  string  `json:"field_name"`
	FieldValue *string `json:"field_value"`
}

// renderContact shapes a contact. country is rendered by the caller's
// choice: the list shows the country's name, the details its id.
func renderContact(c *postgres.Contact, fields []mail.CustomField, country *string) contactJSON {
	out := contactJSON{
		ID: c.ID, UserID: c.UserID, ContactTypeID: c.ContactTypeID, FirstName: c.FirstName, LastName: c.LastName,
		Email: c.Email, AltEmail: c.AltEmail, Country: country, State: c.State, City: c.City,
		AddressLine1: c.AddressLine1, AddressLine2: c.AddressLine2, StateProvinceRegion: c.StateProvinceRegion,
		PostalCode: c.PostalCode, DeletedAt: tsPtr(c.DeletedAt), CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt),
		Fullname: mail.FullName(c.FirstName, c.LastName),
	}
	if len(fields) > 0 {
		out.CustomField = make(map[string]customValue, len(fields))
		for _, f := range fields {
			cv := customValue{FieldName: f.Name}
			if v, ok := c.Custom[f.Name]; ok && v != nil {
				s := fmt.Sprint(v)
				cv.FieldValue = &s
			}
			out.CustomField[f.Name] = cv
		}
	}
	return out
}

func (s *Server) listContacts(c *gin.Context) {
	pg, err := readCursorPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, uid := c.Request.Context(), userID(c)
	fields, err := s.db.CustomFieldDefs(ctx, uid)
	if err != nil {
		s.fail(c, err)
		return
	}
	l := newListWriter(c, "contacts")
	total, err := s.db.ListContacts(ctx, uid, pg, func(ct *postgres.Contact) error {
		out := renderContact(ct, fields, s.countryName(ct.Country))
		t := renderContactType(ct.Type)
		out.ContactType = &t
		return l.add(out)
	})
	s.finishList(l, pg, total, err)
}

func (s *Server) contactDetails(c *gin.Context) {
	id, err := queryID(c, "contact_id")
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, uid := c.Request.Context(), userID(c)
	ct, err := s.db.ContactDetails(ctx, uid, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	fields, err := s.db.CustomFieldDefs(ctx, uid)
	if err != nil {
		s.fail(c, err)
		return
	}
	var country *string
	if ct.Country != nil {
		v := strconv.Itoa(int(*ct.Country))
		country = &v
	}
	ok(c, gin.H{"contact": renderContact(&ct, fields, country)})
}

// countryName is the name of the country with that id; nil for none.
func (s *Server) countryName(id *int32) *string {
	if id == nil {
		return nil
	}
	if co, ok := s.geo.set.Country(*id); ok {
		return &co.Name
	}
	return nil
}

// parseContact reads and validates a contact write from the request.
func (s *Server) parseContact(c *gin.Context, f form) (mail.ContactInput, error) {
	fields, err := s.db.CustomFieldDefs(c.Request.Context(), userID(c))
	if err != nil {
		return mail.ContactInput{}, err
	}
	return mail.ParseContact(mail.ContactForm{
		Get:    f.scalar,
		Custom: f.dict("custom_field"),
	}, fields, func(id int32) bool { _, ok := s.geo.set.Country(id); return ok })
}

func (s *Server) addContact(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	in, err := s.parseContact(c, f)
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	if _, _, err := s.db.AddContact(c.Request.Context(), userID(c), in); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Contact Added Successfully")
}

func (s *Server) updateContact(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, idErr := parseID("contact_id", f.str("contact_id"))
	in, err := s.parseContact(c, f)
	if err = f.checked(mail.JoinInvalid(idErr, err)); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.UpdateContact(c.Request.Context(), userID(c), id, in); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Contact Updated Successfully")
}
