package httpapi

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/mailroom/mailroom/internal/mail"
)

func (s *Server) suppressionRoutes(api *gin.RouterGroup) {
	api.GET("/global-unsubscribes", s.globalUnsubscribes)
	api.POST("/global-unsubscribes/save", s.saveGlobalUnsubscribes)
	api.DELETE("/global-unsubscribes/delete", s.deleteByID("id", one(s.deleteUnsubscribes(true)), deleted))
	api.POST("/global-unsubscribes/bulk-delete", s.bulkDelete(s.deleteUnsubscribes(true)))

	api.GET("/unsubscribes-groups", s.unsubscribeGroups)
	api.POST("/unsubscribes-groups/save", s.saveUnsubscribeGroup)
	api.GET("/unsubscribes-groups/details", s.unsubscribeGroupDetails)
	api.POST("/unsubscribes-groups/update", s.updateUnsubscribeGroup)
	api.POST("/unsubscribes-groups/manually-add", s.addGroupRecipients)
	api.GET("/unsubscribes-groups/recipients-list", s.groupRecipients)
	api.DELETE("/unsubscribes-groups/recipients-delete", s.deleteByID("id", one(s.deleteUnsubscribes(false)), deleted))
	api.POST("/unsubscribes-groups/recipients-bulk-delete", s.bulkDelete(s.deleteUnsubscribes(false)))
}

// unsubscribeJSON is a global unsubscriber or a group recipient.
type unsubscribeJSON struct {
	ID                  int64  `json:"id"`
	UserID              int64  `json:"user_id"`
	UnsubscribeGroupsID *int64 `json:"unsubscribe_groups_id"`
	EmailAddress        string `json:"email_address"`
	CreatedAt           string `json:"created_at"`
	UpdatedAt           string `json:"updated_at"`
}

func renderUnsubscribe(u *mail.Unsubscribe) unsubscribeJSON {
	return unsubscribeJSON{ID: u.ID, UserID: u.UserID, UnsubscribeGroupsID: u.GroupID, EmailAddress: u.Email,
		CreatedAt: ts(u.CreatedAt), UpdatedAt: ts(u.UpdatedAt)}
}

// groupJSON is an unsubscribe group as its details show it.
type groupJSON struct {
	ID          int64  `json:"id"`
	UserID      int64  `json:"user_id"`
	RandID      string `json:"rand_id"`
	GroupName   string `json:"group_name"`
	Description string `json:"description"`
	IsDisplay   int    `json:"is_display"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

// groupCountJSON is an unsubscribe group as the list shows it.
type groupCountJSON struct {
	groupJSON
	UnsubscribeClientsCount int64 `json:"unsubscribe_clients_count"`
}

func renderGroup(g mail.UnsubscribeGroup) groupJSON {
	display := 0
	if g.Display {
		display = 1
	}
	return groupJSON{ID: g.ID, UserID: g.UserID, RandID: g.RandID, GroupName: g.Name, Description: g.Description,
		IsDisplay: display, CreatedAt: ts(g.CreatedAt), UpdatedAt: ts(g.UpdatedAt)}
}

// listUnsubscribes streams the global list (groupID nil) or a group's
// recipients under key.
func (s *Server) listUnsubscribes(c *gin.Context, key string, groupID *int64) {
	pg, err := readCursorPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	l := newListWriter(c, key)
	total, err := s.db.ListUnsubscribes(c.Request.Context(), userID(c), groupID, pg, func(u *mail.Unsubscribe) error {
		return l.add(renderUnsubscribe(u))
	})
	s.finishList(l, pg, total, err)
}

// unsubscribe puts parsed addresses on the global list (groupID nil) or in
// a group.
func (s *Server) unsubscribe(c *gin.Context, groupID *int64, emails []mail.Email) {
	if _, err := s.db.Unsubscribe(c.Request.Context(), userID(c), groupID, emails); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Added Successfully")
}

// parseEmailList reads email_address: comma-separated lists, sent as one
// value, repeated or as an array.
func parseEmailList(f form) ([]mail.Email, error) {
	return mail.ParseEmailList("email_address", f.list("email_address"))
}

// globalUnsubscribes answers GET /global-unsubscribes.
func (s *Server) globalUnsubscribes(c *gin.Context) { s.listUnsubscribes(c, "unSubscribers", nil) }

// saveGlobalUnsubscribes answers POST /global-unsubscribes/save.
func (s *Server) saveGlobalUnsubscribes(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	emails, err := parseEmailList(f)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.unsubscribe(c, nil, emails)
}

// unsubscribeGroups answers GET /unsubscribes-groups.
func (s *Server) unsubscribeGroups(c *gin.Context) {
	page, err := readPage(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	groups, total, err := s.db.UnsubscribeGroups(c.Request.Context(), userID(c), page)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]groupCountJSON, len(groups))
	for i, g := range groups {
		out[i] = groupCountJSON{renderGroup(g), g.Recipients}
	}
	ok(c, struct {
		Groups     []groupCountJSON `json:"unsubscribesGroups"`
		Pagination *pagination      `json:"pagination,omitempty"`
	}{out, paged(page, total)})
}

// parseGroup reads a group save or update.
func parseGroup(f form) (mail.UnsubscribeGroupInput, error) {
	return mail.ParseUnsubscribeGroup(f.str("group_name"), f.str("description"), f.str("is_display"))
}

// saveUnsubscribeGroup answers POST /unsubscribes-groups/save.
func (s *Server) saveUnsubscribeGroup(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	in, err := parseGroup(f)
	if err = f.checked(err); err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.db.CreateUnsubscribeGroup(c.Request.Context(), userID(c), in); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Saved Successfully")
}

// unsubscribeGroupDetails answers GET /unsubscribes-groups/details?id=.
func (s *Server) unsubscribeGroupDetails(c *gin.Context) {
	id, err := queryID(c, "id")
	if err != nil {
		s.fail(c, err)
		return
	}
	g, err := s.db.UnsubscribeGroup(c.Request.Context(), userID(c), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, struct {
		Group groupJSON `json:"unsubscribesGroup"`
	}{renderGroup(g)})
}

// updateUnsubscribeGroup answers POST /unsubscribes-groups/update?id=; the
// id may also come in the body.
func (s *Server) updateUnsubscribeGroup(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, idErr := parseID("id", f.str("id"))
	in, err := parseGroup(f)
	if err := f.checked(mail.JoinInvalid(idErr, err)); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.UpdateUnsubscribeGroup(c.Request.Context(), userID(c), id, in); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, "Updated Successfully")
}

// addGroupRecipients answers POST /unsubscribes-groups/manually-add.
func (s *Server) addGroupRecipients(c *gin.Context) {
	f, err := readForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, idErr := parseID("unsubscribe_groups_id", f.str("unsubscribe_groups_id"))
	emails, listErr := parseEmailList(f)
	if err := f.checked(mail.JoinInvalid(idErr, listErr)); err != nil {
		s.fail(c, err)
		return
	}
	s.unsubscribe(c, &id, emails)
}

// groupRecipients answers GET /unsubscribes-groups/recipients-list?groupId=.
func (s *Server) groupRecipients(c *gin.Context) {
	id, err := queryID(c, "groupId")
	if err != nil {
		s.fail(c, err)
		return
	}
	s.listUnsubscribes(c, "recipients", &id)
}

// deleteUnsubscribes deletes entries of the global list (global) or of the
// account's groups.
func (s *Server) deleteUnsubscribes(global bool) bulkDeleteFunc {
	return func(ctx context.Context, userID int64, ids []int64) error {
		return s.db.DeleteUnsubscribes(ctx, userID, global, ids)
	}
}
