package design_test

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/render"
)

// imageDoc is a 600 px document holding block and the footer.
func imageDoc(block string) string {
	return `{"version":1,"name":"T","settings":{"width":600,"background":"#fff","content_background":"#fff",` +
		`"font_family":"Arial, sans-serif","text_color":"#000","heading_color":"#000","accent_color":"#00f",` +
		`"muted_color":"#666","border_color":"#eee"},"blocks":[` + block + `,` +
		`{"type":"footer","sender":"((sender_name))","address":"((sender_address))",` +
		`"link_text":"Unsubscribe","link_url":"((unsubscribe_preferences))"}]}`
}

// ParseDocument refuses an image block Build could not write safely or
// that a mail client would show wrongly, saying what is wrong.
func TestDesignImageRefuses(t *testing.T) {
	const src = `"src":"https://mail.example.com/media/7/hero.png"`
	for _, c := range []struct{ name, block, want string }{
		{"no src", `{"type":"image","alt":"A"}`, "block 0 (image): needs src, the image's address"},
		{"relative src", `{"type":"image","src":"/media/7/hero.png","alt":"A"}`,
			`block 0 (image): src "/media/7/hero.png": want an absolute http or https URL`},
		{"no host", `{"type":"image","src":"https:///hero.png","alt":"A"}`, "want an absolute http or https URL"},
		{"javascript", `{"type":"image","src":"javascript:alert(1)","alt":"A"}`, "want an absolute http or https URL"},
		{"data", `{"type":"image","src":"data:image/png;base64,iVBORw0KGgo=","alt":"A"}`, "want an absolute http or https URL"},
		{"ftp", `{"type":"image","src":"ftp://example.com/a.png","alt":"A"}`, "want an absolute http or https URL"},
		{"user", `{"type":"image","src":"https://u:p@example.com/a.png","alt":"A"}`, "want an absolute http or https URL"},
		{"space", `{"type":"image","src":"https://example.com/my photo.png","alt":"A"}`, `holds ' ': percent-encode it`},
		{"quote", `{"type":"image","src":"https://example.com/a.png\" onerror=\"x","alt":"A"}`, `holds '"': percent-encode it`},
		{"angle", `{"type":"image","src":"https://example.com/<a>.png","alt":"A"}`, `holds '<'`},
		{"newline", `{"type":"image","src":"https://example.com/a\n.png","alt":"A"}`, `holds '\n'`},
		{"long", `{"type":"image","src":"https://example.com/` + strings.Repeat("a", 2048) + `","alt":"A"}`, "longer than 2048 bytes"},
		{"no alt", `{"type":"image",` + src + `}`, "block 0 (image): needs alt, the text shown in place of the image"},
		{"blank alt", `{"type":"image",` + src + `,"alt":"  "}`, "needs alt"},
		{"too wide", `{"type":"image",` + src + `,"alt":"A","width":521}`,
			"block 0 (image): width 521: want 1 to 520 px (the 600 px content width less the padding)"},
		{"too wide unpadded", `{"type":"image",` + src + `,"alt":"A","width":601,"padding":"0"}`, "width 601: want 1 to 600 px"},
		{"too wide padded", `{"type":"image",` + src + `,"alt":"A","width":500,"padding":"0 0 0 120px"}`, "width 500: want 1 to 480 px"},
		{"negative width", `{"type":"image",` + src + `,"alt":"A","width":-1}`, "width -1: want 1 to 520 px"},
		{"too tall", `{"type":"image",` + src + `,"alt":"A","height":3001}`, "block 0 (image): height 3001: want 1 to 3000 px"},
		{"negative height", `{"type":"image",` + src + `,"alt":"A","height":-5}`, "height -5: want 1 to 3000 px"},
		{"no room", `{"type":"image",` + src + `,"alt":"A","padding":"0 300px"}`, `padding "0 300px" leaves no room for the image in the 600 px width`},
		{"align", `{"type":"image",` + src + `,"alt":"A","align":"middle"}`, `block 0 (image): align "middle"`},
		{"unknown field", `{"type":"image",` + src + `,"alt":"A","srcset":"x"}`, `unknown field "srcset"`},
	} {
		_, err := design.ParseDocument([]byte(imageDoc(c.block)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// Build writes an image block as mail clients need it: in its row's cell,
// aligned by the cell and its margins, with width (and height when
// given) attributes, as wide in CSS but shrinking with the column,
// display:block, border 0, the alt text styled, a link around it when
// it has one; the text part shows the alt text and the link.
func TestDesignImageBuild(t *testing.T) {
	const src = `"src":"https://mail.example.com/media/7/hero.png"`
	for _, c := range []struct {
		name, block string
		want        []string // in the HTML, in order
		not         []string
		text        string // the text part
	}{
		{"defaults", `{"type":"image",` + src + `,"alt":"Our new studio"}`,
			[]string{`<td class="px" align="center" style="padding:16px 40px;background-color:#fff;text-align:center;">`,
				`<img src="https://mail.example.com/media/7/hero.png" width="520" alt="Our new studio" border="0" ` +
					`style="display:block;width:520px;max-width:100%;height:auto;margin:0 auto;border:0;outline:none;` +
					`text-decoration:none;font-family:Arial, sans-serif;font-size:14px;line-height:20px;color:#666;">`},
			[]string{` height="`, `<a href="https://mail.example.com`}, "Our new studio"},
		{"sized, linked, right", `{"type":"image",` + src + `,"alt":"Shop the sale","width":200,"height":80,` +
			`"url":"https://example.com/shop?a=1&b=2","align":"right","color":"#333"}`,
			[]string{`<td class="px" align="right" style="padding:16px 40px;background-color:#fff;text-align:right;">`,
				`<a href="https://example.com/shop?a=1&amp;b=2" target="_blank" style="text-decoration:none;">` +
					`<img src="https://mail.example.com/media/7/hero.png" width="200" height="80" alt="Shop the sale" border="0" ` +
					`style="display:block;width:200px;max-width:100%;height:auto;margin:0 0 0 auto;`,
				`color:#333;"></a>`},
			nil, "Shop the sale (https://example.com/shop?a=1&b=2)"},
		{"left", `{"type":"image",` + src + `,"alt":"Logo","width":120,"align":"left"}`,
			[]string{`align="left"`, `width="120"`, `width:120px;max-width:100%;height:auto;margin:0;border:0;`}, nil, "Logo"},
		{"full bleed", `{"type":"image",` + src + `,"alt":"Hero","padding":"0","background":"#102030"}`,
			[]string{`style="padding:0;background-color:#102030;text-align:center;"`, `width="600"`, `width:600px;`}, nil, "Hero"},
		{"asymmetric padding", `{"type":"image",` + src + `,"alt":"A","padding":"8px 10px 8px 30px"}`,
			[]string{`width="560"`}, nil, "A"},
		{"widest", `{"type":"image",` + src + `,"alt":"A","width":520}`, []string{`width="520"`}, nil, "A"},
		{"escaped", `{"type":"image","src":"http://img.example.com/a.png?w=600&h=300","alt":"\"Tom & Jerry\" <3"}`,
			[]string{`src="http://img.example.com/a.png?w=600&amp;h=300"`, `alt="&quot;Tom &amp; Jerry&quot; &lt;3"`},
			[]string{`alt=""Tom`}, `"Tom & Jerry" <3`},
		{"placeholder link", `{"type":"image",` + src + `,"alt":"Preferences","url":"((unsubscribe_preferences))"}`,
			[]string{`<a href="((unsubscribe_preferences))"`}, nil, "Preferences (((unsubscribe_preferences)))"},
	} {
		html, err := design.Build([]byte(imageDoc(c.block)))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		at := 0
		for _, w := range c.want {
			i := strings.Index(html[at:], w)
			if i < 0 {
				t.Errorf("%s: no %s (in order) in\n%s", c.name, w, html)
				break
			}
			at += i + len(w)
		}
		for _, n := range c.not {
			if strings.Contains(html, n) {
				t.Errorf("%s: has %s", c.name, n)
			}
		}
		if strings.Count(html, "<img") != 1 {
			t.Errorf("%s: %d images", c.name, strings.Count(html, "<img"))
		}
		if text, _, _ := strings.Cut(render.Text(html), "\n"); text != c.text {
			t.Errorf("%s: text part starts %q, want %q", c.name, text, c.text)
		}
	}
}
