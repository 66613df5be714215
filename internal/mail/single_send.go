package mail

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Single send statuses (migrations/00011_single_sends.sql).
const (
	SendDraft     int16 = 0 // a duplicate, until it is updated
	SendReady     int16 = 1 // waiting for its due_at
	SendRunning   int16 = 2 // its mails go out
	SendCompleted int16 = 3 // every recipient sent, skipped or bounced
)

// Limits of a single send's input (docs/single-sends.md).
const (
	// MaxTemplateBytes bounds template_html and template_json each.
	MaxTemplateBytes = 1 << 20
	// MaxSendLists bounds recipient_id and exclude_specific_recipient_id
	// each.
	MaxSendLists = 100
)

// Recipient list kinds, as a send names them (recipient_id elements are
// "contacts_3", "segments_7").
const (
	ListContacts = "contacts_" // a contact type's live contacts
	ListSegments = "segments_" // a segment's recipients
)

// ListRef is one recipient list of a send.
type ListRef struct {
	Table string // ListContacts or ListSegments
	ID    int64
}

// Key is the list as recipient_id and unique_open_token name it:
// "contacts_3".
func (l ListRef) Key() string { return l.Table + strconv.FormatInt(l.ID, 10) }

// ParseListRef reads "contacts_{id}" or "segments_{id}", the id in its
// canonical form only: decimal digits, no sign, space, exponent or leading
// zero, at most an int64. So a list has one name, the one Key gives it
// ("contacts_01" is not "contacts_1").
func ParseListRef(s string) (ListRef, bool) {
	for _, table := range []string{ListContacts, ListSegments} {
		if rest, ok := strings.CutPrefix(s, table); ok {
			if !digits(rest) || rest[0] == '0' {
				return ListRef{}, false
			}
			n, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				return ListRef{}, false
			}
			return ListRef{Table: table, ID: n}, true
		}
	}
	return ListRef{}, false
}

// SingleSendForm is a single send create or update as received.
type SingleSendForm struct {
	TemplateID   string
	TemplateJSON string // as sent, untrimmed
	TemplateHTML string // as sent, untrimmed
	SenderID     string
	GroupID      string // unsubscribe_group_id
	Name         string // single_send_name
	Subject      string
	Preheader    string
	Recipients   []string // recipient_id elements
	Excluded     []string // exclude_specific_recipient_id elements
	ScheduleType string
	ScheduleDate string
	ScheduleTime string
	Relay        string // the relay its mails go to first; "": none
}

// SendRefs are the records a send names, to be looked up in the account.
type SendRefs struct {
	SenderID   int64 // 0: none to look up
	GroupID    int64 // 0: none to look up
	TypeIDs    []int64
	SegmentIDs []int64
}

// SendRefsFound says which of SendRefs are the account's live records.
type SendRefsFound struct {
	Sender         bool
	SenderVerified bool
	Group          bool
	Types          []int64
	Segments       []int64
}

// SingleSendRules are what validating a send needs beyond its form.
type SingleSendRules struct {
	// Template reports whether id is a design template of the catalogue.
	Template func(id int64) bool
	// Lookup finds the account's records a send names, in one call.
	Lookup func(SendRefs) (SendRefsFound, error)
	// AllowUnverified lets a send use an unverified sender
	// (ALLOW_UNVERIFIED_SENDERS).
	AllowUnverified bool
	// MailSize refuses a template_html whose mails can be too large.
	MailSize MailSize
	// Relays are the relays SMTP_URL names, which a send's relay must be
	// one of; nil (no SMTP_URL here) takes any well-formed name.
	Relays []string
}

// SingleSendInput is a validated single send create or update.
type SingleSendInput struct {
	TemplateID   int64
	TemplateJSON *string // nil when not given
	TemplateHTML *string // nil when not given: the design template's html_code is sent
	SenderID     int64
	GroupID      int64
	Name         string
	Subject      string
	Preheader    string
	Recipients   []ListRef // distinct, in the order given
	Excluded     []ListRef // distinct, in the order given
	// Schedule is the UTC time of a scheduled send (schedule_type 1); nil
	// sends at once.
	Schedule *time.Time
	// Relay is the relay its mails go to first (docs/deliverability.md);
	// "": the relays' rules and weights choose.
	Relay string
}

// ParseSingleSend validates a single send create or update. Fields are
// reported in the contract's order: single_send_name, sender_id, subject,
// preheader, unsubscribe_group_id, schedule_type (then schedule_date,
// schedule_time), recipient_id, exclude_specific_recipient_id, then
// template_id (1 when absent), template_html, template_json. Records are looked up once,
// for the ids that parsed.
func ParseSingleSend(f SingleSendForm, rules SingleSendRules) (SingleSendInput, error) {
	var in SingleSendInput
	found := map[string][]string{}
	add := func(field, msg string) { found[field] = append(found[field], msg) }
	line := func(field, v string, dst *string) {
		switch v = strings.TrimSpace(v); {
		case v == "":
			add(field, RequiredMessage(field))
		default:
			if msg := LineProblem(field, v); msg != "" {
				add(field, msg)
			} else {
				*dst = v
			}
		}
	}
	id := func(field, v string) int64 {
		v = strings.TrimSpace(v)
		if v == "" {
			add(field, RequiredMessage(field))
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			add(field, "The "+Label(field)+" must be an integer.")
			return 0
		}
		return n
	}

	line("single_send_name", f.Name, &in.Name)
	in.SenderID = id("sender_id", f.SenderID)
	line("subject", f.Subject, &in.Subject)
	line("preheader", f.Preheader, &in.Preheader)
	in.GroupID = id("unsubscribe_group_id", f.GroupID)
	in.Schedule = parseSchedule(f, add)
	var recipientsOK, excludedOK bool
	in.Recipients, recipientsOK = parseLists("recipient_id", f.Recipients, true, add)
	in.Excluded, excludedOK = parseLists("exclude_specific_recipient_id", f.Excluded, false, add)
	// template_id is starred in the contract but not among the fields its
	// failure reports: absent, it is 1 (the custom/blank template).
	if strings.TrimSpace(f.TemplateID) == "" {
		in.TemplateID = 1
	} else if t := id("template_id", f.TemplateID); t != 0 {
		if rules.Template == nil || !rules.Template(t) {
			add("template_id", "The selected template id is invalid.")
		} else {
			in.TemplateID = t
		}
	}
	in.TemplateHTML = templateBody("template_html", f.TemplateHTML, add)
	if in.TemplateHTML != nil {
		rules.MailSize.check(in.Subject, in.Preheader, *in.TemplateHTML, add)
	}
	in.TemplateJSON = templateBody("template_json", f.TemplateJSON, add)
	in.Relay = parseRelay(f.Relay, rules.Relays, add)

	refs := SendRefs{SenderID: in.SenderID, GroupID: in.GroupID}
	for _, l := range append(in.Recipients[:len(in.Recipients):len(in.Recipients)], in.Excluded...) {
		if l.Table == ListContacts {
			refs.TypeIDs = append(refs.TypeIDs, l.ID)
		} else {
			refs.SegmentIDs = append(refs.SegmentIDs, l.ID)
		}
	}
	if refs.SenderID != 0 || refs.GroupID != 0 || len(refs.TypeIDs)+len(refs.SegmentIDs) > 0 {
		got, err := rules.Lookup(refs)
		if err != nil {
			return in, err
		}
		switch {
		case refs.SenderID == 0:
		case !got.Sender:
			add("sender_id", "The selected sender id is invalid.")
		case !got.SenderVerified && !rules.AllowUnverified:
			add("sender_id", "The selected sender is not verified.")
		}
		if refs.GroupID != 0 && !got.Group {
			add("unsubscribe_group_id", "The selected unsubscribe group id is invalid.")
		}
		live := func(l ListRef) bool {
			if l.Table == ListContacts {
				return slices.Contains(got.Types, l.ID)
			}
			return slices.Contains(got.Segments, l.ID)
		}
		if recipientsOK && !allLive(in.Recipients, live) {
			add("recipient_id", "The selected recipient id is invalid.")
		}
		if excludedOK && !allLive(in.Excluded, live) {
			add("exclude_specific_recipient_id", "The selected exclude specific recipient id is invalid.")
		}
	}

	var p Problems
	for _, field := range []string{"single_send_name", "sender_id", "subject", "preheader", "unsubscribe_group_id",
		"schedule_type", "schedule_date", "schedule_time", "recipient_id", "exclude_specific_recipient_id",
		"template_id", "template_html", "template_json", "relay"} {
		for _, msg := range found[field] {
			p.Add(field, msg)
		}
	}
	return in, p.Err()
}

// parseRelay reads a send's relay: none, or a relay's name (of relays
// when they are known).
func parseRelay(v string, relays []string, add func(field, msg string)) string {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
	case !ValidRelayName(v):
		add("relay", "The relay must be a relay name (a-z, 0-9, - and _, up to 63 characters).")
	case relays != nil && !slices.Contains(relays, v):
		add("relay", "The selected relay is invalid.")
	default:
		return v
	}
	return ""
}

// relayName is the form of a relay's name in SMTP_URL.
var relayName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidRelayName reports whether s is a relay's name.
func ValidRelayName(s string) bool { return relayName.MatchString(s) }

// parseSchedule reads schedule_type and, when it is 1, schedule_date
// (YYYY-MM-DD) and schedule_time (HH:MM:SS or HH:MM), taken as UTC.
func parseSchedule(f SingleSendForm, add func(field, msg string)) *time.Time {
	switch on, ok := ParseFlag(f.ScheduleType); {
	case strings.TrimSpace(f.ScheduleType) == "":
		add("schedule_type", RequiredMessage("schedule_type"))
		return nil
	case !ok:
		add("schedule_type", FlagMessage("schedule_type"))
		return nil
	case !on:
		return nil
	}
	date, clock := strings.TrimSpace(f.ScheduleDate), strings.TrimSpace(f.ScheduleTime)
	var day time.Time
	dayOK, clockOK := false, false
	var h, m, s int
	switch {
	case date == "":
		add("schedule_date", "The schedule date field is required when schedule type is 1.")
	default:
		d, ok := parseDate(date)
		if !ok {
			add("schedule_date", "The schedule date must be a valid date in the form YYYY-MM-DD.")
		}
		day, dayOK = d, ok
	}
	switch {
	case clock == "":
		add("schedule_time", "The schedule time field is required when schedule type is 1.")
	default:
		h, m, s, clockOK = parseClock(clock)
		if !clockOK {
			add("schedule_time", "The schedule time must be a valid time in the form HH:MM:SS or HH:MM.")
		}
	}
	if !dayOK || !clockOK {
		return nil
	}
	at := time.Date(day.Year(), day.Month(), day.Day(), h, m, s, 0, time.UTC)
	return &at
}

// parseDate reads YYYY-MM-DD: a four-digit year from 0001, a real day.
func parseDate(v string) (time.Time, bool) {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' || !digits(v[:4]) || !digits(v[5:7]) || !digits(v[8:]) {
		return time.Time{}, false
	}
	d, err := time.Parse("2006-01-02", v)
	if err != nil || d.Year() < 1 {
		return time.Time{}, false
	}
	return d, true
}

// parseClock reads HH:MM:SS or HH:MM (00:00 to 23:59:59).
func parseClock(v string) (h, m, s int, ok bool) {
	if len(v) == 5 {
		v += ":00"
	}
	if len(v) != 8 || v[2] != ':' || v[5] != ':' || !digits(v[:2]) || !digits(v[3:5]) || !digits(v[6:]) {
		return 0, 0, 0, false
	}
	h, _ = strconv.Atoi(v[:2])
	m, _ = strconv.Atoi(v[3:5])
	s, _ = strconv.Atoi(v[6:])
	return h, m, s, h < 24 && m < 60 && s < 60
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseLists reads recipient list elements: blanks dropped, duplicates
// removed (the first kept). ok is false when the field has a problem
// already (the lists are then not looked up).
func parseLists(field string, vals []string, required bool, add func(field, msg string)) (lists []ListRef, ok bool) {
	seen := map[ListRef]bool{}
	bad := false
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		l, valid := ParseListRef(v)
		if !valid {
			bad = true
			continue
		}
		if !seen[l] {
			seen[l] = true
			lists = append(lists, l)
		}
	}
	switch {
	case bad:
		add(field, "The selected "+Label(field)+" is invalid.")
	case len(lists) > MaxSendLists:
		add(field, "The "+Label(field)+" may not have more than "+strconv.Itoa(MaxSendLists)+" items.")
	case len(lists) == 0 && required:
		add(field, RequiredMessage(field))
	default:
		if lists == nil {
			lists = []ListRef{}
		}
		return lists, true
	}
	return []ListRef{}, false
}

// MailSize bounds the mails a template makes (docs/limits.md): a
// template_html whose worst case passes Max is refused when it is saved.
type MailSize struct {
	// Max is the longest mail allowed, in bytes; 0 checks nothing.
	Max int
	// Worst is the longest mail subject, preheader and html can make, every
	// placeholder at its longest value (render.Template.WorstSize); ok is
	// false when they do not compile, which is not this check's to report.
	Worst func(subject, preheader, html string) (n int, ok bool)
}

// check adds the template_html problem when html's mails can pass s.Max.
func (s MailSize) check(subject, preheader, html string, add func(field, msg string)) {
	if s.Max <= 0 || s.Worst == nil {
		return
	}
	if n, ok := s.Worst(subject, preheader, html); ok && n > s.Max {
		add("template_html", "The template html may not make mails larger than "+strconv.Itoa(s.Max)+
			" bytes; with every placeholder at its longest value its mails take up to "+strconv.Itoa(n)+" bytes.")
	}
}

// templateBody reads template_html or template_json: at most
// MaxTemplateBytes, blanks included (the size is the limit whatever the
// bytes, and the API's multipart reader keeps no more than one byte past
// it); nil when blank, else as given.
func templateBody(field, v string, add func(field, msg string)) *string {
	switch {
	case len(v) > MaxTemplateBytes:
		add(field, "The "+Label(field)+" may not be larger than "+strconv.Itoa(MaxTemplateBytes)+" bytes.")
		return nil
	case strings.TrimSpace(v) == "":
		return nil
	}
	return &v
}

func allLive(lists []ListRef, live func(ListRef) bool) bool {
	for _, l := range lists {
		if !live(l) {
			return false
		}
	}
	return true
}

// NewUTR returns a new random (version 4) UUID in its canonical
// lower-case form: a single send's utr.
func NewUTR() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// ParseUTR reads a utr (a UUID, any case, with its hyphens) in its
// canonical lower-case form; false for anything else, which names no
// record.
func ParseUTR(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 36 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return "", false
			}
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// OpenTokens are a send's unique_open_token for its recipient lists: the
// token of a list in old is kept, every other list gets a fresh one
// (16 random bytes, base64url); lists no longer sent to are dropped.
func OpenTokens(lists []ListRef, old map[string]string) map[string]string {
	out := make(map[string]string, len(lists))
	for _, l := range lists {
		k := l.Key()
		if t, ok := old[k]; ok && t != "" {
			out[k] = t
			continue
		}
		out[k] = NewOpenToken()
	}
	return out
}

// NewOpenToken is a recipient list's open token: 16 random bytes,
// base64url.
func NewOpenToken() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// SingleSend is a single send as stored, with its sender as the API shows
// it.
type SingleSend struct {
	ID           int64
	UserID       int64
	UTR          string
	TemplateID   int64
	TemplateJSON *string
	TemplateHTML *string
	SenderID     int64
	GroupID      int64
	Name         string
	Subject      string
	Preheader    string
	Recipients   []ListRef
	Excluded     []ListRef
	ScheduleType int16
	ScheduleDate string // YYYY-MM-DD, 0000-00-00 when immediate
	ScheduleTime string // HH:MM:SS, 00:00:00 when immediate
	Status       int16
	Version      int32
	Triggered    int64
	Delivered    int64
	UniqueOpens  int64
	TotalOpens   int64
	Bounces      int64
	Unsubscribes int64
	OpenTokens   map[string]string
	SentAt       *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// Relay is the relay its mails go to first; "": none named.
	Relay string
	// CancelledAt is when the send was cancelled after a pause; nil: not.
	CancelledAt *time.Time
	// Sender is the send's sender, nil when no such sender exists.
	Sender *Sender
	// PausedAt is when a reputation guard paused the running send (nil:
	// not paused), PausedReason why (docs/deliverability.md).
	PausedAt     *time.Time
	PausedReason string
}

// PostalAddress is the sender's address as ((sender_address)) renders
// it: the address lines, city, state and country, the blank ones left
// out, joined by ", ".
func (s Sender) PostalAddress() string {
	var parts []string
	for _, p := range []string{s.Address, s.City, s.State, s.Country} {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

// Queued is what a write that (re)queues a send answers: the dispatch to
// enqueue.
type Queued struct {
	ID      int64
	UTR     string
	Version int32
	DueAt   time.Time
}
