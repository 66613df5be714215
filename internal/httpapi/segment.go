package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

func (s *Server) segmentRoutes(api *gin.RouterGroup) {
	api.GET("/segment/list", s.listSegments)
	api.POST("/segment/save", longWrite, s.saveSegment)
	api.POST("/segment/update", longWrite, s.updateSegment)
	api.GET("/segment/details", s.segmentDetails)
	api.DELETE("/segment/delete", s.deleteByID("segment_id", s.db.DeleteSegment, deletedUnderErrors))
	api.GET("/segment/email/list", notFoundText(recordNotFoundLower), s.listSegmentRecipients)
	api.POST("/segment/email/store", s.storeSegmentRecipient)
	api.DELETE("/segment/email/delete", s.deleteByID("segment_recipient_id", s.db.DeleteSegmentRecipient, deleted))
}

type segmentJSON struct {
	ID             int64    `json:"id"`
	UserID         int64    `json:"user_id"`
	ContactTypeID  int64    `json:"contact_type_id"`
	SegmentName    string   `json:"segment_name"`
	SelectField    []string `json:"select_field"`
	SelectOperator []string `json:"select_operator"`
	Value          []string `json:"value"`
	QueryType      *string  `json:"query_type"`
	DeletedAt      *string  `json:"deleted_at"`
	CreatedAt      string   `json:"created_at"`
	UpdatedAt      string   `json:"updated_at"`
}

type segmentCountJSON struct {
	segmentJSON
	SegmentEmailsCount int64 `json:"segment_emails_count"`
}

func renderSegment(sg mail.Segment) segmentJSON {
	return segmentJSON{ID: sg.ID, UserID: sg.UserID, ContactTypeID: sg.ContactTypeID, SegmentName: sg.Name,
		SelectField: sg.Fields, SelectOperator: sg.Operators, Value: sg.Values, QueryType: sg.QueryType,
		DeletedAt: tsPtr(sg.DeletedAt), CreatedAt: ts(sg.CreatedAt), UpdatedAt: ts(sg.UpdatedAt)}
}

type segmentRecipientJSON struct {
	ID           int64   `json:"id"`
	UserID       int64   `json:"user_id"`
	SegmentID    int64   `json:"segment_id"`
	ContactID    *int64  `json:"contact_id"`
	FirstName    string  `json:"first_name"`
	LastName     string  `json:"last_name"`
	Email        string  `json:"email"`
	Country      *string `json:"country"`
	State        *string `json:"state"`
	City         *string `json:"city"`
	AddressLine1 *string `json:"address_line1"`
	CreatedAt    string  `json:"created_at"`
	UpdatedAt    string  `json:"updated_at"`
	Fullname     string  `json:"fullname"`
}

func (s *Server) listSegments(c *gin.Context) {
	page, err := readPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	segs, total, err := s.db.Segments(c.Request.Context(), userID(c), page)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]segmentCountJSON, len(segs))
	for i, sg := range segs {
		out[i] = segmentCountJSON{renderSegment(sg), sg.Recipients}
	}
	ok(c, struct {
		Segments   []segmentCountJSON `json:"segments"`
		Pagination *pagination        `json:"pagination,omitempty"`
	}{out, paged(page, total)})
}

// parseSegment reads a segment create or update.
func (s *Server) parseSegment(c *gin.Context, f form) (mail.SegmentInput, error) {
	fields, err := s.db.CustomFieldDefs(c.Request.Context(), userID(c))
	if err != nil {
		return mail.SegmentInput{}, err
	}
	return mail.ParseSegment(mail.SegmentForm{
		ContactTypeID: f.str("contact_type_id"),
		Name:          f.str("segment_name"),
		Fields:        f.list("select_field"),
		Operators:     f.list("select_operator"),
		Values:        f.nested("value"),
		QueryType:     f.str("query_type"),
	}, fields)
}

func (s *Server) saveSegment(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	in, err := s.parseSegment(c, f)
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.db.CreateSegment(c.Request.Context(), userID(c), in); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Saved Successfully")
}

func (s *Server) updateSegment(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, idErr := parseID("segment_id", f.str("segment_id"))
	in, err := s.parseSegment(c, f)
	if err := f.checked(mail.JoinInvalid(idErr, err)); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.UpdateSegment(c.Request.Context(), userID(c), id, in); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Updated Successfully")
}

func (s *Server) segmentDetails(c *gin.Context) {
	id, err := queryID(c, "segment_id")
	if err != nil {
		s.fail(c, err)
		return
	}
	sg, err := s.db.SegmentDetails(c.Request.Context(), userID(c), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"segment": renderSegment(sg)})
}

func (s *Server) listSegmentRecipients(c *gin.Context) {
	id, err := queryID(c, "segment_id")
	if err != nil {
		s.fail(c, err)
		return
	}
	page, err := readCursorPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	l := newListWriter(c, "contactEmails")
	total, err := s.db.SegmentRecipients(c.Request.Context(), userID(c), id, page, func(r *mail.SegmentRecipient) error {
		return l.add(segmentRecipientJSON{ID: r.ID, UserID: r.UserID, SegmentID: r.SegmentID, ContactID: r.ContactID,
			FirstName: r.FirstName, LastName: r.LastName, Email: r.Email, Country: s.countryName(r.Country), State: r.State, City: r.City,
			AddressLine1: r.AddressLine1, CreatedAt: ts(r.CreatedAt), UpdatedAt: ts(r.UpdatedAt),
			Fullname: mail.FullName(r.FirstName, r.LastName)})
	})
	s.finishList(l, page, total, err)
}

func (s *Server) storeSegmentRecipient(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	in, err := mail.ParseSegmentRecipient(f.str("segment_id"), f.str("first_name"), f.str("last_name"), f.str("email"))
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.StoreSegmentRecipient(c.Request.Context(), userID(c), in); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Added Successfully")
}
