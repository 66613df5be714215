package mail

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ValidDomain reports whether s is a lower-case host name of at least two
// labels: letters, digits and hyphens, no label empty, longer than 63 or
// at a hyphen's end, 253 characters at most (BOUNCE_DOMAIN, the
// DOMAIN_LIMITS names).
func ValidDomain(s string) bool {
	if len(s) > 253 || !strings.Contains(s, ".") {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// ReservedField is one of the eleven fields every contact has.
type ReservedField struct {
	ID   int64
	Name string
}

// ReservedFields are the reserved fields, ids 1-11 in this order.
var ReservedFields = []ReservedField{
	{1, "email"}, {2, "first_name"}, {3, "last_name"}, {4, "alt_email"}, {5, "country"},
	{6, "state"}, {7, "city"}, {8, "address_line1"}, {9, "address_line2"},
	{10, "state_province_region"}, {11, "postal_code"},
}

// DynamicContent are the placeholder names templates may use, in the order
// the API lists them.
var DynamicContent = []string{
	"first_name", "last_name", "email", "alt_email", "country", "state", "city",
	"address_line1", "address_line2", "state_province_region", "postal_code",
	"full_name", "father_name", "designation", "age", "company_name", "birth_date",
	"join_date", "sender_name", "sender_address", "unsubscribe_preferences",
}

// IsReservedName reports whether name (any case) is a reserved field's.
func IsReservedName(name string) bool {
	for _, f := range ReservedFields {
		if strings.EqualFold(f.Name, name) {
			return true
		}
	}
	return false
}

// Custom field types.
const (
	FieldText     = "text"
	FieldNumber   = "number"
	FieldDatetime = "datetime-local"
)

// CustomField is an account's own contact field.
type CustomField struct {
	ID   int64
	Name string
	Type string
}

var fieldNameRE = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// ComputedNames are the dynamic-content names the renderer computes rather
// than reads from a field: no custom field may take one. The other
// dynamic-content names that are not reserved fields (father_name,
// designation, age, company_name, birth_date, join_date) read the custom
// field of that name, so they are allowed.
var ComputedNames = []string{"full_name", "sender_name", "sender_address", "unsubscribe_preferences"}

// IsComputedName reports whether name (any case) is one of ComputedNames.
func IsComputedName(name string) bool {
	for _, c := range ComputedNames {
		if strings.EqualFold(c, name) {
			return true
		}
	}
	return false
}

// ParseCustomField validates a new custom field's name and type. Reserved
// field names and the dynamic-content names the renderer computes are
// refused, in any case.
func ParseCustomField(name, typ string) (CustomField, error) {
	var p Problems
	name = strings.TrimSpace(name)
	typ = strings.TrimSpace(typ)
	switch {
	case name == "":
		p.Required("field_name")
	case len(name) > 64:
		p.Add("field_name", "The field name may not be greater than 64 characters.")
	case !fieldNameRE.MatchString(name):
		p.Add("field_name", "The field name may only contain letters, numbers, and underscores.")
	case IsReservedName(name):
		p.Add("field_name", "The field name may not be a reserved field name.")
	case IsComputedName(name):
		p.Add("field_name", "The field name may not be a dynamic content name.")
	}
	switch typ {
	case "":
		p.Required("field_type")
	case FieldText, FieldNumber, FieldDatetime:
	default:
		p.Add("field_type", "The selected field type is invalid.")
	}
	return CustomField{Name: name, Type: typ}, p.Err()
}

// datetimeLayout is an HTML datetime-local value.
const datetimeLayout = "2006-01-02T15:04"

// ParseCustomValue checks v against the field's type and returns the value
// to store: a number as float64 or int64, datetime and text as string.
// An empty v is nil (no value).
func (f CustomField) ParseCustomValue(v string) (any, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	switch f.Type {
	case FieldNumber:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n, nil
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n != n || n > 1e300 || n < -1e300 {
			return nil, messagef("The %s must be a number.", Label(f.Name))
		}
		return n, nil
	case FieldDatetime:
		t, err := time.Parse(datetimeLayout, v)
		if err != nil {
			return nil, messagef("The %s must be a date and time as YYYY-MM-DDTHH:MM.", Label(f.Name))
		}
		if !InYearRange(t) {
			return nil, messagef("The %s must be a date and time from year 0001 to 9999.", Label(f.Name))
		}
		// Stored canonical (time.Parse takes a one-digit hour), so
		// segments compare every value.
		return t.Format(datetimeLayout), nil
	default:
		if msg := LineProblem(f.Name, v); msg != "" {
			return nil, Message(msg)
		}
		return v, nil
	}
}

// ContactInput is a validated contact write. Nil optional fields are left
// as stored (empty on a new contact); Custom maps a custom field's name to
// its typed value, nil to remove it.
type ContactInput struct {
	ContactTypeID       int64
	Email               Email
	FirstName           *string
	LastName            *string
	AltEmail            *string
	Country             *int32
	State               *string
	City                *string
	AddressLine1        *string
	AddressLine2        *string
	StateProvinceRegion *string
	PostalCode          *string
	Custom              map[string]any
	CustomFieldIDs      []int64 // the fields Custom writes, checked again under lock
}

// ContactForm is a contact write as received: Get returns a reserved or
// other top-level field and whether it was sent; Custom holds the
// custom_field[name] values.
type ContactForm struct {
	Get    func(name string) (string, bool)
	Custom map[string]string
}

// ParseContact validates a contact write. fields are the account's custom
// fields; knownCountry says whether a country id exists.
func ParseContact(f ContactForm, fields []CustomField, knownCountry func(int32) bool) (ContactInput, error) {
	var p Problems
	var in ContactInput
	if v, _ := f.Get("contact_type_id"); v == "" {
		p.Required("contact_type_id")
	} else if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
		p.Add("contact_type_id", "The contact type id must be an integer.")
	} else {
		in.ContactTypeID = n
	}
	if v, _ := f.Get("email"); v == "" {
		p.Required("email")
	} else if e, why := CheckEmail(v); why != EmailOK {
		p.Add("email", why.Message("email"))
	} else {
		in.Email = e
	}
	if v, _ := f.Get("country"); v == "" {
		p.Required("country")
	} else if n, err := strconv.ParseInt(v, 10, 32); err != nil {
		p.Add("country", "The country must be an integer.")
	} else if !knownCountry(int32(n)) {
		p.Add("country", "The selected country is invalid.")
	} else {
		c := int32(n)
		in.Country = &c
	}
	if v, sent := f.Get("alt_email"); sent {
		switch e, why := CheckEmail(v); {
		case strings.TrimSpace(v) == "":
			empty := ""
			in.AltEmail = &empty
		case why != EmailOK:
			p.Add("alt_email", why.Message("alt email"))
		default:
			s := string(e)
			in.AltEmail = &s
		}
	}
	for _, opt := range []struct {
		name string
		dst  **string
	}{
		{"first_name", &in.FirstName}, {"last_name", &in.LastName}, {"state", &in.State}, {"city", &in.City},
		{"address_line1", &in.AddressLine1}, {"address_line2", &in.AddressLine2},
		{"state_province_region", &in.StateProvinceRegion}, {"postal_code", &in.PostalCode},
	} {
		if v, sent := f.Get(opt.name); sent {
			v = strings.TrimSpace(v)
			if !p.checkLine(opt.name, v) {
				continue
			}
			*opt.dst = &v
		}
	}
	if len(f.Custom) > 0 {
		byName := make(map[string]CustomField, len(fields))
		for _, cf := range fields {
			byName[strings.ToLower(cf.Name)] = cf
		}
		in.Custom = make(map[string]any, len(f.Custom))
		names := make([]string, 0, len(f.Custom))
		for name := range f.Custom {
			names = append(names, name)
		}
		sort.Strings(names) // the same report whatever the map's order
		for _, name := range names {
			raw := f.Custom[name]
			cf, ok := byName[strings.ToLower(name)]
			if !ok {
				p.Add("custom_field."+name, "The custom field "+name+" does not exist.")
				continue
			}
			v, err := cf.ParseCustomValue(raw)
			if err != nil {
				p.Add("custom_field."+name, err.Error())
				continue
			}
			if _, twice := in.Custom[cf.Name]; twice {
				p.Add("custom_field."+name, "The custom field "+cf.Name+" was sent more than once.")
				continue
			}
			in.Custom[cf.Name] = v
			in.CustomFieldIDs = append(in.CustomFieldIDs, cf.ID)
		}
	}
	return in, p.Err()
}

// FullName is first and last name joined by one space.
func FullName(first, last string) string {
	switch {
	case first == "":
		return last
	case last == "":
		return first
	}
	return first + " " + last
}
