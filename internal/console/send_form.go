package console

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/singlesend"
)

// keepDesign is the template choice that keeps the design saved with the
// send (its template_html and template_json, from the design editor).
const keepDesign = "current"

// sendForm is the compose form as posted, its fields named as the API
// names them, so its errors land next to the right fields.
type sendForm struct {
	Name, Subject, Preheader string
	SenderID, GroupID        string
	Recipients, Excluded     []string // "contacts_3", "segments_7"
	TemplateID               string   // a catalogue id, or keepDesign
	// ScheduleType is "0" (now) or "1"; ScheduleDate and ScheduleTime are
	// UTC (the page's script fills them from the browser's local time).
	ScheduleType, ScheduleDate, ScheduleTime string
	Relay                                    string // the relay its mails go to first; "": the relays' rules
}

// readSendForm reads the posted compose form. Without the page's script
// the schedule comes only as schedule_local (the date-time field), taken
// as UTC as its label then says.
func readSendForm(r *http.Request) sendForm {
	r.ParseForm()
	v := r.PostForm
	f := sendForm{Name: v.Get("single_send_name"), Subject: v.Get("subject"), Preheader: v.Get("preheader"),
		SenderID: v.Get("sender_id"), GroupID: v.Get("unsubscribe_group_id"), Recipients: v["recipient_id"],
		Excluded: v["exclude_specific_recipient_id"], TemplateID: v.Get("template_id"), ScheduleType: v.Get("schedule_type"),
		ScheduleDate: v.Get("schedule_date"), ScheduleTime: v.Get("schedule_time"), Relay: v.Get("relay")}
	if local := strings.TrimSpace(v.Get("schedule_local")); f.ScheduleDate == "" && f.ScheduleTime == "" && local != "" {
		f.ScheduleDate, f.ScheduleTime, _ = strings.Cut(local, "T")
	}
	return f
}

// sendFormOf is a stored send's fields in the form.
func sendFormOf(ss *mail.SingleSend) sendForm {
	f := sendForm{Name: ss.Name, Subject: ss.Subject, Preheader: ss.Preheader, SenderID: id(ss.SenderID),
		GroupID: id(ss.GroupID), TemplateID: id(ss.TemplateID), ScheduleType: strconv.Itoa(int(ss.ScheduleType)), Relay: ss.Relay}
	for _, l := range ss.Recipients {
		f.Recipients = append(f.Recipients, l.Key())
	}
	for _, l := range ss.Excluded {
		f.Excluded = append(f.Excluded, l.Key())
	}
	if ss.ScheduleType == 1 {
		f.ScheduleDate, f.ScheduleTime = ss.ScheduleDate, ss.ScheduleTime
	}
	if hasDesign(ss) {
		f.TemplateID = keepDesign
	}
	return f
}

// hasDesign is true when the send carries a design of its own.
func hasDesign(ss *mail.SingleSend) bool {
	return ss != nil && (ss.TemplateHTML != nil || ss.TemplateJSON != nil)
}

func id(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// input is the form as the API's parser takes it: keepDesign brings the
// stored send's template id and design along, which never travel through
// the browser (they can be a megabyte each).
func (f sendForm) input(stored *mail.SingleSend) mail.SingleSendForm {
	in := mail.SingleSendForm{TemplateID: f.TemplateID, SenderID: f.SenderID, GroupID: f.GroupID, Name: f.Name,
		Subject: f.Subject, Preheader: f.Preheader, Recipients: f.Recipients, Excluded: f.Excluded,
		ScheduleType: f.ScheduleType, ScheduleDate: f.ScheduleDate, ScheduleTime: f.ScheduleTime, Relay: f.Relay}
	if f.TemplateID == keepDesign {
		in.TemplateID = ""
		if hasDesign(stored) {
			in.TemplateID = id(stored.TemplateID)
			if stored.TemplateHTML != nil {
				in.TemplateHTML = *stored.TemplateHTML
			}
			if stored.TemplateJSON != nil {
				in.TemplateJSON = *stored.TemplateJSON
			}
		}
	}
	return in
}

// picked reports whether list key is among keys.
func picked(keys []string, key string) bool { return slices.Contains(keys, key) }

// composeData is the compose and review pages' model.
type composeData struct {
	Form      sendForm
	UTR       string           // "" for a new send
	Stored    *mail.SingleSend // the send being edited, nil for a new one
	Lists     []listOption
	Senders   []senderOption
	Groups    []mail.UnsubscribeGroup
	Templates []design.Template
	// Unverified is true when some senders still need verifying.
	Unverified bool
	// CountURL is the audience count's address for the form's lists.
	CountURL string
	// Relays are the relays SMTP_URL names (a send may name the one its
	// mails go to first). ShowRelays: the form offers them (several, or a
	// send that names one); RelayUnknown: the send names one SMTP_URL no
	// longer does (shown, so that saving says so next to the field).
	Relays                   []string
	ShowRelays, RelayUnknown bool
}

// listOption is a contact type or segment a send can go to.
type listOption struct {
	Key, Kind, Name string
	Size            string // its kept count, formatted
	Picked, Skipped bool   // among the recipients, among the exclusions
}

// senderOption is a sender in the compose form: verified ones first.
type senderOption struct {
	ID, Label, Email string
	Verified         bool
	Picked           bool
}

// composeFor loads what the compose and review pages offer for f: the
// account's lists and segments with their sizes, its senders (verified
// first) and unsubscribe groups, and the design catalogue.
func (h *Handler) composeFor(ctx context.Context, account int64, f sendForm, utr string, stored *mail.SingleSend) (composeData, error) {
	d := composeData{Form: f, UTR: utr, Stored: stored, Templates: design.Templates(), Relays: h.cfg.Relays}
	d.ShowRelays = len(d.Relays) > 1 || len(d.Relays) > 0 && f.Relay != ""
	d.RelayUnknown = d.ShowRelays && f.Relay != "" && !slices.Contains(d.Relays, f.Relay)
	all := &mail.Page{Number: 1, Size: mail.MaxPageSize}
	types, _, err := h.db.ContactTypes(ctx, account, all)
	if err != nil {
		return d, err
	}
	for _, t := range types {
		key := mail.ListRef{Table: mail.ListContacts, ID: t.ID}.Key()
		d.Lists = append(d.Lists, listOption{Key: key, Kind: "List", Name: t.Name, Size: count(t.Contacts),
			Picked: picked(f.Recipients, key), Skipped: picked(f.Excluded, key)})
	}
	segments, _, err := h.db.Segments(ctx, account, all)
	if err != nil {
		return d, err
	}
	for _, s := range segments {
		key := mail.ListRef{Table: mail.ListSegments, ID: s.ID}.Key()
		d.Lists = append(d.Lists, listOption{Key: key, Kind: "Segment", Name: s.Name, Size: count(s.Recipients),
			Picked: picked(f.Recipients, key), Skipped: picked(f.Excluded, key)})
	}
	senders, err := h.db.Senders(ctx, account)
	if err != nil {
		return d, err
	}
	for _, s := range senders {
		o := senderOption{ID: id(s.ID), Label: s.FromName + " <" + s.FromEmail + ">", Email: s.FromEmail,
			Verified: s.IsVerified == 1, Picked: id(s.ID) == f.SenderID}
		d.Unverified = d.Unverified || !o.Verified
		d.Senders = append(d.Senders, o)
	}
	slices.SortStableFunc(d.Senders, func(a, b senderOption) int {
		switch {
		case a.Verified == b.Verified:
			return 0
		case a.Verified:
			return -1
		}
		return 1
	})
	if d.Groups, _, err = h.db.UnsubscribeGroups(ctx, account, all); err != nil {
		return d, err
	}
	d.CountURL = countURL(f.Recipients, f.Excluded, f.GroupID)
	return d, nil
}

// templateName is the catalogue template id's name ("" when unknown).
func templateName(id string) string {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return ""
	}
	t, ok := singlesend.Design(n)
	if !ok {
		return ""
	}
	return t.Name
}

// count is n with thousands separators: 1,000,000.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
