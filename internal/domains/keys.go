package domains

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailroom/mailroom/internal/dkim"
)

// SealedKeys are a verified sending domain's keys as kept.
type SealedKeys struct {
	UserID           int64
	Domain, Selector string
	RSA, Ed25519     []byte // sealed; Ed25519 nil: none
}

// KeyStore reads the verified sending domains' sealed keys
// (internal/postgres).
type KeyStore interface {
	VerifiedDomainKeys(ctx context.Context) ([]SealedKeys, error)
}

// LoadKeys opens the verified sending domains' keys and puts them in
// force in keys (dkim.Keys.SetAccountKeys): each account signs its mails
// from its own verified domains with their keys, RSA and Ed25519 both
// where both were made. It answers how many domains; a key that does not
// open (a DKIM_KEY_SECRET other than the one that sealed it) is left out
// and named in the error, the others are in force all the same.
func LoadKeys(ctx context.Context, st KeyStore, s *Sealer, keys *dkim.Keys) (int, error) {
	rows, err := st.VerifiedDomainKeys(ctx)
	if err != nil {
		return 0, err
	}
	byAccount := map[int64]map[string]*dkim.Key{}
	var errs []error
	n := 0
	for _, r := range rows {
		k, err := openKey(s, keys, r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if byAccount[r.UserID] == nil {
			byAccount[r.UserID] = map[string]*dkim.Key{}
		}
		byAccount[r.UserID][r.Domain] = k
		n++
	}
	keys.SetAccountKeys(byAccount)
	return n, errors.Join(errs...)
}

func openKey(s *Sealer, keys *dkim.Keys, r SealedKeys) (*dkim.Key, error) {
	rsaDER, err := s.Open(r.RSA, r.Domain)
	if err != nil {
		return nil, fmt.Errorf("domains: the key of %s (account %d) does not open: %w", r.Domain, r.UserID, err)
	}
	var edDER []byte
	if r.Ed25519 != nil {
		if edDER, err = s.Open(r.Ed25519, r.Domain+" ed25519"); err != nil {
			return nil, fmt.Errorf("domains: the Ed25519 key of %s (account %d) does not open: %w", r.Domain, r.UserID, err)
		}
	}
	return keys.DomainKey(r.Domain, r.Selector, rsaDER, r.Selector+"e", edDER)
}
