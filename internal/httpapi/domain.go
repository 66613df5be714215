package httpapi

import (
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/delivery"
	"github.com/mailroom/mailroom/internal/mail"
)

// Sending domains (docs/deliverability.md): an account's domains, their
// DKIM keys and the DNS records to publish, looked up on request.
func (s *Server) domainRoutes(api *gin.RouterGroup) {
	api.GET("/domains", s.listDomains)
	api.POST("/domains/save", s.saveDomain)
	api.GET("/domains/details", s.domainDetails)
	api.POST("/domains/verify", s.verifyDomain)
	api.DELETE("/domains/delete", s.deleteByID("id", s.db.DeleteSendingDomain, deleted))
	api.POST("/domains/warmup", s.warmupDomain)
}

// warmupJSON is a domain's warm-up as the API shows it: its first day,
// its schedule (the default ramp when it has none of its own), and
// today's allowance (0: its warm-up is over).
type warmupJSON struct {
	From     string `json:"from"`
	Schedule []int  `json:"schedule"`
	Today    int    `json:"today"`
}

// warmupDomain answers POST /domains/warmup: id, warmup (true: start it
// from today, or change its schedule; false: end it), schedule (optional:
// day-by-day allowances, comma-separated).
func (s *Server) warmupDomain(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, idErr := parseID("id", f.str("id"))
	on, onErr := readFlag("warmup", f.str("warmup"))
	if f.str("warmup") == "" {
		onErr = mail.Invalid("warmup", mail.RequiredMessage("warmup"))
	}
	if err := f.checked(mail.JoinInvalid(idErr, onErr)); err != nil {
		s.fail(c, err)
		return
	}
	d, err := s.domains.SetWarmup(c.Request.Context(), userID(c), id, on, f.str("schedule"))
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"domain": renderDomain(d)})
}

// domainJSON is a sending domain as the API shows it (never a key's
// private part).
type domainJSON struct {
	ID         int64               `json:"id"`
	Domain     string              `json:"domain"`
	Selector   string              `json:"selector"`
	Ed25519    bool                `json:"ed25519"`
	Verified   bool                `json:"verified"`
	Records    []mail.DomainRecord `json:"records"`
	CheckedAt  *string             `json:"checked_at"`
	VerifiedAt *string             `json:"verified_at"`
	CreatedAt  string              `json:"created_at"`
	Warmup     *warmupJSON         `json:"warmup"` // null: not warming up
}

func renderDomain(d mail.SendingDomain) domainJSON {
	out := domainJSON{ID: d.ID, Domain: d.Domain, Selector: d.Selector, Ed25519: d.Ed25519, Verified: d.Verified, Records: d.Records,
		CheckedAt: tsPtr(d.CheckedAt), VerifiedAt: tsPtr(d.VerifiedAt), CreatedAt: ts(d.CreatedAt)}
	if d.WarmupFrom != nil {
		w := delivery.Warmup{Domain: d.Domain, From: *d.WarmupFrom, Schedule: d.WarmupSchedule}
		out.Warmup = &warmupJSON{From: d.WarmupFrom.Format(time.DateOnly), Schedule: d.WarmupSchedule, Today: w.Allowance(time.Now())}
		if out.Warmup.Schedule == nil {
			out.Warmup.Schedule = delivery.DefaultWarmup
		}
	}
	return out
}

// listDomains answers GET /domains.
func (s *Server) listDomains(c *gin.Context) {
	rows, err := s.db.SendingDomains(c.Request.Context(), userID(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]domainJSON, len(rows))
	for i, d := range rows {
		out[i] = renderDomain(d)
	}
	ok(c, gin.H{"domains": out})
}

// saveDomain answers POST /domains/save: domain, ed25519 (optional,
// "1"/"true": an Ed25519 key beside the RSA one).
func (s *Server) saveDomain(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ed, edErr := readFlag("ed25519", f.str("ed25519"))
	if err := f.checked(edErr); err != nil {
		s.fail(c, err)
		return
	}
	d, err := s.domains.Add(c.Request.Context(), userID(c), f.str("domain"), ed)
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"domain": renderDomain(d)})
}

// domainDetails answers GET /domains/details?id=.
func (s *Server) domainDetails(c *gin.Context) {
	id, err := queryID(c, "id")
	var d mail.SendingDomain
	if err == nil {
		d, err = s.db.SendingDomain(c.Request.Context(), userID(c), id)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"domain": renderDomain(d)})
}

// verifyDomain answers POST /domains/verify with id (in the body or the
// query): the records looked up now, each found, missing or wrong.
func (s *Server) verifyDomain(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, err := parseID("id", f.str("id"))
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	d, err := s.domains.Verify(c.Request.Context(), userID(c), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, gin.H{"domain": renderDomain(d)})
}

// readFlag reads an optional flag field (mail.ParseFlag): absent is off.
func readFlag(field, v string) (bool, error) {
	if strings.TrimSpace(v) == "" {
		return false, nil
	}
	on, ok := mail.ParseFlag(v)
	if !ok {
		return false, mail.Invalid(field, mail.FlagMessage(field))
	}
	return on, nil
}
