package mail

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// EventSenderAdded is recorded when a sender is saved (subject: sender;
// payload: from_email).
const EventSenderAdded = "sender.added"

// Places answers whether geography ids exist and how they nest.
type Places interface {
	CountryExists(id int32) bool
	StateCountry(id int32) (countryID int32, ok bool)
	CityPlace(id int32) (countryID, stateID int32, ok bool) // stateID 0: none known
}

// SenderInput is a validated sender save or update.
type SenderInput struct {
	FromName        string
	FromEmail       Email
	ReplyToEmail    Email
	CountryID       int32
	StateID         *int32
	CityID          *int32
	ZipCode         string
	CompanyAddress  string
	CompanyAddress2 string
	Nickname        string
}

// SenderForm is a sender write as received: get returns a field's value.
type SenderForm func(name string) string

// ParseSender validates a sender save or update: from_name, from_email,
// reply_to_email, country_id, company_address and nickname required;
// state_id and city_id optional, but a state must be of the country and a
// city of the country (and of the state when one is given); every text a
// single line of at most 255 characters (zip_code at most 32).
func ParseSender(get SenderForm, places Places) (SenderInput, error) {
	var p Problems
	var in SenderInput
	text := func(name string, required bool, dst *string) {
		v := strings.TrimSpace(get(name))
		switch {
		case v == "" && required:
			p.Required(name)
		case v == "":
		case p.checkLine(name, v):
			*dst = v
		}
	}
	address := func(name string, dst *Email) {
		switch v := strings.TrimSpace(get(name)); {
		case v == "":
			p.Required(name)
		default:
			if e, why := CheckEmail(v); why == EmailOK {
				*dst = e
			} else {
				p.Add(name, why.Message(Label(name)))
			}
		}
	}
	id := func(name string, required bool) (int32, bool) {
		v := strings.TrimSpace(get(name))
		if v == "" {
			if required {
				p.Required(name)
			}
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n <= 0 {
			p.Add(name, "The "+Label(name)+" must be an integer.")
			return 0, false
		}
		return int32(n), true
	}
	text("from_name", true, &in.FromName)
	address("from_email", &in.FromEmail)
	address("reply_to_email", &in.ReplyToEmail)
	country, hasCountry := id("country_id", true)
	if hasCountry {
		if places.CountryExists(country) {
			in.CountryID = country
		} else {
			p.Add("country_id", "The selected country id is invalid.")
			hasCountry = false
		}
	}
	state, hasState := id("state_id", false)
	if hasState {
		if c, ok := places.StateCountry(state); !ok || (hasCountry && c != country) {
			p.Add("state_id", "The selected state id is invalid.")
		} else {
			in.StateID = &state
		}
	}
	if city, ok := id("city_id", false); ok {
		c, s, known := places.CityPlace(city)
		if !known || (hasCountry && c != country) || (hasState && s != 0 && s != state) {
			p.Add("city_id", "The selected city id is invalid.")
		} else {
			in.CityID = &city
		}
	}
	if v := strings.TrimSpace(get("zip_code")); v != "" {
		if len([]rune(v)) > 32 {
			p.Add("zip_code", "The zip code may not be greater than 32 characters.")
		} else if p.checkLine("zip_code", v) {
			in.ZipCode = v
		}
	}
	text("company_address", true, &in.CompanyAddress)
	text("company_address2", false, &in.CompanyAddress2)
	text("nickname", true, &in.Nickname)
	return in, p.Err()
}

// NewSenderUTR returns a sender's utr: 16 random base32 characters.
func NewSenderUTR() string {
	var b [10]byte
	rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
}

// SenderRecord is a sender as stored.
type SenderRecord struct {
	ID              int64
	UserID          int64
	FromName        string
	FromEmail       string
	ReplyToEmail    string
	CountryID       int32
	StateID         *int32
	CityID          *int32
	ZipCode         string
	CompanyAddress  string
	CompanyAddress2 string
	Nickname        string
	IsVerified      int
	UTR             string
	SendAt          *time.Time
	DeletedAt       *time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// EventSenderVerified is recorded when a sender's verification link is
// opened (subject: sender; payload: from_email).
const EventSenderVerified = "sender.verified"

// NewVerificationToken returns an unguessable single-use token for a
// link (32 random bytes, base64url) and the SHA-256 that is stored
// instead of it.
func NewVerificationToken() (token string, hash []byte) {
	var b [32]byte
	rand.Read(b[:])
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token)
}

// HashToken is the stored form of a link token.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// VerificationMail is the subject and text of a sender's verification
// mail.
func VerificationMail(fromName, fromEmail, link string) (subject, text string) {
	return "Verify your sender address", "Hello " + fromName + ",\n\n" +
		"Please confirm that " + fromEmail + " may send mail through mailroom by opening this link:\n\n" +
		link + "\n\nThe link works once and expires in 48 hours. If you did not ask for this, ignore this mail.\n"
}
