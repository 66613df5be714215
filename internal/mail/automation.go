package mail

import (
	"strconv"
	"strings"
	"time"
)

// Automation statuses (migrations/00016_automations.sql).
const (
	AutomationDraft int16 = 0 // new, duplicated or paused
	AutomationLive  int16 = 1 // enrolls and mails
)

// Automation types: create takes the words, the resource shows the
// numbers (DECISIONS).
const (
	AutomationWelcome int16 = 1 // enrolls contacts that join the target while live
	AutomationCustom  int16 = 2 // also every member at set-live
)

// Waiting types of an automation schedule.
const (
	WaitInstantly = "instantly"
	WaitHours     = "hours"
	WaitDays      = "days"
)

// Limits of automation input (docs/automations.md).
const (
	// MaxWaitDays bounds waiting_period in days (ten years), and
	// MaxWaitDays*24 in hours.
	MaxWaitDays = 3650
	// MaxAutomationSchedules is how many schedules an automation may have.
	MaxAutomationSchedules = 100
)

// Events of automations.
const (
	EventAutomationSetLive = "automation.set_live" // subject: automation; payload: automation_name, automation_type
	EventAutomationPaused  = "automation.paused"   // subject: automation; payload: automation_name
)

// AutomationForm is an automation create as received.
type AutomationForm struct {
	Type         string // welcome or custom
	GroupID      string // unsubscribe_group_id
	For          string // automation_for: contacts_{id} or segments_{id}
	Name         string // automation_name
	ExitCriteria string
}

// AutomationRules are what validating an automation needs beyond its
// form.
type AutomationRules struct {
	// Lookup finds the account's records the automation names, in one
	// call (SendRefs: the group, a contact type or a segment).
	Lookup func(SendRefs) (SendRefsFound, error)
}

// AutomationInput is a validated automation create.
type AutomationInput struct {
	Name         string
	Type         int16   // AutomationWelcome when absent
	Target       ListRef // what it enrolls from
	GroupID      *int64  // nil: none yet (set-live asks for one)
	ExitCriteria int16
}

// ParseAutomation validates an automation create. automation_name is
// required, as the contract's failure reports; automation_for too, as an
// automation without a target could never enroll anyone. type is welcome
// when absent and unsubscribe_group_id may be given later (set-live
// refuses an automation without one); each is checked when given.
// Fields are reported in the order automation_name, automation_for, type,
// unsubscribe_group_id, exit_criteria; records are looked up once.
func ParseAutomation(f AutomationForm, rules AutomationRules) (AutomationInput, error) {
	in := AutomationInput{Type: AutomationWelcome}
	var p Problems

	switch name := strings.TrimSpace(f.Name); {
	case name == "":
		p.Required("automation_name")
	default:
		if msg := LineProblem("automation_name", name); msg != "" {
			p.Add("automation_name", msg)
		} else {
			in.Name = name
		}
	}
	targetOK := false
	switch v := strings.TrimSpace(f.For); {
	case v == "":
		// Required too, but reported only once the name is given: a create
		// missing both answers exactly the contract's documented failure
		// (automation_name alone).
		if strings.TrimSpace(f.Name) != "" {
			p.Required("automation_for")
		}
	default:
		in.Target, targetOK = ParseListRef(v)
		if !targetOK {
			p.Add("automation_for", "The selected automation for is invalid.")
		}
	}
	switch strings.ToLower(strings.TrimSpace(f.Type)) {
	case "", "welcome":
	case "custom":
		in.Type = AutomationCustom
	default:
		p.Add("type", "The selected type is invalid.")
	}
	if v := strings.TrimSpace(f.GroupID); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			p.Add("unsubscribe_group_id", "The unsubscribe group id must be an integer.")
		} else {
			in.GroupID = &n
		}
	}
	switch strings.TrimSpace(f.ExitCriteria) {
	case "", "0":
	case "1":
		in.ExitCriteria = 1
	default:
		p.Add("exit_criteria", "The selected exit criteria is invalid.")
	}

	refs := SendRefs{}
	if in.GroupID != nil {
		refs.GroupID = *in.GroupID
	}
	if targetOK {
		if in.Target.Table == ListContacts {
			refs.TypeIDs = []int64{in.Target.ID}
		} else {
			refs.SegmentIDs = []int64{in.Target.ID}
		}
	}
	if refs.GroupID != 0 || targetOK {
		got, err := rules.Lookup(refs)
		if err != nil {
			return in, err
		}
		if targetOK && len(got.Types)+len(got.Segments) == 0 {
			p.Add("automation_for", "The selected automation for is invalid.")
		}
		if refs.GroupID != 0 && !got.Group {
			p.Add("unsubscribe_group_id", "The selected unsubscribe group id is invalid.")
		}
	}
	return in, p.Err()
}

// DesignRef is what a schedule takes from its design template.
type DesignRef struct {
	HTML, JSON, Preview string
}

// ScheduleForm is an automation schedule create as received.
type ScheduleForm struct {
	SenderID      string
	Subject       string
	WaitingPeriod string
	WaitingType   string
	TemplateID    string
	PreviewImg    string
	TemplateJSON  string // as sent, untrimmed
	TemplateHTML  string // as sent, untrimmed
}

// ScheduleRules are what validating a schedule needs beyond its form.
type ScheduleRules struct {
	// Design returns the design template of the catalogue with id.
	Design func(id int64) (DesignRef, bool)
	// Lookup finds the account's sender (SendRefs.SenderID).
	Lookup func(SendRefs) (SendRefsFound, error)
	// AllowUnverified lets a schedule use an unverified sender
	// (ALLOW_UNVERIFIED_SENDERS).
	AllowUnverified bool
	// MailSize refuses a template_html whose mails can be too large (an
	// automation's mails have no preheader).
	MailSize MailSize
}

// ScheduleInput is a validated automation schedule create.
type ScheduleInput struct {
	SenderID      int64
	Subject       string
	WaitingPeriod int32
	WaitingType   string
	TemplateID    int64
	PreviewImg    string
	TemplateJSON  string
	TemplateHTML  string // the body sent
}

// ParseSchedule validates an automation schedule create. sender_id,
// subject and waiting_type are required, as the contract's failure
// reports; waiting_period is 1 when absent, template_id 1 (the blank
// canvas), preview_img the template's preview, and a blank template_html
// is the template's html_code (a blank template_json its json_code when
// both are blank, else empty). waiting_period's range depends on
// waiting_type: when the type is missing or invalid the period is only
// checked to be an integer. Fields are reported in the order sender_id,
// subject, waiting_period, waiting_type, template_id, preview_img,
// template_html, template_json.
func ParseSchedule(f ScheduleForm, rules ScheduleRules) (ScheduleInput, error) {
	in := ScheduleInput{WaitingPeriod: 1, TemplateID: 1}
	found := map[string][]string{}
	add := func(field, msg string) { found[field] = append(found[field], msg) }

	switch v := strings.TrimSpace(f.SenderID); {
	case v == "":
		add("sender_id", RequiredMessage("sender_id"))
	default:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			add("sender_id", "The sender id must be an integer.")
		} else {
			in.SenderID = n
		}
	}
	switch v := strings.TrimSpace(f.Subject); {
	case v == "":
		add("subject", RequiredMessage("subject"))
	default:
		if msg := LineProblem("subject", v); msg != "" {
			add("subject", msg)
		} else {
			in.Subject = v
		}
	}
	in.WaitingType = strings.ToLower(strings.TrimSpace(f.WaitingType))
	switch in.WaitingType {
	case "":
		add("waiting_type", RequiredMessage("waiting_type"))
	case WaitInstantly, WaitHours, WaitDays:
	default:
		add("waiting_type", "The selected waiting type is invalid.")
		in.WaitingType = ""
	}
	if v := strings.TrimSpace(f.WaitingPeriod); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		lo, hi := int64(1), int64(MaxWaitDays*24)
		switch in.WaitingType {
		case WaitInstantly:
			lo = 0 // not waited for
		case WaitDays:
			hi = MaxWaitDays
		}
		switch {
		case err != nil:
			add("waiting_period", "The waiting period must be an integer.")
		case in.WaitingType == "":
			// waiting_type missing or invalid, and reported: the range
			// depends on it, so the period is not judged against one.
		case n < lo || n > hi:
			add("waiting_period", "The waiting period must be between "+strconv.FormatInt(lo, 10)+" and "+
				strconv.FormatInt(hi, 10)+".")
		default:
			in.WaitingPeriod = int32(n)
		}
	}
	design, designOK := rules.Design(1)
	if v := strings.TrimSpace(f.TemplateID); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil || n <= 0:
			add("template_id", "The template id must be an integer.")
			designOK = false
		default:
			if design, designOK = rules.Design(n); !designOK {
				add("template_id", "The selected template id is invalid.")
			} else {
				in.TemplateID = n
			}
		}
	}
	switch v := strings.TrimSpace(f.PreviewImg); {
	case v == "":
		in.PreviewImg = design.Preview
	default:
		if msg := LineProblem("preview_img", v); msg != "" {
			add("preview_img", msg)
		} else {
			in.PreviewImg = v
		}
	}
	html := templateBody("template_html", f.TemplateHTML, add)
	if html != nil {
		rules.MailSize.check(in.Subject, "", *html, add)
	}
	js := templateBody("template_json", f.TemplateJSON, add)
	if designOK {
		switch {
		case html == nil && js == nil:
			in.TemplateHTML, in.TemplateJSON = design.HTML, design.JSON
		case html == nil:
			in.TemplateHTML, in.TemplateJSON = design.HTML, *js
		case js == nil:
			in.TemplateHTML = *html
		default:
			in.TemplateHTML, in.TemplateJSON = *html, *js
		}
	}

	if in.SenderID != 0 {
		got, err := rules.Lookup(SendRefs{SenderID: in.SenderID})
		if err != nil {
			return in, err
		}
		switch {
		case !got.Sender:
			add("sender_id", "The selected sender id is invalid.")
		case !got.SenderVerified && !rules.AllowUnverified:
			add("sender_id", "The selected sender is not verified.")
		}
	}

	var p Problems
	for _, field := range []string{"sender_id", "subject", "waiting_period", "waiting_type", "template_id", "preview_img",
		"template_html", "template_json"} {
		for _, msg := range found[field] {
			p.Add(field, msg)
		}
	}
	return in, p.Err()
}

// Automation is an automation as stored.
type Automation struct {
	ID            int64
	UserID        int64
	UTR           string
	Name          string
	Type          int16
	Target        ListRef
	ExitCriteria  int16
	GroupID       *int64
	Status        int16
	LiveAt        *time.Time
	Triggered     int64
	Delivered     int64
	UniqueOpens   int64
	TotalOpens    int64
	Bounces       int64
	Unsubscribes  int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	ScheduleCount int64 // filled by the list only
}

// AutomationSchedule is a mail of an automation as stored.
type AutomationSchedule struct {
	ID            int64
	UserID        int64
	AutomationID  int64
	UTR           string
	SenderID      int64
	TemplateID    int64
	Subject       string
	WaitingPeriod int32
	WaitingType   string
	PreviewImg    string
	TemplateJSON  *string
	TemplateHTML  *string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// SetLive is what setting an automation live did.
type SetLive struct {
	ID      int64
	Changed bool // false: it was live already
}
