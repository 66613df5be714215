package mail

import (
	"strconv"
	"strings"
)

// DesignForm is a design save as received: a schedule's or a single
// send's template_json (a design document) or template_html.
type DesignForm struct {
	TemplateJSON string // as sent, untrimmed
	TemplateHTML string // as sent, untrimmed
}

// DesignRules are what checking a design needs beyond its form.
type DesignRules struct {
	// Build checks a design document and writes its HTML (design.Build);
	// its error says what is wrong with the document.
	Build func(json []byte) (string, error)
	// Subject and Preheader are the mail's, for MailSize.
	Subject, Preheader string
	// MailSize refuses a design whose mails can be too large.
	MailSize MailSize
}

// DesignInput is a checked design save.
type DesignInput struct {
	// TemplateJSON is the design document as given; nil when the design is
	// HTML alone (the block editor no longer opens it).
	TemplateJSON *string
	// TemplateHTML is what the mails are made from: Build's HTML of the
	// document, or the HTML given.
	TemplateHTML string
}

// MaxTestRecipients bounds the addresses of a test send.
const MaxTestRecipients = 5

// ParseDesign checks a design save, as the API's schedule design route
// and the console's editor both take it: template_json, a design
// document whose HTML is built from it (template_html must then be
// blank, since the HTML is the document's), or template_html alone. Each
// is at most MaxTemplateBytes, and the HTML may not make mails larger
// than MailSize allows. Fields are reported in the order template_json,
// template_html.
func ParseDesign(f DesignForm, rules DesignRules) (DesignInput, error) {
	var in DesignInput
	found := map[string][]string{}
	add := func(field, msg string) { found[field] = append(found[field], msg) }
	js := templateBody("template_json", f.TemplateJSON, add)
	html := templateBody("template_html", f.TemplateHTML, add)
	switch {
	case len(found) > 0:
	case js != nil && html != nil:
		add("template_html", "The template html field is prohibited when template json is present: the html is built from the design.")
	case js != nil:
		built, err := rules.Build([]byte(*js))
		if err != nil {
			add("template_json", DesignProblem(err))
			break
		}
		in.TemplateJSON, in.TemplateHTML = js, built
		// The built HTML's size is the document's to answer for.
		rules.MailSize.check(rules.Subject, rules.Preheader, built, func(_, msg string) {
			add("template_json", strings.Replace(msg, "The template html", "The design's html", 1))
		})
	case html != nil:
		in.TemplateHTML = *html
		rules.MailSize.check(rules.Subject, rules.Preheader, *html, add)
	default:
		add("template_json", "The template json field is required when template html is not present.")
	}
	var p Problems
	for _, field := range []string{"template_json", "template_html"} {
		for _, msg := range found[field] {
			p.Add(field, msg)
		}
	}
	return in, p.Err()
}

// DesignProblem words a design document's error (design.ParseDocument's,
// "design: block 2 (image): needs alt, …") as the template_json message:
// blocks are counted from 1, as the editor shows them.
func DesignProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "design: ")
	if rest, ok := strings.CutPrefix(msg, "block "); ok {
		if i := strings.IndexByte(rest, ' '); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				msg = "block " + strconv.Itoa(n+1) + rest[i:]
			}
		}
	}
	msg = strings.TrimSuffix(msg, ".")
	return "The template json is not a valid design: " + msg + "."
}

// ParseTestRecipients reads the addresses of a test send (field
// test_recipients): ParseEmailList's rules, at most MaxTestRecipients.
func ParseTestRecipients(field string, values []string) ([]Email, error) {
	to, err := ParseEmailList(field, values)
	if err == nil && len(to) > MaxTestRecipients {
		err = Invalid(field, "The "+Label(field)+" may not have more than "+strconv.Itoa(MaxTestRecipients)+" addresses.")
	}
	return to, err
}

// What a design belongs to (the design editor's addresses name it).
const (
	DesignSchedule   = "schedule"    // an automation's schedule: /design/editor/{utr}
	DesignSingleSend = "single-send" // a single send: /design/editor/single-send/{utr}
)

// DesignRecord is the design of a schedule or a single send, with what
// its mails are made with.
type DesignRecord struct {
	Kind          string // DesignSchedule or DesignSingleSend
	UTR           string
	Name          string // the send's name, or the schedule's automation's
	AutomationUTR string // a schedule's automation
	Subject       string
	Preheader     string // a send's; a schedule's mails have none
	SenderID      int64
	Sender        *Sender // nil when the sender is gone
	TemplateID    int64
	TemplateJSON  *string
	TemplateHTML  *string
	Status        int16 // a send's (SendDraft …); 0 for a schedule
}

// ReadOnly reports whether the design may no longer change: a running or
// completed send's (saving it answers ECONFLICT, as the API's update).
func (r *DesignRecord) ReadOnly() bool {
	return r.Kind == DesignSingleSend && (r.Status == SendRunning || r.Status == SendCompleted)
}

// DesignTest is a test mail of the design editor: the mail as the editor
// had it, to up to MaxTestRecipients addresses.
type DesignTest struct {
	ID         int64
	UserID     int64
	SenderID   int64
	Sender     *Sender // as read for sending; nil when the sender is gone
	ContactID  int64   // whose values the mail shows; 0: the sample contact
	Subject    string
	Preheader  string
	HTML       string
	Recipients []Email
	Done       []string // the addresses sent already
}

// SampleRecipient is the contact a design's preview and test mail show
// when no contact of the account is chosen: every reserved field and the
// usual custom ones filled, so each placeholder shows something.
func SampleRecipient() Recipient {
	return Recipient{Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace", AltEmail: "ada.lovelace@example.org",
		Country: "United Kingdom", State: "England", City: "London", AddressLine1: "12 St James's Square",
		AddressLine2: "Flat 3", StateProvinceRegion: "Greater London", PostalCode: "SW1Y 4JH",
		Custom: map[string]string{"father_name": "Lord Byron", "designation": "Analyst", "age": "36",
			"company_name": "Analytical Engines Ltd", "birth_date": "1815-12-10", "join_date": "2024-01-15"}}
}

// TestSubjectPrefix starts the subject of every test mail, so it is never
// taken for the mail itself.
const TestSubjectPrefix = "[Test] "
