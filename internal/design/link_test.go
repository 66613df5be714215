package design_test

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/design"
)

// A link's address (a button's, an image's, a column's, the footer's) is
// an http, https or mailto address, placeholders allowed inside, or the
// preferences link alone: a javascript: or protocol-relative link, or a
// contact's field as the whole address, could take a reader anywhere.
func TestDesignLinksRefuseOtherSchemes(t *testing.T) {
	t.Parallel()
	button := func(url string) string { return `{"type":"button","text":"Go","url":` + url + `}` }
	for _, c := range []struct {
		name, block, want string
	}{
		{"javascript", button(`"javascript:alert(document.domain)"`), `url "javascript:alert(document.domain)": want an http`},
		{"mixed case", button(`" JaVaScRiPt:alert(1)"`), "want an http"},
		{"tab inside", button(`"java\tscript:alert(1)"`), "want an http"},
		{"data", button(`"data:text/html,<b>x</b>"`), "want an http"},
		{"protocol-relative", button(`"//evil.example/x"`), "want an http"},
		{"relative", button(`"/dashboard"`), "want an http"},
		{"no host", button(`"https:///x"`), "want an http"},
		{"user", button(`"https://u:p@example.com/"`), "want an http"},
		{"a field alone", button(`"((first_name))"`), "a placeholder alone may only be ((unsubscribe_preferences))"},
		{"image link", `{"type":"image","src":"https://example.com/a.png","alt":"A","url":"javascript:x"}`, `block 0 (image): url "javascript:x"`},
		{"column link", `{"type":"columns","columns":[{"heading":"A","text":"a","link_text":"x","link_url":"https://example.com"},` +
			`{"heading":"B","text":"b","link_text":"y","link_url":"vbscript:x"}]}`, `columns[1].link_url "vbscript:x"`},
	} {
		_, err := design.ParseDocument([]byte(imageDoc(c.block)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	for _, ok := range []string{`"https://example.com/offer?u=((email))"`, `"http://example.com"`, `"mailto:help@example.com?subject=Hi"`,
		`"((unsubscribe_preferences))"`, `"(( Unsubscribe_Preferences ))"`, `"https://example.com/((first_name))"`} {
		if _, err := design.ParseDocument([]byte(imageDoc(button(ok)))); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}
