package postgres_test

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailroom/mailroom/internal/geo"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/postgres/db"
	"github.com/mailroom/mailroom/internal/testdb"
)

// Memberships kept by contact writes equal a full evaluation of each
// segment, after every kind of write: 100 random segments on two contact
// types, of 1-3 conditions joined by and or or, over every operator of
// every kind of field (reserved text fields with email and country, custom
// text, number and datetime fields, created_at); contacts whose text
// lower() changes in length or script (İ, ẞ, Σ, decomposed accents),
// empty values, values shorter than, equal to and longer than the
// prefixes segments look for. After the segments are made (the rebuild
// path), two CSV imports (new and updated rows, one with only some
// columns), single adds (new and upserted), updates, moves between the
// types, deletes, the deletion of a custom field segments use, and writes
// after it, every segment's members must be exactly the contacts its
// compiled predicate picks from all the type's contacts, and its kept
// count their number. Guarded segments (found by key, segment_refresh.go)
// and evaluated ones are both counted, so a generator change that stops
// covering one fails here.
func TestSegmentRefreshMixedOperators(t *testing.T) {
	t.Parallel()
	w := newRefreshWorld(t)

	// Contacts before any segment, their created_at spread over the
	// datetime values the conditions name; then the segments, filled by
	// their rebuild.
	w.importRows(w.types[0], "", w.fresh(250))
	w.importRows(w.types[1], "", w.fresh(100))
	w.backdate()
	w.makeSegments(100)
	w.check("segments made")

	// An import into the second type: its contacts updated (the address
	// in another case), the first type's addresses (new contacts here),
	// new addresses.
	rows := w.existing(w.types[1], 60)
	rows = append(rows, w.recased(w.existing(w.types[0], 30))...)
	w.importRows(w.types[1], "", append(rows, w.fresh(30)...))
	w.check("import of updated and new rows")

	// An import of some columns only: the others are kept; an empty cell
	// of a column in the file clears the value.
	w.importRows(w.types[0], "email,last_name,country,plan,signup", append(w.existing(w.types[0], 100), w.fresh(80)...))
	w.check("import of some columns")

	for i := range 30 {
		typ := w.types[w.rng.IntN(2)]
		row := w.fresh(1)[0]
		if i%3 == 0 { // an address of the type: updated
			if old := w.existing(typ, 1); len(old) > 0 {
				row = old[0]
			}
		}
		w.add(typ, row)
	}
	w.check("adds")

	for range 45 {
		id, typ := w.liveContact()
		w.update(id, typ)
	}
	w.check("updates")

	moved := 0
	for range 30 {
		id, typ := w.liveContact()
		if w.update(id, otherType(w.types, typ)) {
			moved++
		}
	}
	if moved < 15 {
		t.Errorf("only %d of 30 moves happened", moved)
	}
	w.check("moves")

	var gone []int64
	for range 40 {
		id, _ := w.liveContact()
		gone = append(gone, id)
	}
	gone = slices.Compact(slices.Sorted(slices.Values(gone)))
	for _, part := range [][]int64{gone[:1], gone[1 : len(gone)/2], gone[len(gone)/2:]} {
		if err := w.d.DeleteContacts(w.ctx, w.uid, part); err != nil {
			t.Fatal(err)
		}
	}
	w.check("deletes")

	// A custom field some segments use is deleted, its values with it:
	// those segments are rebuilt, and later writes evaluate a condition
	// on a field that no longer exists.
	if err := w.d.DeleteCustomField(w.ctx, w.uid, w.fields["nick"].ID); err != nil {
		t.Fatal(err)
	}
	delete(w.fields, "nick")
	w.check("custom field deleted")
	for range 15 {
		id, typ := w.liveContact()
		w.update(id, typ)
	}
	for range 10 {
		w.add(w.types[w.rng.IntN(2)], w.fresh(1)[0])
	}
	w.importRows(w.types[1], "", append(w.existing(w.types[1], 20), w.fresh(10)...))
	w.check("writes after the field's deletion")

	w.coverage()
}

// refreshWorld is an account whose contacts a test writes in every way and
// whose segment memberships it checks against a full evaluation.
type refreshWorld struct {
	t     *testing.T
	ctx   context.Context
	d     *postgres.DB
	rng   *rand.Rand
	geo   *geo.Set
	uid   int64
	types [2]int64

	fields map[string]mail.CustomField // the live custom fields by name
	times  []time.Time                 // the datetime values contacts hold and conditions name
	next   int                         // the next fresh address

	last                     map[[2]int64]bool // memberships at the last check
	guarded                  map[int64]bool    // segments found by their guard
	changedGuarded, changedE int               // memberships changed since the segments were made
}

// The text contacts hold: empty, the same word in several cases, words
// whose lower case is another length or script (İ lowers to i, ẞ to ß,
// Σ to σ), an accent precomposed and decomposed.
var refreshWords = []string{"", "an", "An", "ann", "ANNA", "anna", "Annabel", "İstanbul", "istanbul", "ıstanbul", "ISTANBUL",
	"ẞig", "ßig", "SSIG", "ΣΟΦΙΑ", "σοφιας", "Σοφία", "Éva", "éva", "Eva", "e\u0301va", "Zoë", "ZOË", "zoe", "Straße", "STRASSE",
	"ǅemal", "x"}

// The values text conditions look for besides the words: prefixes shorter
// than, equal to and longer than words, of one and several bytes, in
// other cases, and a value with spaces around it.
var refreshPrefixes = []string{"a", "AN", "ann", "anna", "annabelle", "i", "İ", "İs", "IS", "ıs", "ß", "ẞ", "ss", "σ", "Σο",
	"σοφια", "é", "e", "ÉV", "e\u0301", "zo", "zoë", "ǅ", "ǆe", "x", " an ", "straß", "stras"}

// Addresses: local parts whose lower case changes (σ, ẞ, İ) and domains
// in mixed case.
var (
	refreshBases   = []string{"ann", "Ann", "ANNA", "σοφια", "ΣΟΦΙΑ", "ẞig", "éva", "zoë", "İlke"}
	refreshDomains = []string{"example.com", "Example.COM", "x.example"}
	// A contact's country, as the CSV may name it: id, ISO code or name,
	// in any case.
	refreshCountries = []string{"", "", "792", "TR", "tr", "Türkiye", "TÜRKIYE", "248", "ax", "Åland Islands", "åland islands",
		"384", "CI", "Côte d'Ivoire", "276", "de", "Germany", "840", "US"}
	// What country "is" and "is not" conditions name.
	refreshCountryOperands = []string{"792", "tr", "TR", "türkiye", "TÜRKIYE", "248", "AX", "åland islands", "ÅLAND ISLANDS",
		"côte d'ivoire", "Germany", "de", "999", "Narnia"}
)

func newRefreshWorld(t *testing.T) *refreshWorld {
	ctx := context.Background()
	w := &refreshWorld{t: t, ctx: ctx, d: testdb.New(t), rng: rand.New(rand.NewPCG(26, 100)), geo: testdb.Geo(t),
		fields: map[string]mail.CustomField{}, guarded: map[int64]bool{}}
	var err error
	if w.uid, _, err = w.d.CreateAccount(ctx, "mixed"); err != nil {
		t.Fatal(err)
	}
	for i := range w.types {
		if w.types[i], err = w.d.CreateContactType(ctx, w.uid, fmt.Sprint("T", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []mail.CustomField{{Name: "plan", Type: mail.FieldText}, {Name: "nick", Type: mail.FieldText},
		{Name: "score", Type: mail.FieldNumber}, {Name: "signup", Type: mail.FieldDatetime}} {
		if f.ID, err = w.d.CreateCustomField(ctx, w.uid, f); err != nil {
			t.Fatal(err)
		}
		w.fields[f.Name] = f
	}
	// Datetime values at least an hour from the boundary of any "within
	// the last n days" (now less n days) for the length of the test, so
	// that a membership kept at a write and a full evaluation later agree.
	// (So they follow the clock: which days they fall on, and so who
	// matches a condition on a day, depends on the time of day the test
	// runs; the segments and writes do not.)
	anchor := time.Now().UTC().Truncate(time.Minute)
	for range 10 {
		days, hours, minutes := w.rng.IntN(24)-3, 1+w.rng.IntN(22), w.rng.IntN(60)
		w.times = append(w.times, anchor.AddDate(0, 0, -days).Add(-time.Duration(hours)*time.Hour-time.Duration(minutes)*time.Minute))
	}
	return w
}

func (w *refreshWorld) pick(list []string) string { return list[w.rng.IntN(len(list))] }

// recase returns s as is, in upper or in lower case.
func (w *refreshWorld) recase(s string) string {
	switch w.rng.IntN(3) {
	case 0:
		return strings.ToUpper(s)
	case 1:
		return strings.ToLower(s)
	}
	return s
}

func (w *refreshWorld) custom() []mail.CustomField {
	out := make([]mail.CustomField, 0, len(w.fields))
	for _, f := range w.fields {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b mail.CustomField) int { return int(a.ID - b.ID) })
	return out
}

// refreshEmail is the i-th address.
func refreshEmail(i int) string {
	return fmt.Sprintf("%s%d@%s", refreshBases[i%len(refreshBases)], i, refreshDomains[(i/len(refreshBases))%len(refreshDomains)])
}

// refreshRow is one contact as a CSV row, by column name.
type refreshRow map[string]string

var refreshColumns = []string{"email", "first_name", "last_name", "alt_email", "country", "city", "postal_code", "plan", "nick", "score", "signup"}

// row is a contact with address email and random values.
func (w *refreshWorld) row(email string) refreshRow {
	r := refreshRow{"email": email, "first_name": w.pick(refreshWords), "last_name": w.pick(refreshWords),
		"alt_email": w.pick([]string{"", "", "Alt.Ann@x.example", "alt.ann@x.example", "σοφια@alt.example"}),
		"country":   w.pick(refreshCountries), "city": w.pick(refreshWords),
		"postal_code": w.pick([]string{"", "10115", "1011", "SW1A 1AA", "sw1a"}),
		"plan":        w.pick(refreshWords), "nick": w.pick(refreshWords),
		"score": w.pick([]string{"", "", "-2", "0", "1", "2.5", "3", "5", "7", "9"}), "signup": ""}
	if w.rng.IntN(4) > 0 {
		r["signup"] = w.times[w.rng.IntN(len(w.times))].Format("2006-01-02T15:04")
	}
	return r
}

// fresh makes n contacts with new addresses.
func (w *refreshWorld) fresh(n int) []refreshRow {
	out := make([]refreshRow, n)
	for i := range out {
		e := refreshEmail(w.next)
		w.next++
		if _, ok := mail.ParseEmail(e); !ok {
			w.t.Fatalf("the test's address %q is not one", e)
		}
		out[i] = w.row(e)
	}
	return out
}

// existing makes new values for up to n live contacts of a type (their
// address in another case now and then).
func (w *refreshWorld) existing(typ int64, n int) []refreshRow {
	var emails []string
	if err := w.d.Pool.QueryRow(w.ctx, `SELECT COALESCE(array_agg(email ORDER BY id), '{}') FROM contacts
		WHERE user_id = $1 AND contact_type_id = $2 AND deleted_at IS NULL`, w.uid, typ).Scan(&emails); err != nil {
		w.t.Fatal(err)
	}
	w.rng.Shuffle(len(emails), func(i, j int) { emails[i], emails[j] = emails[j], emails[i] })
	out := make([]refreshRow, 0, n)
	for _, e := range emails[:min(n, len(emails))] {
		if other := w.recase(e); w.rng.IntN(3) == 0 {
			if _, ok := mail.ParseEmail(other); ok {
				e = other
			}
		}
		out = append(out, w.row(e))
	}
	return out
}

// recased is rows with their addresses in upper case.
func (w *refreshWorld) recased(rows []refreshRow) []refreshRow {
	for _, r := range rows {
		if e := strings.ToUpper(r["email"]); e != r["email"] {
			if _, ok := mail.ParseEmail(e); ok {
				r["email"] = e
			}
		}
	}
	return rows
}

// importRows imports rows into a type, the columns of header (all when
// empty) only.
func (w *refreshWorld) importRows(typ int64, header string, rows []refreshRow) {
	w.t.Helper()
	cols := refreshColumns
	if header != "" {
		cols = strings.Split(header, ",")
	}
	cols = slices.DeleteFunc(slices.Clone(cols), func(c string) bool {
		_, live := w.fields[c]
		return slices.Contains([]string{"plan", "nick", "score", "signup"}, c) && !live
	})
	var b strings.Builder
	cw := csv.NewWriter(&b)
	cw.Write(cols)
	for _, r := range rows {
		rec := make([]string, len(cols))
		for i, c := range cols {
			rec[i] = r[c]
		}
		cw.Write(rec)
	}
	cw.Flush()
	src, err := mail.NewContactCSV(strings.NewReader(b.String()), w.custom(), func(v string) (int32, bool) {
		c, ok := w.geo.LookupCountry(v)
		return c.ID, ok
	})
	if err != nil {
		w.t.Fatal(err)
	}
	im, err := w.d.BeginContactImport(w.ctx, w.uid)
	if err != nil {
		w.t.Fatal(err)
	}
	defer im.Rollback(w.ctx)
	if err := im.Copy(w.ctx, src); err != nil {
		w.t.Fatal(err)
	}
	res, err := im.Commit(w.ctx, typ, src)
	if err != nil {
		w.t.Fatal(err)
	}
	if res.Skipped != 0 {
		w.t.Fatalf("the import skipped %d rows", res.Skipped)
	}
}

// input is a contact write of r's values into a type, each left out
// (kept as stored) now and then, custom values removed now and then.
func (w *refreshWorld) input(typ int64, r refreshRow) mail.ContactInput {
	in := mail.ContactInput{ContactTypeID: typ, Email: mail.Email(r["email"]), Custom: map[string]any{}}
	for _, f := range []struct {
		col string
		dst **string
	}{{"first_name", &in.FirstName}, {"last_name", &in.LastName}, {"alt_email", &in.AltEmail}, {"city", &in.City},
		{"postal_code", &in.PostalCode}} {
		if w.rng.IntN(5) > 0 {
			v := r[f.col]
			*f.dst = &v
		}
	}
	if c, ok := w.geo.LookupCountry(r["country"]); ok && w.rng.IntN(5) > 0 {
		in.Country = &c.ID
	}
	for _, f := range w.custom() {
		switch w.rng.IntN(4) {
		case 0: // left as stored
			continue
		case 1: // removed
			in.Custom[f.Name] = nil
		default:
			v, err := f.ParseCustomValue(r[f.Name])
			if err != nil {
				w.t.Fatal(err)
			}
			in.Custom[f.Name] = v
		}
		in.CustomFieldIDs = append(in.CustomFieldIDs, f.ID)
	}
	return in
}

func (w *refreshWorld) add(typ int64, r refreshRow) {
	w.t.Helper()
	if _, _, err := w.d.AddContact(w.ctx, w.uid, w.input(typ, r)); err != nil {
		w.t.Fatal(err)
	}
}

// update writes new values to contact id, into type typ; it reports
// whether the write happened (a move is refused when the address is in
// the other type already).
func (w *refreshWorld) update(id, typ int64) bool {
	w.t.Helper()
	var email string
	if err := w.d.Pool.QueryRow(w.ctx, "SELECT email FROM contacts WHERE id = $1", id).Scan(&email); err != nil {
		w.t.Fatal(err)
	}
	if e := w.recase(email); w.rng.IntN(3) == 0 {
		if _, ok := mail.ParseEmail(e); ok {
			email = e
		}
	}
	err := w.d.UpdateContact(w.ctx, w.uid, id, w.input(typ, w.row(email)))
	var refused *mail.Error
	if errors.As(err, &refused) && refused.Code == mail.EINVALID {
		return false
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return true
}

// liveContact is a random live contact and its type.
func (w *refreshWorld) liveContact() (id, typ int64) {
	var n int
	if err := w.d.Pool.QueryRow(w.ctx, "SELECT count(*) FROM contacts WHERE user_id = $1 AND deleted_at IS NULL", w.uid).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	if err := w.d.Pool.QueryRow(w.ctx, `SELECT id, contact_type_id FROM contacts WHERE user_id = $1 AND deleted_at IS NULL
		ORDER BY id OFFSET $2 LIMIT 1`, w.uid, w.rng.IntN(n)).Scan(&id, &typ); err != nil {
		w.t.Fatal(err)
	}
	return id, typ
}

func otherType(types [2]int64, typ int64) int64 {
	if typ == types[0] {
		return types[1]
	}
	return types[0]
}

// backdate sets two of three contacts' created_at to the test's datetime
// values (before any segment exists: nothing to keep current).
func (w *refreshWorld) backdate() {
	tag, err := w.d.Pool.Exec(w.ctx, `UPDATE contacts c SET created_at = ($2::timestamptz[])[1 + v.n % cardinality($2::timestamptz[])]
		FROM (SELECT id, (row_number() OVER (ORDER BY id))::int AS n FROM contacts WHERE user_id = $1) v
		WHERE c.id = v.id AND v.n % 3 > 0`, w.uid, w.times)
	if err != nil || tag.RowsAffected() < 200 {
		w.t.Fatalf("backdated %d contacts: %v", tag.RowsAffected(), err)
	}
}

// condition is a random condition: a field id, an operator and its values.
func (w *refreshWorld) condition() (string, string, []string) {
	textOps := []string{mail.OpIs, mail.OpIsNot, mail.OpContains, mail.OpNotContains, mail.OpStartsWith, mail.OpEndsWith,
		mail.OpEmpty, mail.OpNotEmpty}
	text := func(field, op string) (string, string, []string) {
		if mail.Arity(op) == 0 {
			return field, op, nil
		}
		v := w.recase(w.pick(refreshPrefixes))
		if w.rng.IntN(2) == 0 {
			if word := w.pick(refreshWords); word != "" {
				v = w.recase(word)
			}
		}
		if field == "1" { // email
			switch op {
			case mail.OpIs, mail.OpIsNot:
				v = w.recase(refreshEmail(w.rng.IntN(400)))
			case mail.OpEndsWith:
				v = w.recase(w.pick([]string{"@example.com", ".EXAMPLE", "x.example", "m"}))
			}
		}
		return field, op, []string{v}
	}
	switch k := w.rng.IntN(100); {
	case k < 38:
		return w.guardCondition()
	case k < 58:
		field := w.pick([]string{"1", "2", "3", "4", "7", "11", fmt.Sprint(w.fields["plan"].ID), fmt.Sprint(w.fields["nick"].ID)})
		return text(field, w.pick(textOps))
	case k < 68: // country: "is" and "is not" by id, code or name; the others on its name
		op := w.pick(textOps)
		switch op {
		case mail.OpIs, mail.OpIsNot:
			return "5", op, []string{w.pick(refreshCountryOperands)}
		case mail.OpEmpty, mail.OpNotEmpty:
			return "5", op, nil
		}
		return "5", op, []string{w.recase(w.pick([]string{"land", "cô", "ÅL", "t", "ye", "ire", "Germany"}))}
	case k < 80:
		field := fmt.Sprint(w.fields["score"].ID)
		num := func() string { return w.pick([]string{"-2", "0", "1", "2.5", "3", "5", "7", "9"}) }
		switch op := w.pick([]string{mail.OpIs, mail.OpIsNot, mail.OpGreater, mail.OpLess, mail.OpBetween, mail.OpEmpty, mail.OpNotEmpty}); op {
		case mail.OpBetween:
			return field, op, []string{num(), num()}
		case mail.OpEmpty, mail.OpNotEmpty:
			return field, op, nil
		default:
			return field, op, []string{num()}
		}
	default: // created_at or the custom datetime
		field := w.pick([]string{"0", fmt.Sprint(w.fields["signup"].ID)})
		op := w.pick([]string{mail.OpIs, mail.OpIsNot, mail.OpBefore, mail.OpAfter, mail.OpBetween, mail.OpWithinLastDay,
			mail.OpEmpty, mail.OpNotEmpty})
		switch op {
		case mail.OpEmpty, mail.OpNotEmpty:
			return field, op, nil
		case mail.OpWithinLastDay:
			// Not 0 days for created_at: a contact made now is within
			// them at its write and not a moment later.
			days := []string{"1", "2", "7", "30"}
			if field != "0" {
				days = append(days, "0")
			}
			return field, op, []string{w.pick(days)}
		case mail.OpBetween:
			return field, op, []string{w.timeOperand(), w.timeOperand()}
		}
		return field, op, []string{w.timeOperand()}
	}
}

// guardCondition is a random text "is" or "starts with" condition (not on
// the country): one that can guard a segment.
func (w *refreshWorld) guardCondition() (string, string, []string) {
	field := w.pick([]string{"1", "2", "2", "2", "3", "3", "7", "11", "4", fmt.Sprint(w.fields["plan"].ID),
		fmt.Sprint(w.fields["plan"].ID), fmt.Sprint(w.fields["nick"].ID)})
	op := w.pick([]string{mail.OpIs, mail.OpStartsWith})
	switch {
	case field == "1" && op == mail.OpIs:
		return field, op, []string{w.recase(refreshEmail(w.rng.IntN(400)))}
	case w.rng.IntN(3) == 0:
		return field, op, []string{w.recase(w.pick(refreshPrefixes))}
	case op == mail.OpStartsWith: // a prefix many contacts have
		return field, op, []string{w.recase(w.pick([]string{"a", "an", "i", "İ", "e", "é", "s", "ß", "σ", "z", "Zo"}))}
	}
	word := ""
	for word == "" {
		word = w.pick(refreshWords)
	}
	return field, op, []string{w.recase(word)}
}

// timeOperand is a datetime value contacts hold (to the minute, or a
// minute off), or a day (one of theirs or next to it).
func (w *refreshWorld) timeOperand() string {
	tm := w.times[w.rng.IntN(len(w.times))]
	switch w.rng.IntN(4) {
	case 0:
		return tm.Format("2006-01-02")
	case 1:
		return tm.AddDate(0, 0, w.rng.IntN(3)-1).Format("2006-01-02")
	case 2:
		return tm.Format("2006-01-02T15:04")
	}
	return tm.Add(time.Duration(w.rng.IntN(3)-1) * time.Minute).Format("2006-01-02 15:04")
}

// makeSegments makes n random segments on the two types.
func (w *refreshWorld) makeSegments(n int) {
	for i := range n {
		form := mail.SegmentForm{ContactTypeID: fmt.Sprint(w.types[w.rng.IntN(2)]), Name: fmt.Sprint("s", i),
			QueryType: w.pick([]string{"", "and", "or", "or"})}
		if i%8 == 1 {
			form.QueryType = "and"
		}
		for j := range 1 + w.rng.IntN(3) {
			field, op, values := w.condition()
			switch {
			case j == 0 && i%3 == 0: // a third begin with a guard
				field, op, values = w.guardCondition()
			case j == 0 && i%8 == 1: // an eighth with a country "is" or "starts with", which guards nothing
				field, op = "5", w.pick([]string{mail.OpIs, mail.OpStartsWith})
				values = []string{w.recase(w.pick([]string{"t", "tü", "ÅL", "cô", "Germ", "u"}))}
				if op == mail.OpIs {
					values = []string{w.pick(refreshCountryOperands)}
				}
			}
			form.Fields = append(form.Fields, field)
			form.Operators = append(form.Operators, op)
			form.Values = append(form.Values, values)
		}
		in, err := mail.ParseSegment(form, w.custom())
		if err != nil {
			w.t.Fatalf("segment %+v: %v", form, err)
		}
		id, err := w.d.CreateSegment(w.ctx, w.uid, in)
		if err != nil {
			w.t.Fatal(err)
		}
		w.guarded[id] = postgres.SegmentGuarded(in.Conditions, in.Or())
	}
}

// check compares every segment's members and kept count with a full
// evaluation of its predicate over the type's live contacts, and counts
// the memberships that changed since the last check.
func (w *refreshWorld) check(phase string) {
	w.t.Helper()
	segs, err := db.New(w.d.Pool).LiveSegmentsOfTypes(w.ctx, db.LiveSegmentsOfTypesParams{UserID: w.uid, TypeIds: w.types[:]})
	if err != nil {
		w.t.Fatal(err)
	}
	custom, err := w.d.CustomFieldDefs(w.ctx, w.uid)
	if err != nil {
		w.t.Fatal(err)
	}
	// The kept members and counts of every segment, read at once.
	kept := map[int64][]int64{}
	rows, err := w.d.Pool.Query(w.ctx, `SELECT r.segment_id, r.contact_id FROM segment_members r JOIN segments s ON s.id = r.segment_id
		WHERE s.user_id = $1 AND r.contact_id IS NOT NULL ORDER BY 1, 2`, w.uid)
	if err != nil {
		w.t.Fatal(err)
	}
	var seg, id int64
	if _, err := pgx.ForEachRow(rows, []any{&seg, &id}, func() error {
		kept[seg] = append(kept[seg], id)
		return nil
	}); err != nil {
		w.t.Fatal(err)
	}
	counts := map[int64]int64{}
	rows, err = w.d.Pool.Query(w.ctx, "SELECT key, sum(n)::bigint FROM list_counts WHERE user_id = $1 AND kind = 'segment' GROUP BY key", w.uid)
	if err != nil {
		w.t.Fatal(err)
	}
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&seg, &n}, func() error {
		counts[seg] = n
		return nil
	}); err != nil {
		w.t.Fatal(err)
	}
	now := map[[2]int64]bool{}
	for _, s := range segs {
		conds := mail.StoredConditions(s.SelectField, s.SelectOperator, s.Value, custom)
		pred, args := postgres.SegmentPredicate(conds, s.QueryType != nil && *s.QueryType == "or")
		n := len(args)
		want := members(w.t, w.d, fmt.Sprintf(`SELECT c.id FROM contacts c WHERE c.user_id = $%d AND c.contact_type_id = $%d
			AND c.deleted_at IS NULL AND %s ORDER BY c.id`, n+1, n+2, pred), append(args, w.uid, s.ContactTypeID)...)
		got := kept[s.ID]
		if got == nil {
			got = []int64{}
		}
		if !slices.Equal(got, want) {
			qt := "and"
			if s.QueryType != nil {
				qt = *s.QueryType
			}
			w.t.Errorf("%s: segment %d (guarded %v; %q %q %q %s): %d members, a full evaluation gives %d; %s",
				phase, s.ID, w.guarded[s.ID], s.SelectField, s.SelectOperator, s.Value, qt, len(got), len(want), w.diff(got, want))
		}
		if counts[s.ID] != int64(len(got)) {
			w.t.Errorf("%s: segment %d: kept count %d, %d members", phase, s.ID, counts[s.ID], len(got))
		}
		for _, id := range got {
			now[[2]int64{s.ID, id}] = true
		}
	}
	if w.last != nil {
		changed := 0
		for k := range now {
			if !w.last[k] {
				changed++
				w.count(k[0])
			}
		}
		for k := range w.last {
			if !now[k] {
				changed++
				w.count(k[0])
			}
		}
		if changed == 0 {
			w.t.Errorf("%s changed no membership: the phase checks nothing a rebuild would not", phase)
		}
		w.t.Logf("%s: %d memberships, %d changed", phase, len(now), changed)
	}
	w.last = now
	if w.t.Failed() {
		w.t.FailNow()
	}
}

func (w *refreshWorld) count(seg int64) {
	if w.guarded[seg] {
		w.changedGuarded++
	} else {
		w.changedE++
	}
}

// diff describes the first contacts a segment lacks and has too many of.
func (w *refreshWorld) diff(got, want []int64) string {
	var missing, extra []int64
	for _, id := range want {
		if _, ok := slices.BinarySearch(got, id); !ok {
			missing = append(missing, id)
		}
	}
	for _, id := range got {
		if _, ok := slices.BinarySearch(want, id); !ok {
			extra = append(extra, id)
		}
	}
	describe := func(ids []int64) string {
		var out []string
		for _, id := range ids[:min(3, len(ids))] {
			var s string
			if err := w.d.Pool.QueryRow(w.ctx, `SELECT format('%s %s/%s/%s/%s/%s/%s/%s/%s', c.id, c.email, c.first_name, c.last_name,
				c.alt_email, c.country, c.city, c.custom, c.created_at) FROM contacts c WHERE c.id = $1`, id).Scan(&s); err != nil {
				return err.Error()
			}
			out = append(out, s)
		}
		return strconv.Itoa(len(ids)) + " [" + strings.Join(out, "; ") + "]"
	}
	return "missing " + describe(missing) + ", extra " + describe(extra)
}

// coverage fails the test when the segments or the writes stopped
// exercising what it is for.
func (w *refreshWorld) coverage() {
	segs, err := db.New(w.d.Pool).LiveSegmentsOfTypes(w.ctx, db.LiveSegmentsOfTypesParams{UserID: w.uid, TypeIds: w.types[:]})
	if err != nil {
		w.t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, s := range segs {
		conds := mail.StoredConditions(s.SelectField, s.SelectOperator, s.Value, w.custom())
		or := s.QueryType != nil && *s.QueryType == "or"
		switch {
		case w.guarded[s.ID] && len(conds) > 1:
			kinds["guarded, more conditions"]++
		case w.guarded[s.ID] && or:
			kinds["guarded, or of one"]++
		case w.guarded[s.ID]:
			kinds["guarded alone"]++
		default:
			kinds["evaluated"]++
		}
		for _, c := range conds {
			switch {
			case c.Field.Column == "created_at":
				kinds["created_at"]++
			case c.Field.Column == "country":
				kinds["country"]++
				if (c.Operator == mail.OpIs || c.Operator == mail.OpStartsWith) && (!or || len(conds) == 1) {
					kinds["country is or starts with, all must hold"]++
				}
			case c.Field.Kind == mail.KindDatetime:
				kinds["custom datetime"]++
			case c.Field.Kind == mail.KindNumber:
				kinds["number"]++
			case c.Field.Column == "email":
				kinds["email"]++
			case c.Field.Column == "" && c.Field.Custom == "":
				kinds["deleted field"]++
			}
		}
	}
	w.t.Logf("segments %v; memberships changed: %d guarded, %d evaluated", kinds, w.changedGuarded, w.changedE)
	for k, least := range map[string]int{"guarded, more conditions": 10, "guarded, or of one": 2, "guarded alone": 5, "evaluated": 30,
		"created_at": 8, "custom datetime": 8, "country": 8, "number": 10, "email": 5, "deleted field": 3,
		"country is or starts with, all must hold": 5} {
		if kinds[k] < least {
			w.t.Errorf("%d segments with %s, want at least %d", kinds[k], k, least)
		}
	}
	if w.changedGuarded < 100 || w.changedE < 100 {
		w.t.Errorf("memberships changed: %d in guarded segments, %d in evaluated ones; want 100 of each", w.changedGuarded, w.changedE)
	}
}
