package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mailroom/mailroom/internal/apiclient"
)

// -mix segments: one contact type of -contacts contacts (1,000) written and
// read while segments of it are saved and changed. Contact adds, updates,
// deletes and details, paged and full contact lists, the segment list, a
// segment's details and a page of its recipients are chosen at random by
// segWeights; -segment-saves saves and -segment-updates condition changes
// are spread evenly over the run (the n-th once n/N of it has gone), so the
// type ends with that many segments however fast the server answers. A
// contact or segment is used by one request at a time, so the load knows
// what each answered write left. Afterwards verify checks, through the API,
// that every count is exact and every segment's members are what its
// stored conditions select.

// segOptions are -mix segments' own settings.
type segOptions struct{ saves, updates int }

// The kinds of request of -mix segments, in the table's order.
const (
	opAdd = iota
	opUpdate
	opDelete
	opDetails
	opPage
	opFullList
	opSegList
	opSegDetails
	opSegRecipients
	opSegSave
	opSegUpdate
)

var segOpNames = []string{
	opAdd:           "POST /contacts/add",
	opUpdate:        "POST /contacts/update",
	opDelete:        "DELETE /contacts/delete",
	opDetails:       "GET /contacts/details",
	opPage:          "GET /contacts/list?per_page=50",
	opFullList:      "GET /contacts/list (all)",
	opSegList:       "GET /segment/list",
	opSegDetails:    "GET /segment/details",
	opSegRecipients: "GET /segment/email/list?per_page=50",
	opSegSave:       "POST /segment/save",
	opSegUpdate:     "POST /segment/update",
}

// segWeights are the chances, in 100, of the requests that are not paced:
// adds and deletes alike, so the type keeps its size.
var segWeights = []struct{ op, w int }{
	{opAdd, 9}, {opUpdate, 12}, {opDelete, 9}, {opDetails, 14}, {opPage, 14}, {opFullList, 4},
	{opSegList, 10}, {opSegDetails, 12}, {opSegRecipients, 16},
}

// The values contacts take and segments select on: a contact has a first
// name, a last name and a city (empty one time in eleven), so a segment
// selects some tens of the type's contacts.
var (
	firstNames = []string{"Anna", "Ben", "Clara", "David", "Emma", "Felix", "Greta", "Hugo", "Ida", "Jonas",
		"Karl", "Lena", "Max", "Nora", "Otto", "Paula", "Quinn", "Rosa", "Sven", "Tina"}
	lastNames = []string{"Adler", "Becker", "Colt", "Dorn", "Engel", "Fischer", "Graf", "Hahn", "Ibsen", "Jung",
		"Keller", "Lange", "Maier", "Neumann", "Ott", "Peters", "Quast", "Roth", "Schulz", "Vogel"}
	cities = []string{"Berlin", "Bonn", "Bremen", "Dresden", "Essen", "Hamburg", "Kiel", "Koeln", "Mainz", "Ulm", ""}
)

type person struct{ first, last, city string }

func randomPerson(rng *rand.Rand) person {
	return person{firstNames[rng.IntN(len(firstNames))], lastNames[rng.IntN(len(lastNames))], cities[rng.IntN(len(cities))]}
}

// contactRec is a live contact as the load knows it.
type contactRec struct {
	id    int64 // 0 until a full list shows it
	email string
	p     person
	// unsure: a write of it went unanswered (a transport error or a 5xx), so
	// whether and how it is stored is the database's word.
	unsure bool
}

// segLoad is the state of -mix segments.
type segLoad struct {
	c      *apiclient.Client
	typeID int64
	tag    string // marks this run's addresses and segment names
	o      segOptions

	mu      sync.Mutex
	byEmail map[string]*contactRec
	byID    map[int64]*contactRec
	free    []int64          // known live contacts no request is using
	segs    map[int64]string // known segments of the type: id -> name
	segFree []int64          // known segments no update is changing
	seq     int64
	saves   int // saves issued
	updates int // condition changes issued
	savedOK int
	saveBad int // saves unanswered or 5xx: they may have stored a segment
	// learned is when a full list was last read for new ids: at most once
	// a second, as decoding every one would take the load's own CPU from
	// the server it measures (they share the machine).
	learned time.Time
}

func segmentsMix(ctx context.Context, c *apiclient.Client, o options) (*mix, error) {
	n := o.contacts
	if n == 0 {
		n = 1000
	}
	s := &segLoad{c: c, tag: strconv.FormatInt(time.Now().UnixNano()%1e9, 36), o: o.seg,
		byEmail: map[string]*contactRec{}, byID: map[int64]*contactRec{}, segs: map[int64]string{}}
	rng := rand.New(rand.NewPCG(o.seed, 1<<40))
	seeded := make([]*contactRec, n)
	for i := range seeded {
		seeded[i] = &contactRec{email: fmt.Sprintf("s%d-%s@load.example", i, s.tag), p: randomPerson(rng)}
		s.byEmail[seeded[i].email] = seeded[i]
	}
	var err error
	s.typeID, err = seedType(ctx, c, n, "email,first_name,last_name,city\n", func(i int) string {
		r := seeded[i]
		return r.email + "," + r.p.first + "," + r.p.last + "," + r.p.city + "\n"
	})
	if err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	if _, err := s.fullList(ctx); err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	if len(s.free) != n {
		return nil, fmt.Errorf("seeding: %d of %d contacts listed", len(s.free), n)
	}
	return &mix{ops: segOpNames, next: s.next, verify: s.verify}, nil
}

// next chooses a client's next request and prepares it: the contact or
// segment it uses is taken here, under the lock, and given back when it
// has answered.
func (s *segLoad) next(_ int64, rng *rand.Rand, elapsed float64) (int, call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saves < s.o.saves && float64(s.saves) < elapsed*float64(s.o.saves) {
		s.saves++
		return opSegSave, s.saveSegment(s.saves, rng)
	}
	if s.updates < s.o.updates && float64(s.updates) < elapsed*float64(s.o.updates) && len(s.segFree) > 0 {
		s.updates++
		return opSegUpdate, s.updateSegment(takeRandom(&s.segFree, rng), rng)
	}
	k := rng.IntN(100)
	o := segWeights[len(segWeights)-1].op
	for _, w := range segWeights {
		if k < w.w {
			o = w.op
			break
		}
		k -= w.w
	}
	switch o {
	case opUpdate, opDelete, opDetails:
		if len(s.free) == 0 {
			o = opPage
		}
	case opSegDetails, opSegRecipients:
		if len(s.segs) == 0 {
			o = opSegList
		}
	}
	switch o {
	case opAdd:
		s.seq++
		return o, s.addContact(fmt.Sprintf("a%d-%s@load.example", s.seq, s.tag), randomPerson(rng))
	case opUpdate:
		return o, s.updateContact(s.byID[takeRandom(&s.free, rng)], randomPerson(rng))
	case opDelete:
		return o, s.deleteContact(s.byID[takeRandom(&s.free, rng)])
	case opDetails:
		id := takeRandom(&s.free, rng)
		return o, func(ctx context.Context) (int, error) {
			code, _, err := s.c.Raw(ctx, "GET", fmt.Sprintf("/contacts/details?contact_id=%d", id), nil)
			s.giveBack(id)
			return code, err
		}
	case opPage:
		return o, getPath(s.c, fmt.Sprintf("/contacts/list?per_page=50&page=%d", 1+rng.IntN(20)))
	case opFullList:
		return o, s.fullList
	case opSegList:
		return o, s.segmentList
	case opSegDetails:
		return o, getPath(s.c, fmt.Sprintf("/segment/details?segment_id=%d", s.randomSegment(rng)))
	default:
		return o, getPath(s.c, fmt.Sprintf("/segment/email/list?segment_id=%d&per_page=50", s.randomSegment(rng)))
	}
}

// takeRandom removes and answers a random element of *ids (not empty).
func takeRandom(ids *[]int64, rng *rand.Rand) int64 {
	l := *ids
	i := rng.IntN(len(l))
	id := l[i]
	l[i] = l[len(l)-1]
	*ids = l[:len(l)-1]
	return id
}

func (s *segLoad) randomSegment(rng *rand.Rand) int64 {
	k := rng.IntN(len(s.segs))
	for id := range s.segs {
		if k == 0 {
			return id
		}
		k--
	}
	return 0
}

func (s *segLoad) giveBack(id int64) {
	s.mu.Lock()
	s.free = append(s.free, id)
	s.mu.Unlock()
}

// unanswered reports a write whose outcome is unknown.
func unanswered(code int, err error) bool { return err != nil || code >= 500 }

func (s *segLoad) contactForm(email string, p person) url.Values {
	return url.Values{"contact_type_id": {strconv.FormatInt(s.typeID, 10)}, "email": {email}, "country": {"276"},
		"first_name": {p.first}, "last_name": {p.last}, "city": {p.city}}
}

func (s *segLoad) addContact(email string, p person) call {
	return func(ctx context.Context) (int, error) {
		code, _, err := s.c.Raw(ctx, "POST", "/contacts/add", s.contactForm(email, p))
		if code == 200 || unanswered(code, err) {
			s.mu.Lock()
			s.byEmail[email] = &contactRec{email: email, p: p, unsure: code != 200}
			s.mu.Unlock()
		}
		return code, err
	}
}

func (s *segLoad) updateContact(r *contactRec, p person) call {
	return func(ctx context.Context) (int, error) {
		f := s.contactForm(r.email, p)
		f.Set("contact_id", strconv.FormatInt(r.id, 10))
		code, _, err := s.c.Raw(ctx, "POST", "/contacts/update", f)
		s.mu.Lock()
		switch {
		case code == 200:
			r.p = p
		case unanswered(code, err):
			r.unsure = true
		}
		s.free = append(s.free, r.id)
		s.mu.Unlock()
		return code, err
	}
}

func (s *segLoad) deleteContact(r *contactRec) call {
	return func(ctx context.Context) (int, error) {
		code, _, err := s.c.Raw(ctx, "DELETE", fmt.Sprintf("/contacts/delete?contact_id=%d", r.id), nil)
		s.mu.Lock()
		switch {
		case code == 200:
			delete(s.byEmail, r.email)
			delete(s.byID, r.id)
		case unanswered(code, err):
			r.unsure = true // never used again
		default:
			s.free = append(s.free, r.id)
		}
		s.mu.Unlock()
		return code, err
	}
}

// listedContact is what the load reads of a listed contact.
type listedContact struct {
	ID            int64  `json:"id"`
	ContactTypeID int64  `json:"contact_type_id"`
	Email         string `json:"email"`
	FirstName     string `json:"first_name"`
	LastName      string `json:"last_name"`
	City          string `json:"city"`
}

// fullList reads every contact of the account and, at most once a second,
// learns from it the ids of the contacts added since.
func (s *segLoad) fullList(ctx context.Context) (int, error) {
	code, b, err := s.c.Raw(ctx, "GET", "/contacts/list", nil)
	if err != nil || code != 200 {
		return code, err
	}
	s.mu.Lock()
	learn := time.Since(s.learned) >= time.Second
	if learn {
		s.learned = time.Now()
	}
	s.mu.Unlock()
	if !learn {
		return code, nil
	}
	var env struct {
		Message struct {
			Contacts []listedContact `json:"contacts"`
		} `json:"message"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return code, err
	}
	s.mu.Lock()
	for _, c := range env.Message.Contacts {
		if r := s.byEmail[c.Email]; r != nil && r.id == 0 && !r.unsure && c.ContactTypeID == s.typeID {
			r.id = c.ID
			s.byID[c.ID] = r
			s.free = append(s.free, c.ID)
		}
	}
	s.mu.Unlock()
	return code, nil
}

// listedSegment is what the load reads of a listed segment.
type listedSegment struct {
	ID             int64    `json:"id"`
	ContactTypeID  int64    `json:"contact_type_id"`
	SegmentName    string   `json:"segment_name"`
	SelectField    []string `json:"select_field"`
	SelectOperator []string `json:"select_operator"`
	Value          []string `json:"value"`
	QueryType      *string  `json:"query_type"`
	Count          int64    `json:"segment_emails_count"`
}

// segmentList reads the segment list and learns the ids of new segments.
func (s *segLoad) segmentList(ctx context.Context) (int, error) {
	code, b, err := s.c.Raw(ctx, "GET", "/segment/list", nil)
	if err != nil || code != 200 {
		return code, err
	}
	var env struct {
		Message struct {
			Segments []listedSegment `json:"segments"`
		} `json:"message"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return code, err
	}
	s.mu.Lock()
	for _, g := range env.Message.Segments {
		if _, ok := s.segs[g.ID]; !ok && g.ContactTypeID == s.typeID {
			s.segs[g.ID] = g.SegmentName
			s.segFree = append(s.segFree, g.ID)
		}
	}
	s.mu.Unlock()
	return code, nil
}

// randomConditions are one to two conditions on the contacts' names and
// cities, of the kinds a contact write finds by key (a text "is" or
// "starts with", alone or with others that must hold too) and of the kinds
// it evaluates (contains, ends with, or, is empty).
func randomConditions(rng *rand.Rand) (fields, ops, values []string, or bool) {
	first := firstNames[rng.IntN(len(firstNames))]
	last := lastNames[rng.IntN(len(lastNames))]
	city := cities[rng.IntN(len(cities)-1)]
	switch rng.IntN(8) {
	case 0:
		return []string{"2"}, []string{"starts with"}, []string{first[:1+rng.IntN(2)]}, false
	case 1:
		return []string{"2"}, []string{"is"}, []string{strings.ToLower(first)}, false
	case 2:
		return []string{"7"}, []string{"is"}, []string{city}, false
	case 3:
		return []string{"3"}, []string{"contains"}, []string{last[1:3]}, false
	case 4:
		return []string{"3"}, []string{"ends with"}, []string{last[len(last)-2:]}, false
	case 5:
		return []string{"2", "7"}, []string{"starts with", "is not"}, []string{first[:1], city}, false
	case 6:
		return []string{"7", "3"}, []string{"is", "starts with"}, []string{city, last[:1]}, true
	default:
		return []string{"7"}, []string{"is empty"}, nil, false
	}
}

func (s *segLoad) segmentForm(name string, rng *rand.Rand) url.Values {
	fields, ops, values, or := randomConditions(rng)
	f := url.Values{"contact_type_id": {strconv.FormatInt(s.typeID, 10)}, "segment_name": {name}}
	vi := 0
	for i := range fields {
		k := strconv.Itoa(i)
		f.Set("select_field["+k+"]", fields[i])
		f.Set("select_operator["+k+"]", ops[i])
		if ops[i] != "is empty" {
			f.Set("value["+k+"]", values[vi])
			vi++
		}
	}
	if or {
		f.Set("query_type", "or")
	}
	return f
}

func (s *segLoad) saveSegment(n int, rng *rand.Rand) call {
	f := s.segmentForm(fmt.Sprintf("load %s %d", s.tag, n), rng)
	return func(ctx context.Context) (int, error) {
		code, _, err := s.c.Raw(ctx, "POST", "/segment/save", f)
		s.mu.Lock()
		switch {
		case code == 200:
			s.savedOK++
		case unanswered(code, err):
			s.saveBad++
		}
		s.mu.Unlock()
		return code, err
	}
}

func (s *segLoad) updateSegment(id int64, rng *rand.Rand) call {
	f := s.segmentForm(s.segs[id], rng)
	return func(ctx context.Context) (int, error) {
		code, _, err := s.c.Raw(ctx, "POST", fmt.Sprintf("/segment/update?segment_id=%d", id), f)
		s.mu.Lock()
		s.segFree = append(s.segFree, id)
		s.mu.Unlock()
		return code, err
	}
}

func getPath(c *apiclient.Client, path string) call {
	return func(ctx context.Context) (int, error) {
		code, _, err := c.Raw(ctx, "GET", path, nil)
		return code, err
	}
}

// verify checks, once the load is over, that the API's counts are exact
// and every segment holds exactly the contacts its stored conditions
// select: the contact type's contacts_count and the contact list's total
// against the full list; the full list against what the answered writes
// left (every address added and not deleted, with its last update's
// values); each segment's segment_emails_count and its recipient list's
// total against its full recipient list, and that list against the
// conditions evaluated here over the full contact list.
func (s *segLoad) verify() error {
	var problems []string
	bad := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	var contacts struct {
		Contacts []listedContact `json:"contacts"`
	}
	if err := s.call("/contacts/list", &contacts); err != nil {
		return err
	}
	var mine []listedContact
	seen := map[string]bool{}
	for _, c := range contacts.Contacts {
		if c.ContactTypeID != s.typeID {
			continue
		}
		mine = append(mine, c)
		seen[c.Email] = true
		r := s.byEmail[c.Email]
		switch {
		case r == nil:
			bad("contact %d (%s) is listed but was deleted or never added", c.ID, c.Email)
		case r.unsure:
		case (r.id != 0 && r.id != c.ID) || r.p != (person{c.FirstName, c.LastName, c.City}):
			bad("contact %d (%s) is listed as %q %q %q, its last write was %d %q %q %q", c.ID, c.Email,
				c.FirstName, c.LastName, c.City, r.id, r.p.first, r.p.last, r.p.city)
		}
	}
	unsure := 0
	for e, r := range s.byEmail {
		if r.unsure {
			unsure++
		} else if !seen[e] {
			bad("contact %s was added and not deleted but is not listed", e)
		}
	}
	var types struct {
		ContactTypes []struct {
			ID    int64 `json:"id"`
			Count int64 `json:"contacts_count"`
		} `json:"contactTypes"`
	}
	if err := s.call("/contacts-type", &types); err != nil {
		return err
	}
	for _, t := range types.ContactTypes {
		if t.ID == s.typeID && t.Count != int64(len(mine)) {
			bad("contacts_count %d, %d contacts listed", t.Count, len(mine))
		}
	}
	if total, err := s.total("/contacts/list?per_page=1"); err != nil {
		return err
	} else if total != int64(len(contacts.Contacts)) {
		bad("the contact list's total is %d, %d contacts listed", total, len(contacts.Contacts))
	}

	var segs struct {
		Segments []listedSegment `json:"segments"`
	}
	if err := s.call("/segment/list", &segs); err != nil {
		return err
	}
	var ours []listedSegment
	for _, g := range segs.Segments {
		if g.ContactTypeID == s.typeID {
			ours = append(ours, g)
		}
	}
	if n := len(ours); n < s.savedOK || n > s.savedOK+s.saveBad {
		bad("%d segments listed, %d saves answered 200 (%d unanswered)", n, s.savedOK, s.saveBad)
	}
	members := 0
	for _, g := range ours {
		want, err := selects(g, mine)
		if err != nil {
			return err
		}
		var recips struct {
			ContactEmails []struct {
				ContactID *int64 `json:"contact_id"`
			} `json:"contactEmails"`
		}
		if err := s.call(fmt.Sprintf("/segment/email/list?segment_id=%d", g.ID), &recips); err != nil {
			return err
		}
		var got []int64
		for _, r := range recips.ContactEmails {
			if r.ContactID == nil {
				bad("segment %d lists a recipient stored by hand", g.ID)
				continue
			}
			got = append(got, *r.ContactID)
		}
		slices.Sort(got)
		members += len(got)
		total, err := s.total(fmt.Sprintf("/segment/email/list?segment_id=%d&per_page=1", g.ID))
		if err != nil {
			return err
		}
		if g.Count != int64(len(got)) || total != g.Count {
			bad("segment %d: segment_emails_count %d, list total %d, %d recipients listed", g.ID, g.Count, total, len(got))
		}
		if !slices.Equal(got, want) {
			bad("segment %d (%v %v %v %v): %d members, its conditions select %d (first differences: %v)", g.ID,
				g.SelectField, g.SelectOperator, g.Value, g.QueryType, len(got), len(want), firstDifferences(got, want))
		}
	}
	fmt.Printf("check: %d contacts of the type (%d whose last write went unanswered), %d segments, %d memberships\n",
		len(mine), unsure, len(ours), members)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n  "))
	}
	fmt.Println("check: contacts_count, the list totals, every segment's count and members exact")
	return nil
}

// call reads a success answer's message into v.
func (s *segLoad) call(path string, v any) error {
	b, err := s.c.Call("GET", path, nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// total is a paged list's pagination total.
func (s *segLoad) total(path string) (int64, error) {
	var p struct {
		Pagination struct {
			Total int64 `json:"total"`
		} `json:"pagination"`
	}
	err := s.call(path, &p)
	return p.Pagination.Total, err
}

// selects answers the ids of the contacts g's stored conditions select, in
// order: the text operators the load uses, compared case-insensitively
// (its values are ASCII).
func selects(g listedSegment, contacts []listedContact) ([]int64, error) {
	type cond struct{ field, op, val string }
	var conds []cond
	vi := 0
	for i, f := range g.SelectField {
		c := cond{field: f, op: g.SelectOperator[i]}
		if c.op != "is empty" && c.op != "is not empty" {
			if vi >= len(g.Value) {
				return nil, fmt.Errorf("segment %d: fewer values than conditions", g.ID)
			}
			c.val = strings.ToLower(g.Value[vi])
			vi++
		}
		conds = append(conds, c)
	}
	or := g.QueryType != nil && *g.QueryType == "or"
	var out []int64
	for _, ct := range contacts {
		match := !or
		for _, c := range conds {
			var v string
			switch c.field {
			case "2":
				v = ct.FirstName
			case "3":
				v = ct.LastName
			case "7":
				v = ct.City
			default:
				return nil, fmt.Errorf("segment %d: field %s is not one the load uses", g.ID, c.field)
			}
			v = strings.ToLower(v)
			var m bool
			switch c.op {
			case "is":
				m = v == c.val
			case "is not":
				m = v != c.val
			case "contains":
				m = strings.Contains(v, c.val)
			case "starts with":
				m = strings.HasPrefix(v, c.val)
			case "ends with":
				m = strings.HasSuffix(v, c.val)
			case "is empty":
				m = v == ""
			case "is not empty":
				m = v != ""
			default:
				return nil, fmt.Errorf("segment %d: operator %q is not one the load uses", g.ID, c.op)
			}
			if or {
				match = match || m
			} else {
				match = match && m
			}
		}
		if match {
			out = append(out, ct.ID)
		}
	}
	slices.Sort(out)
	return out, nil
}

// firstDifferences are up to five ids in one of a and b (sorted) and not
// the other, signed: +id listed and not selected, -id selected and not
// listed.
func firstDifferences(got, want []int64) []int64 {
	var d []int64
	i, j := 0, 0
	for (i < len(got) || j < len(want)) && len(d) < 5 {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			d = append(d, got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			d = append(d, -want[j])
			j++
		default:
			i++
			j++
		}
	}
	return d
}
