package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/httpapi"
	"github.com/mailroom/mailroom/internal/render"
	"github.com/mailroom/mailroom/internal/testdb"
)

// amplified is the template of the report: 70,000 ((first_name)) in
// about 1 MB, whose mail for a 255-character name was 37 MB.
var amplified = "<html><body>" + strings.Repeat("((first_name))", 70000) + "</body></html>"

// bigLiteral is just under 1 MB of literal HTML with a few placeholders:
// its mails stay far under the limit, however long the values.
func bigLiteral() string {
	var b strings.Builder
	b.WriteString(`<html><body><p>Hi ((first_name)) of ((company_name))</p><a href="((unsubscribe_preferences))">Preferences</a>`)
	for b.Len() < 1<<20-1000 {
		b.WriteString(`<tr><td class="item" style="padding:4px">Ünïcode &amp; text, an item with a = sign</td></tr>` + "\n")
	}
	b.WriteString("</body></html>")
	return b.String()
}

// A single send or an automation schedule whose template can make a mail
// over 10 MB (the amplified one: 70,000 ((first_name)), up to 1.1 GB per
// mail with 255 four-byte characters) is refused on create and update,
// with the field at fault and the worst case; nothing is stored or
// queued. A 1 MB template of literal HTML is accepted.
func TestTemplateMailSize(t *testing.T) {
	t.Parallel()
	f := newSendFixture(t, httpapi.Config{MaxBodyBytes: 4 << 20, MaxUploadBytes: 4 << 20})
	tooLarge := `{"status":"failed","errors":{"template_html":["The template html may not make mails larger than 10485760 bytes; ` +
		`with every placeholder at its longest value its mails take up to 446895270 bytes."]}}`

	body := f.form()
	body.Set("template_id", "1")
	body.Set("template_html", amplified)
	f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: body}).expect(t, 422, tooLarge)
	var n int
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT count(*) FROM single_sends WHERE user_id = $1", f.acct.id).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d sends stored by the refused create (%v)", n, err)
	}
	// Among other problems, in the contract's order.
	body.Set("subject", "")
	body.Set("template_json", strings.Repeat("x", 1<<20+1))
	f.a.do(req{method: "POST", path: "/api/single/send/create", acct: &f.acct, body: body}).expect(t, 422,
		`{"status":"failed","errors":{"subject":["The subject field is required."],"template_html":["The template html may not make mails `+
			`larger than 10485760 bytes; with every placeholder at its longest value its mails take up to 446893218 bytes."],`+
			`"template_json":["The template json may not be larger than 1048576 bytes."]}}`)

	// 1 MB of literal HTML: created, then updated to the amplified
	// template (refused, the send unchanged) and back.
	big := f.form()
	big.Set("template_id", "1")
	big.Set("template_html", bigLiteral())
	utr, id := f.create(t, big)
	f.queued.take()
	up := f.form()
	up.Set("utr", utr)
	up.Set("template_id", "1")
	up.Set("template_html", amplified)
	f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &f.acct, body: up}).expect(t, 422, tooLarge)
	if s := sendRow(t, utr); s.version != 1 {
		t.Fatalf("the refused update changed the send: %+v", s)
	}
	up.Set("template_html", bigLiteral())
	f.a.do(req{method: "POST", path: "/api/single/send/update", acct: &f.acct, body: up}).
		expect(t, 200, fmt.Sprintf(`{"status":"success","message":{"utr":%q}}`, utr))
	f.expectDispatch(t, id, 2, *sendRow(t, utr).dueAt)
	if got := f.queued.take(); len(got) != 0 {
		t.Fatalf("dispatches of refused writes: %+v", got)
	}

	// An automation schedule: the same check (no preheader).
	g := newAutoFixture(t, httpapi.Config{})
	autoUTR, _ := g.createAutomation(t, g.automationForm())
	sc := g.scheduleForm(autoUTR)
	sc.Set("template_html", amplified)
	g.a.do(req{method: "POST", path: "/api/automations/schedule/create", acct: &g.acct, body: sc}).expect(t, 422,
		`{"status":"failed","errors":{"template_html":["The template html may not make mails larger than 10485760 bytes; `+
			`with every placeholder at its longest value its mails take up to 446895126 bytes."]}}`)
	sc.Set("template_html", bigLiteral())
	g.addSchedule(t, sc)

	// MAX_MAIL_BYTES moves the limit.
	h := newSendFixture(t, httpapi.Config{MaxBodyBytes: 4 << 20, MaxUploadBytes: 4 << 20, MaxMailBytes: 1 << 20})
	small := h.form()
	small.Set("template_id", "1")
	small.Set("template_html", strings.Repeat("((first_name))", 200))
	h.a.do(req{method: "POST", path: "/api/single/send/create", acct: &h.acct, body: small}).expect(t, 422,
		`{"status":"failed","errors":{"template_html":["The template html may not make mails larger than 1048576 bytes; `+
			`with every placeholder at its longest value its mails take up to 1292038 bytes."]}}`)
}

// Every design template, sent as it is (no template_html), makes mails
// far under the limit: the API checks only a template_html it is given.
func TestDesignTemplatesMailSize(t *testing.T) {
	t.Parallel()
	for _, d := range design.Templates() {
		tp, err := render.Compile("((full_name)), ((sender_name))", "((first_name))", d.HTML)
		if err != nil {
			t.Fatal(err)
		}
		if n := tp.WorstSize(200); n > render.MaxMailBytes/10 {
			t.Errorf("design template %d: mails of up to %d bytes", d.ID, n)
		}
	}
}
