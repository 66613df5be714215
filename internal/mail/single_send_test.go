package mail

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseListRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ListRef
		ok   bool
	}{
		{"contacts_3", ListRef{ListContacts, 3}, true},
		{"segments_70", ListRef{ListSegments, 70}, true},
		{"segments_9223372036854775807", ListRef{ListSegments, 1<<63 - 1}, true},
		{"contacts_03", ListRef{}, false},
		{"contacts_00", ListRef{}, false},
		{"contacts_ 1", ListRef{}, false},
		{"contacts_1 ", ListRef{}, false},
		{"contacts_1e0", ListRef{}, false},
		{"contacts_0x1", ListRef{}, false},
		{"contacts_1_000", ListRef{}, false},
		{"contacts_１", ListRef{}, false},
		{"segments_9223372036854775808", ListRef{}, false},
		{"contacts_" + strings.Repeat("9", 400), ListRef{}, false},
		{"contacts_" + strings.Repeat("0", 400) + "1", ListRef{}, false},
		{"contacts_", ListRef{}, false},
		{"contacts_0", ListRef{}, false},
		{"contacts_-1", ListRef{}, false},
		{"contacts_+1", ListRef{}, false},
		{"contacts_1x", ListRef{}, false},
		{"contacts_99999999999999999999", ListRef{}, false},
		{"Contacts_1", ListRef{}, false},
		{"lists_1", ListRef{}, false},
		{"3", ListRef{}, false},
	} {
		got, ok := ParseListRef(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseListRef(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if back, _ := ParseListRef(got.Key()); ok && back != got {
			t.Errorf("%q: key %q reads as %v", tc.in, got.Key(), back)
		}
	}
}

func TestUTR(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := NewUTR(), NewUTR()
	if !re.MatchString(a) || a == b {
		t.Fatalf("NewUTR: %q, %q", a, b)
	}
	for in, want := range map[string]string{
		a:                                       a,
		strings.ToUpper(a):                      a,
		" " + a + " ":                           a,
		"6f1c1a7e-0000-4000-8000-00000000000":   "",
		"6f1c1a7e00004000800000000000000000000": "",
		"6f1c1a7e-0000-4000-8000-00000000000g":  "",
		"":                                      "",
	} {
		got, ok := ParseUTR(in)
		if got != want || ok != (want != "") {
			t.Errorf("ParseUTR(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestOpenTokens(t *testing.T) {
	lists := []ListRef{{ListContacts, 3}, {ListSegments, 3}}
	first := OpenTokens(lists, nil)
	if len(first) != 2 || len(first["contacts_3"]) != 22 || first["contacts_3"] == first["segments_3"] {
		t.Fatalf("tokens %v", first)
	}
	next := OpenTokens([]ListRef{{ListSegments, 3}, {ListContacts, 4}}, first)
	if len(next) != 2 || next["segments_3"] != first["segments_3"] || next["contacts_4"] == "" || next["contacts_4"] == first["contacts_3"] {
		t.Fatalf("tokens after a change %v (before %v)", next, first)
	}
}

// sendForm is a valid scheduled send.
func sendForm() SingleSendForm {
	return SingleSendForm{TemplateID: "2", SenderID: "5", GroupID: "6", Name: " Weekly ", Subject: "Hi", Preheader: "P",
		Recipients: []string{"contacts_1", " segments_2", "contacts_1", ""}, Excluded: []string{"contacts_3"},
		ScheduleType: "1", ScheduleDate: "2030-01-02", ScheduleTime: "03:04", TemplateHTML: "  <p>x</p>\n"}
}

// refsAll finds every record.
func refsAll(r SendRefs) (SendRefsFound, error) {
	return SendRefsFound{Sender: true, SenderVerified: true, Group: true, Types: r.TypeIDs, Segments: r.SegmentIDs}, nil
}

func TestParseSingleSend(t *testing.T) {
	rules := SingleSendRules{Template: func(id int64) bool { return id >= 1 && id <= 5 }, Lookup: refsAll}
	in, err := ParseSingleSend(sendForm(), rules)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	html := "  <p>x</p>\n"
	want := SingleSendInput{TemplateID: 2, TemplateHTML: &html, SenderID: 5, GroupID: 6, Name: "Weekly", Subject: "Hi",
		Preheader: "P", Recipients: []ListRef{{ListContacts, 1}, {ListSegments, 2}}, Excluded: []ListRef{{ListContacts, 3}},
		Schedule: &at}
	if !reflect.DeepEqual(in, want) {
		t.Fatalf("got %+v\nwant %+v", in, want)
	}

	var asked []SendRefs
	rules.Lookup = func(r SendRefs) (SendRefsFound, error) {
		asked = append(asked, r)
		return SendRefsFound{Sender: true, Types: []int64{3}}, nil
	}
	_, err = ParseSingleSend(sendForm(), rules)
	wantFields := map[string][]string{
		"sender_id":            {"The selected sender is not verified."},
		"unsubscribe_group_id": {"The selected unsubscribe group id is invalid."},
		"recipient_id":         {"The selected recipient id is invalid."},
	}
	var e *Error
	if !errors.As(err, &e) || !reflect.DeepEqual(e.Fields, wantFields) {
		t.Fatalf("got %v", err)
	}
	if want := []SendRefs{{SenderID: 5, GroupID: 6, TypeIDs: []int64{1, 3}, SegmentIDs: []int64{2}}}; !reflect.DeepEqual(asked, want) {
		t.Fatalf("looked up %+v, want %+v", asked, want)
	}
	rules.AllowUnverified = true
	_, err = ParseSingleSend(sendForm(), rules)
	if !errors.As(err, &e) || e.Fields["sender_id"] != nil {
		t.Fatalf("unverified sender refused with AllowUnverified: %v", err)
	}

	// Nothing to look up: no lookup.
	asked = nil
	if _, err := ParseSingleSend(SingleSendForm{}, rules); err == nil || asked != nil {
		t.Fatalf("empty form: %v, looked up %v", err, asked)
	}
	// A failed lookup is the caller's error, not a validation failure.
	boom := errors.New("boom")
	rules.Lookup = func(SendRefs) (SendRefsFound, error) { return SendRefsFound{}, boom }
	if _, err := ParseSingleSend(sendForm(), rules); err != boom {
		t.Fatalf("lookup failure: %v", err)
	}
}

func TestParseSchedule(t *testing.T) {
	rules := SingleSendRules{Template: func(int64) bool { return true }, Lookup: refsAll}
	for _, tc := range []struct {
		typ, date, clock string
		want             *time.Time
		fields           []string
	}{
		{"0", "", "", nil, nil},
		{"false", "bad", "bad", nil, nil},
		{"1", "2024-02-29", "23:59:59", ptrTime(time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)), nil},
		{"true", "0001-01-01", "00:00", ptrTime(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)), nil},
		{"1", "2023-02-29", "12:00", nil, []string{"schedule_date"}},
		{"1", "2023-02-28", "12:60", nil, []string{"schedule_time"}},
		{"1", "2023-2-28", "1:00", nil, []string{"schedule_date", "schedule_time"}},
		{"1", "", "", nil, []string{"schedule_date", "schedule_time"}},
		{"2", "2023-02-28", "12:00", nil, []string{"schedule_type"}},
		{"", "2023-02-28", "12:00", nil, []string{"schedule_type"}},
	} {
		f := sendForm()
		f.ScheduleType, f.ScheduleDate, f.ScheduleTime = tc.typ, tc.date, tc.clock
		in, err := ParseSingleSend(f, rules)
		var fields []string
		var e *Error
		if errors.As(err, &e) {
			fields = e.FieldNames()
		}
		if !reflect.DeepEqual(fields, tc.fields) || !reflect.DeepEqual(in.Schedule, tc.want) {
			t.Errorf("%q %q %q: schedule %v, fields %v; want %v, %v", tc.typ, tc.date, tc.clock, in.Schedule, fields, tc.want, tc.fields)
		}
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

func TestSenderPostalAddress(t *testing.T) {
	s := Sender{Address: "Marienplatz 1", City: " ", State: "Bayern", Country: "Germany"}
	if got := s.PostalAddress(); got != "Marienplatz 1, Bayern, Germany" {
		t.Fatalf("got %q", got)
	}
	if got := (Sender{}).PostalAddress(); got != "" {
		t.Fatalf("empty sender: %q", got)
	}
}
