package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/singleflight"

	"github.com/mailroom/mailroom/internal/mail"
)

// pixel is a transparent 1×1 GIF.
var pixel = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

// The tracking routes (docs/tracking.md): the open pixel and the click
// redirect. Both hand what they saw to the recorder (internal/activity),
// which writes it in batches: a request never waits on that write.
func (s *Server) trackRoutes(r *gin.Engine) {
	r.GET(mail.OpenPath+":list/:token", s.openPixel)
	r.GET(mail.ClickPath+":token", s.click)
}

// openPixel answers GET /o/{list token}/{token}: a mail was opened. The
// open counts when the token is one mailroom signed and the list token is
// the send's for the delivery's list; the answer is the same pixel either
// way (it tells a prober nothing) and is never cached, so each open asks.
func (s *Server) openPixel(c *gin.Context) {
	c.Header("Cache-Control", "no-store, max-age=0")
	c.Header("Referrer-Policy", "no-referrer")
	defer c.Data(http.StatusOK, "image/gif", pixel)
	signer, err := s.signer(c.Request.Context())
	if err != nil {
		s.log.WarnContext(c.Request.Context(), "open pixel: no signing key", "err", err)
		return
	}
	sendID, id, ok := signer.OpenOpen(strings.TrimSuffix(c.Param("token"), ".gif"))
	if list := c.Param("list"); ok && plausibleListToken(list) {
		s.activity.Open(mail.Open{SendID: sendID, DeliveryID: id, ListToken: list})
	}
}

// plausibleListToken is false for what no list token can be (they are
// short base64url), so it never reaches the database.
func plausibleListToken(t string) bool {
	if t == "" || len(t) > 128 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

const invalidClickLink = "This link is not valid. Use the link of a recent mail as it came, or open the sender's site yourself."

// click answers GET /t/c/{token}: a tracked link of a mail. A token the
// signer made, naming a link of its send's link table, is redirected
// (302) to that link's address, read from the table and never from the
// request, and the click counts; anything else (changed, cut, another
// key, a number the send has no link for) is the not-valid page, without
// a Location.
func (s *Server) click(c *gin.Context) {
	ctx := c.Request.Context()
	signer, err := s.signer(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	sendID, id, link, ok := signer.OpenClick(c.Param("token"))
	if !ok {
		pageNotFound(c, invalidClickLink)
		return
	}
	u, err := s.links.url(ctx, sendID, link)
	if err != nil {
		s.fail(c, err)
		return
	}
	if !strings.HasPrefix(strings.ToLower(u), "http://") && !strings.HasPrefix(strings.ToLower(u), "https://") {
		pageNotFound(c, invalidClickLink) // no such link ("")
		return
	}
	s.activity.Click(mail.Click{SendID: sendID, DeliveryID: id, Link: link})
	h := c.Writer.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	c.Redirect(http.StatusFound, u)
}

// linkCache keeps the link tables of the sends clicked lately (a few
// thousand; any one goes when full). A send's table only grows: a worker
// compiling the send numbers links it has not seen after the others, so
// a number past the cached table reads the table again.
type linkCache struct {
	load  func(ctx context.Context, sendID int64) ([]string, error)
	mu    sync.Mutex
	m     map[int64][]string
	reads singleflight.Group // one read of a send's table at a time
}

const linkCacheMax = 4096

func newLinkCache(load func(context.Context, int64) ([]string, error)) *linkCache {
	return &linkCache{load: load, m: map[int64][]string{}}
}

// url is the address of link number link of send sendID, "" when the
// send has no such link.
func (lc *linkCache) url(ctx context.Context, sendID int64, link int) (string, error) {
	lc.mu.Lock()
	table := lc.m[sendID]
	lc.mu.Unlock()
	if link >= len(table) {
		v, err, _ := lc.reads.Do(strconv.FormatInt(sendID, 10), func() (any, error) {
			// Not the first asker's cancellation: others wait on this read.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			t, err := lc.load(rctx, sendID)
			if err != nil || len(t) == 0 {
				return t, err
			}
			lc.mu.Lock()
			defer lc.mu.Unlock()
			if _, ok := lc.m[sendID]; !ok && len(lc.m) >= linkCacheMax {
				for k := range lc.m {
					delete(lc.m, k)
					break
				}
			}
			lc.m[sendID] = t
			return t, nil
		})
		if err != nil {
			return "", err
		}
		table = v.([]string)
	}
	if link < 0 || link >= len(table) {
		return "", nil
	}
	return table[link], nil
}
