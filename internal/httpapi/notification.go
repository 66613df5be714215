package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

func (s *Server) notificationRoutes(api *gin.RouterGroup) {
	api.GET("/notification-recipients", s.notificationRecipients)
	api.POST("/notification-recipient/save", s.saveNotificationRecipient)
	api.DELETE("/notification-recipient/delete", s.deleteByID("id", one(s.db.DeleteNotificationRecipients), deleted))
	api.POST("/notification-recipient/bulk-delete", s.bulkDelete(s.db.DeleteNotificationRecipients))
}

type notificationRecipientJSON struct {
	ID           int64  `json:"id"`
	UserID       int64  `json:"user_id"`
	EmailAddress string `json:"email_address"`
	EmailOwner   string `json:"email_owner"`
	CreatedAt    string `json:"created_at"`
	UpdatedAt    string `json:"updated_at"`
}

// notificationRecipients answers GET /notification-recipients.
func (s *Server) notificationRecipients(c *gin.Context) {
	page, err := readCursorPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	recs, total, err := s.db.NotificationRecipients(c.Request.Context(), userID(c), page)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]notificationRecipientJSON, len(recs))
	for i, r := range recs {
		out[i] = notificationRecipientJSON{ID: r.ID, UserID: r.UserID, EmailAddress: r.Email, EmailOwner: r.Owner,
			CreatedAt: ts(r.CreatedAt), UpdatedAt: ts(r.UpdatedAt)}
	}
	ok(c, struct {
		Notifications []notificationRecipientJSON `json:"notifications"`
		Pagination    *pagination                 `json:"pagination,omitempty"`
	}{out, paged(page, total)})
}

// saveNotificationRecipient answers POST /notification-recipient/save.
func (s *Server) saveNotificationRecipient(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	in, err := mail.ParseNotificationRecipient(f.str("email_address"), f.str("email_owner"))
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.db.SaveNotificationRecipient(c.Request.Context(), userID(c), in); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Added Successfully")
}
