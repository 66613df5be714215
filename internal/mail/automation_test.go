package mail

import (
	"reflect"
	"testing"
)

// A schedule's bodies: a blank template_html is its design template's
// html_code; a blank template_json that template's json_code only when
// the HTML is the template's too.
func TestParseScheduleBodies(t *testing.T) {
	t.Parallel()
	designs := map[int64]DesignRef{1: {HTML: "<blank>", JSON: `{"b":1}`, Preview: "blank.png"},
		2: {HTML: "<news>", JSON: `{"n":1}`, Preview: "news.png"}}
	rules := ScheduleRules{
		Design: func(id int64) (DesignRef, bool) { d, ok := designs[id]; return d, ok },
		Lookup: func(SendRefs) (SendRefsFound, error) { return SendRefsFound{Sender: true, SenderVerified: true}, nil },
	}
	base := ScheduleForm{SenderID: "3", Subject: " Hi ", WaitingType: "Days"}
	for _, tc := range []struct {
		name string
		edit func(*ScheduleForm)
		want ScheduleInput
	}{
		{"defaults", func(*ScheduleForm) {},
			ScheduleInput{SenderID: 3, Subject: "Hi", WaitingPeriod: 1, WaitingType: WaitDays, TemplateID: 1,
				PreviewImg: "blank.png", TemplateJSON: `{"b":1}`, TemplateHTML: "<blank>"}},
		{"template 2, html given", func(f *ScheduleForm) { f.TemplateID, f.TemplateHTML = "2", " <p>x</p>" },
			ScheduleInput{SenderID: 3, Subject: "Hi", WaitingPeriod: 1, WaitingType: WaitDays, TemplateID: 2,
				PreviewImg: "news.png", TemplateHTML: " <p>x</p>"}},
		{"json only", func(f *ScheduleForm) { f.TemplateJSON, f.PreviewImg = `{"j":1}`, "mine.png" },
			ScheduleInput{SenderID: 3, Subject: "Hi", WaitingPeriod: 1, WaitingType: WaitDays, TemplateID: 1,
				PreviewImg: "mine.png", TemplateJSON: `{"j":1}`, TemplateHTML: "<blank>"}},
		{"instantly takes 0", func(f *ScheduleForm) { f.WaitingType, f.WaitingPeriod = "instantly", "0" },
			ScheduleInput{SenderID: 3, Subject: "Hi", WaitingPeriod: 0, WaitingType: WaitInstantly, TemplateID: 1,
				PreviewImg: "blank.png", TemplateJSON: `{"b":1}`, TemplateHTML: "<blank>"}},
	} {
		f := base
		tc.edit(&f)
		got, err := ParseSchedule(f, rules)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v %v\nwant %+v", tc.name, got, err, tc.want)
		}
	}
}
