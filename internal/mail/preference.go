package mail

// Preferences is what a recipient's preferences page shows: whether the
// address is on the account's global list, and the groups it may leave.
type Preferences struct {
	Email  Email
	Global bool // unsubscribed from everything
	Groups []PreferenceGroup
}

// PreferenceGroup is one group of the page.
type PreferenceGroup struct {
	ID          int64
	Name        string
	Description string
	Left        bool // the address is in the group's unsubscribes
}

// Group is the page's group id, or nil when the page does not show it.
func (p *Preferences) Group(id int64) *PreferenceGroup {
	for i := range p.Groups {
		if p.Groups[i].ID == id {
			return &p.Groups[i]
		}
	}
	return nil
}

// UnsubscribeVia says how a recipient unsubscribed; it goes into the
// event's payload.
type UnsubscribeVia string

// The ways a recipient unsubscribes from a mail.
const (
	ViaOneClick        UnsubscribeVia = "one_click"        // RFC 8058 POST to List-Unsubscribe
	ViaPreferencesPage UnsubscribeVia = "preferences_page" // a button of the page
	ViaMailto          UnsubscribeVia = "mailto"           // a mail to the List-Unsubscribe mailto (docs/bounces.md)
)
