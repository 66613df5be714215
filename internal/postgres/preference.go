package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Secret is the secret of that name the migrations made (e.g.
// "unsubscribe_token").
func (d *DB) Secret(ctx context.Context, name string) ([]byte, error) {
	v, err := d.q.Secret(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	if len(v) < 16 {
		return nil, errors.New("secret " + name + " is too short")
	}
	return v, nil
}

// Preferences reads the preferences page of a token's recipient: the
// account's displayed groups and the mail's own group, each with whether
// the address left it, and whether it is on the global list.
func (d *DB) Preferences(ctx context.Context, t mail.UnsubscribeToken) (mail.Preferences, error) {
	p := mail.Preferences{Email: t.Email}
	rows, err := d.q.PreferenceGroups(ctx, db.PreferenceGroupsParams{UserID: t.UserID, Email: string(t.Email), GroupID: t.GroupID})
	if err != nil {
		return p, err
	}
	for _, r := range rows {
		p.Groups = append(p.Groups, mail.PreferenceGroup{ID: r.ID, Name: r.GroupName, Description: r.Description, Left: r.HasLeft})
	}
	p.Global, err = d.q.GloballyUnsubscribed(ctx, db.GloballyUnsubscribedParams{UserID: t.UserID, Email: string(t.Email)})
	return p, err
}

// UnsubscribeRecipient puts a token's address on the account's global
// list (groupID nil) or in one of its groups, recording address.unsubscribed
// with the mail it came from (single_send_id or automation_id) and via.
// It answers whether the address was newly added.
func (d *DB) UnsubscribeRecipient(ctx context.Context, t mail.UnsubscribeToken, groupID *int64, via mail.UnsubscribeVia) (bool, error) {
	origin := map[string]any{"via": via}
	if t.SendID > 0 {
		origin["single_send_id"] = t.SendID
	}
	if t.AutomationID > 0 {
		origin["automation_id"] = t.AutomationID
	}
	js, err := json.Marshal(origin)
	if err != nil {
		return false, err
	}
	n, err := d.unsubscribe(ctx, t.UserID, groupID, []mail.Email{t.Email}, js, t.SendID)
	return n > 0, err
}

// UnsubscribeOneClick is RFC 8058's one-click unsubscribe of a token's
// address (the List-Unsubscribe POST, or a mail to its mailto): from the
// mail's unsubscribe group when it has one, else from everything (the
// account's global list); a group deleted since the mail: everything. It
// answers whether the address was newly added.
func (d *DB) UnsubscribeOneClick(ctx context.Context, t mail.UnsubscribeToken, via mail.UnsubscribeVia) (bool, error) {
	if t.GroupID > 0 {
		added, err := d.UnsubscribeRecipient(ctx, t, &t.GroupID, via)
		if mail.ErrorCode(err) != mail.ENOTFOUND {
			return added, err
		}
	}
	return d.UnsubscribeRecipient(ctx, t, nil, via)
}
