package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/postgres"
	"github.com/mailroom/mailroom/internal/postgres/db"
	"github.com/mailroom/mailroom/internal/testdb"
)

// Memberships kept by contact writes equal a full evaluation of each
// segment: 60 random segments (text and number conditions on reserved
// and custom fields, and/or, on two contact types) over random contacts,
// after two CSV imports (new and updated rows), single adds, updates,
// moves between the types and deletes. Every write refreshes all the
// segments of its types in one statement (refreshSQL); a segment's
// members must be exactly the contacts its predicate picks, and its kept
// count their number.
func TestSegmentRefreshMatchesEvaluation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	rng := rand.New(rand.NewPCG(25, 26))
	uid, _, err := d.CreateAccount(ctx, "refresh")
	if err != nil {
		t.Fatal(err)
	}
	var types [2]int64
	for i := range types {
		if err := d.Pool.QueryRow(ctx, "INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id", uid, fmt.Sprint("T", i)).Scan(&types[i]); err != nil {
			t.Fatal(err)
		}
	}
	planID, err := d.CreateCustomField(ctx, uid, mail.CustomField{Name: "plan", Type: mail.FieldText})
	if err != nil {
		t.Fatal(err)
	}
	scoreID, err := d.CreateCustomField(ctx, uid, mail.CustomField{Name: "score", Type: mail.FieldNumber})
	if err != nil {
		t.Fatal(err)
	}
	custom := []mail.CustomField{{ID: planID, Name: "plan", Type: mail.FieldText}, {ID: scoreID, Name: "score", Type: mail.FieldNumber}}
	words := []string{"an", "ann", "bo", "Bob", "ca", "", "ANNA", "nn"}
	word := func() string { return words[rng.IntN(len(words))] }

	textOps := []string{mail.OpIs, mail.OpIsNot, mail.OpContains, mail.OpNotContains, mail.OpStartsWith, mail.OpEndsWith, mail.OpEmpty, mail.OpNotEmpty}
	numOps := []string{mail.OpIs, mail.OpIsNot, mail.OpGreater, mail.OpLess, mail.OpBetween, mail.OpEmpty, mail.OpNotEmpty}
	made := 0
	for made < 60 {
		form := mail.SegmentForm{ContactTypeID: fmt.Sprint(types[rng.IntN(2)]), Name: fmt.Sprint("s", made)}
		if rng.IntN(2) == 0 {
			form.QueryType = "or"
		}
		for range 1 + rng.IntN(2) {
			switch rng.IntN(4) {
			case 0, 1: // first_name, last_name
				form.Fields = append(form.Fields, fmt.Sprint(2+rng.IntN(2)))
				form.Operators = append(form.Operators, textOps[rng.IntN(len(textOps))])
				form.Values = append(form.Values, []string{word()})
			case 2:
				form.Fields = append(form.Fields, fmt.Sprint(planID))
				form.Operators = append(form.Operators, textOps[rng.IntN(len(textOps))])
				form.Values = append(form.Values, []string{word()})
			default:
				op := numOps[rng.IntN(len(numOps))]
				form.Fields = append(form.Fields, fmt.Sprint(scoreID))
				form.Operators = append(form.Operators, op)
				if op == mail.OpBetween {
					form.Values = append(form.Values, []string{fmt.Sprint(rng.IntN(5)), fmt.Sprint(5 + rng.IntN(5))})
				} else {
					form.Values = append(form.Values, []string{fmt.Sprint(rng.IntN(10))})
				}
			}
		}
		in, err := mail.ParseSegment(form, custom)
		if err != nil {
			continue // an empty value for an operator that takes one: draw again
		}
		if _, err := d.CreateSegment(ctx, uid, in); err != nil {
			t.Fatal(err)
		}
		made++
	}

	csvImport := func(typ int64, from, n int) {
		t.Helper()
		var b strings.Builder
		b.WriteString("email,first_name,last_name,plan,score\n")
		for i := from; i < from+n; i++ {
			score := ""
			if rng.IntN(4) > 0 {
				score = fmt.Sprint(rng.IntN(10))
			}
			fmt.Fprintf(&b, "u%d@example.com,%s,%s,%s,%s\n", i, word(), word(), word(), score)
		}
		src, err := mail.NewContactCSV(strings.NewReader(b.String()), custom, func(string) (int32, bool) { return 0, false })
		if err != nil {
			t.Fatal(err)
		}
		im, err := d.BeginContactImport(ctx, uid)
		if err != nil {
			t.Fatal(err)
		}
		defer im.Rollback(ctx)
		if err := im.Copy(ctx, src); err != nil {
			t.Fatal(err)
		}
		if _, err := im.Commit(ctx, typ, src); err != nil {
			t.Fatal(err)
		}
	}
	csvImport(types[0], 0, 400)
	csvImport(types[0], 200, 400) // 200 updated, 200 new
	csvImport(types[1], 500, 200) // moved from the first type and new

	ids := func() []int64 {
		var out []int64
		rows, _ := d.Pool.Query(ctx, "SELECT id FROM contacts WHERE user_id = $1 AND deleted_at IS NULL ORDER BY id", uid)
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			out = append(out, id)
		}
		return out
	}
	str := func(s string) *string { return &s }
	for i := range 30 {
		in := mail.ContactInput{ContactTypeID: types[rng.IntN(2)], Email: mail.Email(fmt.Sprintf("single%d@example.com", i)),
			FirstName: str(word()), LastName: str(word())}
		if _, _, err := d.AddContact(ctx, uid, in); err != nil {
			t.Fatal(err)
		}
	}
	all := ids()
	for range 60 {
		id := all[rng.IntN(len(all))]
		var email string
		d.Pool.QueryRow(ctx, "SELECT email FROM contacts WHERE id = $1", id).Scan(&email)
		in := mail.ContactInput{ContactTypeID: types[rng.IntN(2)], Email: mail.Email(email), FirstName: str(word()), LastName: str(word())}
		var refused *mail.Error
		if err := d.UpdateContact(ctx, uid, id, in); err != nil && !errors.As(err, &refused) {
			t.Fatal(err) // refused: the address is in the other type already
		}
	}
	var gone []int64
	for range 40 {
		gone = append(gone, all[rng.IntN(len(all))])
	}
	if err := d.DeleteContacts(ctx, uid, slices.Compact(slices.Sorted(slices.Values(gone)))); err != nil {
		t.Fatal(err)
	}

	segs, err := db.New(d.Pool).LiveSegmentsOfTypes(ctx, db.LiveSegmentsOfTypesParams{UserID: uid, TypeIds: types[:]})
	if err != nil || len(segs) != 60 {
		t.Fatalf("%d segments: %v", len(segs), err)
	}
	nonEmpty := 0
	for _, s := range segs {
		conds := mail.StoredConditions(s.SelectField, s.SelectOperator, s.Value, custom)
		pred, args := postgres.SegmentPredicate(conds, s.QueryType != nil && *s.QueryType == "or")
		n := len(args)
		want := members(t, d, fmt.Sprintf(`SELECT c.id FROM contacts c WHERE c.user_id = $%d AND c.contact_type_id = $%d
			AND c.deleted_at IS NULL AND %s ORDER BY c.id`, n+1, n+2, pred), append(args, uid, s.ContactTypeID)...)
		got := members(t, d, "SELECT contact_id FROM segment_members WHERE segment_id = $1 ORDER BY contact_id", s.ID)
		if !slices.Equal(got, want) {
			t.Errorf("segment %d (%v %v %v %v): %d members, a full evaluation gives %d", s.ID, s.SelectField, s.SelectOperator, s.Value, s.QueryType, len(got), len(want))
		}
		var kept int64
		d.Pool.QueryRow(ctx, "SELECT COALESCE(sum(n), 0)::bigint FROM list_counts WHERE user_id = $1 AND kind = 'segment' AND key = $2", uid, s.ID).Scan(&kept)
		if kept != int64(len(got)) {
			t.Errorf("segment %d: kept count %d, %d members", s.ID, kept, len(got))
		}
		if len(want) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 20 {
		t.Errorf("only %d of 60 segments have members: the test checks little", nonEmpty)
	}
}

func members(t *testing.T, d *postgres.DB, sql string, args ...any) []int64 {
	t.Helper()
	rows, err := d.Pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if out == nil {
		out = []int64{}
	}
	return out
}
