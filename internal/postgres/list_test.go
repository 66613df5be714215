package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/testdb"
)

// listFixture is an account with two contact types, a number field and a
// segment on the first type (score below 50).
type listFixture struct {
	d            *postgres.DB
	uid          int64
	typeA, typeB int64
	field        mail.CustomField
	segment      int64
}

func newListFixture(t *testing.T) *listFixture {
	t.Helper()
	ctx := context.Background()
	f := &listFixture{d: testdb.New(t)}
	var err error
	if f.uid, _, err = f.d.CreateAccount(ctx, t.Name()); err != nil {
		t.Fatal(err)
	}
	if f.typeA, err = f.d.CreateContactType(ctx, f.uid, "A"); err != nil {
		t.Fatal(err)
	}
	if f.typeB, err = f.d.CreateContactType(ctx, f.uid, "B"); err != nil {
		t.Fatal(err)
	}
	f.field = mail.CustomField{Name: "score", Type: mail.FieldNumber}
	if f.field.ID, err = f.d.CreateCustomField(ctx, f.uid, f.field); err != nil {
		t.Fatal(err)
	}
	if f.segment, err = f.d.CreateSegment(ctx, f.uid, f.segmentInput(t, f.typeA, "50")); err != nil {
		t.Fatal(err)
	}
	return f
}

// segmentInput is "score is less than below" over a type.
func (f *listFixture) segmentInput(t *testing.T, typeID int64, below string) mail.SegmentInput {
	t.Helper()
	in, err := mail.ParseSegment(mail.SegmentForm{
		ContactTypeID: fmt.Sprint(typeID), Name: "low",
		Fields: []string{fmt.Sprint(f.field.ID)}, Operators: []string{"is less than"}, Values: [][]string{{below}},
	}, []mail.CustomField{f.field})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func (f *listFixture) contact(typeID int64, email string, score int) mail.ContactInput {
	return mail.ContactInput{ContactTypeID: typeID, Email: mail.Email(email),
		Custom: map[string]any{"score": score}, CustomFieldIDs: []int64{f.field.ID}}
}

func (f *listFixture) add(t testing.TB, typeID int64, email string, score int) int64 {
	t.Helper()
	id, _, err := f.d.AddContact(context.Background(), f.uid, f.contact(typeID, email, score))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// importCSV imports content (a header with email and score) into a type.
func (f *listFixture) importCSV(t testing.TB, typeID int64, content string) postgres.ImportResult {
	t.Helper()
	res, err := f.tryImport(typeID, content)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *listFixture) tryImport(typeID int64, content string) (postgres.ImportResult, error) {
	ctx := context.Background()
	src, err := mail.NewContactCSV(strings.NewReader(content), []mail.CustomField{f.field}, func(string) (int32, bool) { return 0, false })
	if err != nil {
		return postgres.ImportResult{}, err
	}
	im, err := f.d.BeginContactImport(ctx, f.uid)
	if err != nil {
		return postgres.ImportResult{}, err
	}
	defer im.Rollback(ctx)
	if err := im.Copy(ctx, src); err != nil {
		return postgres.ImportResult{}, err
	}
	return im.Commit(ctx, typeID, src)
}

// Pages found by OFFSET and by after_id agree, and a walk (unpaged) goes
// past rows it does not list.
func TestListPagesAndCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	d, uid := f.d, f.uid
	var sb strings.Builder
	sb.WriteString("email,score\n")
	for i := range 700 {
		fmt.Fprintf(&sb, "p%d@example.com,%d\n", i, i%2*80+10)
	}
	f.importCSV(t, f.typeA, sb.String())

	ids := func(page *mail.Page) (out []int64, total int64) {
		t.Helper()
		total, err := d.ListContacts(ctx, uid, page, func(c *postgres.Contact) error {
			out = append(out, c.ID)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out, total
	}
	all, _ := ids(nil)
	if len(all) != 700 {
		t.Fatalf("%d contacts", len(all))
	}
	byOffset, total := ids(&mail.Page{Number: 7, Size: 50})
	byCursor, total2 := ids(&mail.Page{Number: 1, Size: 50, After: all[299]})
	if total != 700 || total2 != 700 || fmt.Sprint(byOffset) != fmt.Sprint(all[300:350]) || fmt.Sprint(byCursor) != fmt.Sprint(all[300:350]) {
		t.Fatalf("offset %v (total %d), cursor %v (total %d)", byOffset, total, byCursor, total2)
	}
	if byBoth, _ := ids(&mail.Page{Number: 2, Size: 50, After: all[299]}); fmt.Sprint(byBoth) != fmt.Sprint(all[350:400]) {
		t.Fatalf("page 2 after a cursor: %v", byBoth)
	}
	if last, _ := ids(&mail.Page{Number: 1, Size: 50, After: all[699]}); len(last) != 0 {
		t.Fatalf("after the last: %v", last)
	}

	// The segment holds the 350 even ones. A member whose contact was
	// deleted behind storage's back (never left by a delete) is not
	// listed, and the walk goes on past it through its 250-row chunks.
	members := func(page *mail.Page) (rids, cids []int64) {
		t.Helper()
		if _, err := d.SegmentRecipients(ctx, uid, f.segment, page, func(r *mail.SegmentRecipient) error {
			rids, cids = append(rids, r.ID), append(cids, *r.ContactID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return rids, cids
	}
	rids, cids := members(nil)
	if len(rids) != 350 {
		t.Fatalf("%d members", len(rids))
	}
	if _, err := d.Pool.Exec(ctx, "UPDATE contacts SET deleted_at = now() WHERE id = ANY($1)", []int64{cids[0], cids[249], cids[250]}); err != nil {
		t.Fatal(err)
	}
	if after, _ := members(nil); len(after) != 347 || after[len(after)-1] != rids[349] {
		t.Fatalf("%d members listed, last %d", len(after), after[len(after)-1])
	}
	if page, _ := members(&mail.Page{Number: 1, Size: 5, After: rids[247]}); fmt.Sprint(page) != fmt.Sprint([]int64{rids[248], rids[251], rids[252]}) {
		t.Fatalf("page after %d: %v", rids[247], page)
	}
}
