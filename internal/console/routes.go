package console

import "net/http"

// access is what a route asks of the request.
type access int

const (
	public  access = iota // anyone; no session needed
	reader                // a signed-in user of any role
	writer                // an owner or editor
	manager               // an owner
)

// Prefixes are the paths the console owns (each also with anything
// below it); the API's router sends them here.
var Prefixes = []string{"/", "/signin", "/signout", "/reset", "/invite", "/account", "/static", "/sends",
	"/design/editor"} // not /design: the API serves /design/previews

// routes lists every console route in one place: its pattern, who may use
// it, and the audit line a successful write leaves when the storage does
// not record one itself.
func (h *Handler) routes() {
	h.handle("GET /{$}", reader, "", h.sendHome)
	h.handle("GET /static/{hash}/{file...}", public, "", h.assets.serve)

	h.handle("GET /signin", public, "", h.signInShow)
	h.handle("POST /signin", public, "", h.signIn)
	h.handle("POST /signout", reader, "", h.signOut)
	h.handle("POST /signout/everywhere", reader, "signed out everywhere", h.signOutEverywhere)
	h.handle("GET /reset", public, "", h.resetShow)
	h.handle("POST /reset", public, "", h.resetRequest)
	h.handle("GET /reset/{token}", public, "", h.linkShow)
	h.handle("POST /reset/{token}", public, "", h.linkTake)
	h.handle("GET /invite/{token}", public, "", h.linkShow)
	h.handle("POST /invite/{token}", public, "", h.linkTake)

	h.handle("GET /account", reader, "", h.accountShow)
	h.handle("POST /account/keys", manager, "", h.keysRotate)
	h.handle("POST /account/team", manager, "", h.teamInvite)
	h.handle("POST /account/team/{id}/role", manager, "", h.teamRole)
	h.handle("POST /account/team/{id}/remove", manager, "", h.teamRemove)

	// The design editor: a schedule's design at /design/editor/{utr} (the
	// API's design_url), a single send's at /design/editor/single-send/{utr}.
	for _, base := range []string{"/design/editor/{utr}", "/design/editor/single-send/{utr}"} {
		h.handle("GET "+base, reader, "", h.designEditor)
		h.handle("POST "+base+"/save", writer, "saved the design of", h.designSave, bodyLimit(designBodyLimit))
		h.handle("POST "+base+"/preview", reader, "", h.designPreview, bodyLimit(designBodyLimit))
		h.handle("POST "+base+"/text", reader, "", h.designText, bodyLimit(designBodyLimit))
		h.handle("POST "+base+"/test", writer, "sent a test mail of", h.designTestSend, bodyLimit(designBodyLimit))
	}
	h.handle("POST /design/editor/media", writer, "uploaded an image", h.mediaUpload, bodyLimit(mediaBodyLimit))
	h.handle("/design/editor", reader, "", h.designNotFound)
	h.handle("/design/editor/", reader, "", h.designNotFound)

	h.handle("GET /sends", reader, "", h.sendList)
	h.handle("GET /sends/new", writer, "", h.sendNew)
	h.handle("GET /sends/count", writer, "", h.sendCount)
	h.handle("POST /sends/review", writer, "", h.sendReview)
	h.handle("POST /sends", writer, "created a single send", h.sendSave)
	h.handle("GET /sends/{utr}", reader, "", h.sendShow)
	h.handle("GET /sends/{utr}/progress", reader, "", h.sendProgress)
	h.handle("GET /sends/{utr}/stats", reader, "", h.sendStats)
	h.handle("GET /sends/{utr}/edit", writer, "", h.sendEdit)
	h.handle("POST /sends/{utr}/review", writer, "", h.sendReview)
	h.handle("POST /sends/{utr}", writer, "updated a single send", h.sendSave)
	h.handle("POST /sends/{utr}/duplicate", writer, "duplicated a single send", h.sendDuplicate)
	h.handle("POST /sends/{utr}/resume", writer, "resumed a paused single send", h.sendResume)
	h.handle("POST /sends/{utr}/cancel", writer, "cancelled a paused single send", h.sendCancel)
	h.handle("POST /sends/{utr}/delete", writer, "deleted a single send", h.sendDelete)
}

// handle registers a route behind the console's middleware; opts set
// what the route needs beyond the defaults (bodyLimit).
func (h *Handler) handle(pattern string, need access, audit string, fn http.HandlerFunc, opts ...routeOption) {
	h.mux.Handle(pattern, h.chain(need, audit, fn, opts...))
}
