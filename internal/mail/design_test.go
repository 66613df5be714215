package mail

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A stand-in for design.Build: a document is valid when it is "{ok}", and
// its HTML says so; anything else fails as ParseDocument words a block's
// failure. (httpapi's and the console's tests run the real one.)
func buildStub(js []byte) (string, error) {
	if string(js) != "{ok}" {
		return "", errors.New("design: block 2 (image): needs alt, the text shown in place of the image")
	}
	return "<p>built</p>", nil
}

func TestParseDesign(t *testing.T) {
	t.Parallel()
	size := MailSize{Max: 100, Worst: func(subject, preheader, html string) (int, bool) {
		return len(subject) + len(preheader) + len(html), true
	}}
	rules := DesignRules{Build: buildStub, Subject: "Hi", MailSize: size}
	big := strings.Repeat("x", MaxTemplateBytes+1)
	long := "<p>" + strings.Repeat("y", 200) + "</p>"
	for _, tc := range []struct {
		name string
		f    DesignForm
		want DesignInput
		errs map[string][]string
	}{
		{"json", DesignForm{TemplateJSON: "{ok}"}, DesignInput{TemplateJSON: ptr("{ok}"), TemplateHTML: "<p>built</p>"}, nil},
		{"html", DesignForm{TemplateHTML: "<p>mine</p>", TemplateJSON: "  "}, DesignInput{TemplateHTML: "<p>mine</p>"}, nil},
		{"neither", DesignForm{TemplateHTML: " \n"}, DesignInput{},
			map[string][]string{"template_json": {"The template json field is required when template html is not present."}}},
		{"both", DesignForm{TemplateJSON: "{ok}", TemplateHTML: "<p>mine</p>"}, DesignInput{},
			map[string][]string{"template_html": {"The template html field is prohibited when template json is present: the html is built from the design."}}},
		{"bad document", DesignForm{TemplateJSON: "{}"}, DesignInput{},
			map[string][]string{"template_json": {"The template json is not a valid design: block 3 (image): needs alt, the text shown in place of the image."}}},
		{"too long", DesignForm{TemplateJSON: big, TemplateHTML: big}, DesignInput{},
			map[string][]string{"template_json": {"The template json may not be larger than 1048576 bytes."},
				"template_html": {"The template html may not be larger than 1048576 bytes."}}},
		{"mail too large", DesignForm{TemplateHTML: long}, DesignInput{TemplateHTML: long},
			map[string][]string{"template_html": {"The template html may not make mails larger than 100 bytes; with every placeholder at its longest value its mails take up to 209 bytes."}}},
	} {
		got, err := ParseDesign(tc.f, rules)
		var fields map[string][]string
		if e := (*Error)(nil); errors.As(err, &e) {
			fields = e.Fields
		} else if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(fields, tc.errs) {
			t.Errorf("%s: errors %v, want %v", tc.name, fields, tc.errs)
		}
		if tc.errs == nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// A document whose built HTML is too large answers under template_json.
	rules.Build = func([]byte) (string, error) { return long, nil }
	_, err := ParseDesign(DesignForm{TemplateJSON: "{ok}"}, rules)
	if e := (*Error)(nil); !errors.As(err, &e) || len(e.Fields["template_json"]) != 1 ||
		!strings.HasPrefix(e.Fields["template_json"][0], "The design's html may not make mails larger than 100 bytes") {
		t.Errorf("built too large: %v", err)
	}
}

func TestParseTestRecipients(t *testing.T) {
	t.Parallel()
	to, err := ParseTestRecipients("test_recipients", []string{"a@example.com, b@example.com\nA@example.com"})
	if err != nil || len(to) != 2 {
		t.Fatalf("%v %v", to, err)
	}
	_, err = ParseTestRecipients("test_recipients", []string{"1@x.example,2@x.example,3@x.example,4@x.example,5@x.example,6@x.example"})
	if FirstMessage(err) != "The test recipients may not have more than 5 addresses." {
		t.Fatalf("six: %v", err)
	}
	_, err = ParseTestRecipients("test_recipients", []string{"<b>@x"})
	if FirstMessage(err) != `The test recipients "<b>@x" is not a valid email address.` {
		t.Fatalf("invalid: %q", FirstMessage(err))
	}
	if _, err = ParseTestRecipients("test_recipients", []string{" "}); FirstMessage(err) != "The test recipients field is required." {
		t.Fatalf("blank: %v", err)
	}
}

func ptr(s string) *string { return &s }
