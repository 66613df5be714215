package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/geo"
	"github.com/mailroom/mailroom/internal/mail"
)

func (s *Server) senderRoutes(api *gin.RouterGroup) {
	api.GET("/senders", s.listSenders)
	api.POST("/senders", s.listSenders) // labelled POST, issued as GET: both (interface.md)
	api.POST("/sender/save", s.saveSender)
	api.GET("/sender/details", s.senderDetails)
	api.POST("/sender/update", s.updateSender)
	api.DELETE("/sender/delete", s.deleteByID("sender_id", s.db.DeleteSender, deletedUnderErrors))
	api.GET("/sender/resend-mail", s.resendSenderMail)
}

// wakeVerifier asks the worker to mail the verification links now; when
// that fails (Redis down) the worker's minute sweep mails them anyway.
func (s *Server) wakeVerifier(c *gin.Context) {
	if s.verifySenders == nil {
		return
	}
	if err := s.verifySenders(c.Request.Context()); err != nil {
		s.log.WarnContext(c.Request.Context(), "enqueueing sender verification; the sweep will mail it", "err", err)
	}
}

// resendSenderMail answers GET /sender/resend-mail: a fresh link is
// mailed (send_at is set when the worker hands it over).
func (s *Server) resendSenderMail(c *gin.Context) {
	id, err := queryID(c, "sender_id")
	if err == nil {
		err = s.db.RequestSenderVerification(c.Request.Context(), userID(c), id)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	s.wakeVerifier(c)
	ok(c, "Verification Mail Send")
}

// verifySender answers GET /senders/verify/:token (outside /api, no
// keys): the link of a verification mail.
func (s *Server) verifySender(c *gin.Context) {
	from, verified, err := s.db.VerifySender(c.Request.Context(), c.Param("token"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if !verified {
		pageNotFound(c, "This verification link is unknown, used already or expired. Ask for a new one (resend the verification mail).")
		return
	}
	writeMessage(c, http.StatusOK, "Sender verified", from+" is verified: mailroom may now send from it.")
}

// senderJSON is a sender as the API shows it.
type senderJSON struct {
	ID              int64   `json:"id"`
	UserID          int64   `json:"user_id"`
	FromName        string  `json:"from_name"`
	FromEmail       string  `json:"from_email"`
	ReplyToEmail    string  `json:"reply_to_email"`
	CountryID       int32   `json:"country_id"`
	StateID         *int32  `json:"state_id"`
	CityID          *int32  `json:"city_id"`
	ZipCode         string  `json:"zip_code"`
	CompanyAddress  string  `json:"company_address"`
	CompanyAddress2 string  `json:"company_address2"`
	Nickname        string  `json:"nickname"`
	IsVerified      int     `json:"is_verified"`
	UTR             string  `json:"utr"`
	SendAt          *string `json:"send_at"`
	CreatedAt       string  `json:"created_at"`
	UpdatedAt       string  `json:"updated_at"`
	DeletedAt       *string `json:"deleted_at"`
}

func renderSender(r mail.SenderRecord) senderJSON {
	var sendAt *string
	if r.SendAt != nil {
		v := r.SendAt.UTC().Format("2006-01-02 15:04:05")
		sendAt = &v
	}
	return senderJSON{ID: r.ID, UserID: r.UserID, FromName: r.FromName, FromEmail: r.FromEmail, ReplyToEmail: r.ReplyToEmail,
		CountryID: r.CountryID, StateID: r.StateID, CityID: r.CityID, ZipCode: r.ZipCode, CompanyAddress: r.CompanyAddress,
		CompanyAddress2: r.CompanyAddress2, Nickname: r.Nickname, IsVerified: r.IsVerified, UTR: r.UTR, SendAt: sendAt,
		CreatedAt: ts(r.CreatedAt), UpdatedAt: ts(r.UpdatedAt), DeletedAt: tsPtr(r.DeletedAt)}
}

func (s *Server) listSenders(c *gin.Context) {
	rows, err := s.db.Senders(c.Request.Context(), userID(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]senderJSON, len(rows))
	for i, r := range rows {
		out[i] = renderSender(r)
	}
	ok(c, gin.H{"senders": out})
}

func (s *Server) senderDetails(c *gin.Context) {
	id, err := queryID(c, "sender_id")
	if err != nil {
		s.fail(c, err)
		return
	}
	r, err := s.db.Sender(c.Request.Context(), userID(c), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"sender": renderSender(r)})
}

// parseSender reads a sender save or update from the request.
func (s *Server) parseSender(f form) (mail.SenderInput, error) {
	return mail.ParseSender(func(name string) string { return f.str(name) }, places{s.geo.set})
}

func (s *Server) saveSender(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	in, err := s.parseSender(f)
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.db.CreateSender(c.Request.Context(), userID(c), in); err != nil {
		s.fail(c, err)
		return
	}
	s.wakeVerifier(c)
	ok(c, "Added Successfully")
}

func (s *Server) updateSender(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, idErr := parseID("sender_id", f.str("sender_id"))
	in, err := s.parseSender(f)
	if err := f.checked(mail.JoinInvalid(idErr, err)); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.UpdateSender(c.Request.Context(), userID(c), id, in); err != nil {
		s.fail(c, err)
		return
	}
	s.wakeVerifier(c)
	ok(c, "Updated Successfully")
}

// places answers mail.Places from the geography data set.
type places struct{ set *geo.Set }

func (p places) CountryExists(id int32) bool { _, ok := p.set.Country(id); return ok }

func (p places) StateCountry(id int32) (int32, bool) {
	st, ok := p.set.State(id)
	return st.CountryID, ok
}

func (p places) CityPlace(id int32) (int32, int32, bool) {
	c, ok := p.set.City(id)
	return c.CountryID, c.StateID, ok
}
