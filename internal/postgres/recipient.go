package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres/db"
)

// Recipients reads, in one query, the account's live contacts among ids
// as the recipients of mails (Tokens left for the delivery engine), in id
// order; ids that are not live contacts of the account are left out.
// Custom values are keyed by their field name lower-cased (the fast path of
// mail.Recipient.CustomValue), numbers written as stored.
func (d *DB) Recipients(ctx context.Context, userID int64, ids []int64) ([]mail.Recipient, error) {
	rows, err := d.q.RecipientsByID(ctx, db.RecipientsByIDParams{Ids: ids, UserID: userID})
	if err != nil {
		return nil, err
	}
	out := make([]mail.Recipient, len(rows))
	for i, r := range rows {
		out[i] = mail.Recipient{ContactID: r.ID, Email: mail.Email(r.Email), FirstName: r.FirstName, LastName: r.LastName,
			AltEmail: r.AltEmail, Country: r.Country, State: r.State, City: r.City, AddressLine1: r.AddressLine1,
			AddressLine2: r.AddressLine2, StateProvinceRegion: r.StateProvinceRegion, PostalCode: r.PostalCode}
		custom, err := customValues(r.Custom)
		if err != nil {
			return nil, fmt.Errorf("postgres: contact %d custom values: %w", r.ID, err)
		}
		out[i].Custom = custom
	}
	return out, nil
}

// customValues is a contact's custom column as text values keyed by the
// lower-cased field name (nil when there are none), numbers written as
// stored.
func customValues(raw string) (map[string]string, error) {
	custom, err := decodeCustom([]byte(raw))
	if err != nil || len(custom) == 0 {
		return nil, err
	}
	out := make(map[string]string, len(custom))
	for k, v := range custom {
		switch v := v.(type) {
		case string:
			out[strings.ToLower(k)] = v
		case json.Number:
			out[strings.ToLower(k)] = v.String()
		case nil:
		default:
			out[strings.ToLower(k)] = fmt.Sprint(v)
		}
	}
	return out, nil
}
