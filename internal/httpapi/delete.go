package httpapi

import (
	"context"

	"github.com/gin-gonic/gin"
)

// Deletes all take a record id from the query string, or an strIds array
// (bulk), call the storage, and answer "Deleted Successfully"; three of
// them put that text under "errors" (okUnderErrors).

// deleteFunc deletes one record of the account.
type deleteFunc func(ctx context.Context, userID, id int64) error

// bulkDeleteFunc deletes records of the account, all or none.
type bulkDeleteFunc func(ctx context.Context, userID int64, ids []int64) error

// one is a bulk delete of a single id.
func one(del bulkDeleteFunc) deleteFunc {
	return func(ctx context.Context, userID, id int64) error { return del(ctx, userID, []int64{id}) }
}

func deleted(c *gin.Context)            { ok(c, "Deleted Successfully") }
func deletedUnderErrors(c *gin.Context) { okUnderErrors(c, "Deleted Successfully") }

// deleteByID answers DELETE …?key=id.
func (s *Server) deleteByID(key string, del deleteFunc, answer func(*gin.Context)) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := queryID(c, key)
		if err == nil {
			err = del(c.Request.Context(), userID(c), id)
		}
		if err != nil {
			s.fail(c, err)
			return
		}
		answer(c)
	}
}

// bulkDelete answers POST …/bulk-delete with strIds.
func (s *Server) bulkDelete(del bulkDeleteFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		f, err := readForm(c)
		var ids []int64
		if err == nil {
			ids, err = f.ids("strIds")
		}
		if err == nil {
			err = del(c.Request.Context(), userID(c), ids)
		}
		if err != nil {
			s.fail(c, err)
			return
		}
		deleted(c)
	}
}
