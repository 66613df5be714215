package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

// The send list reads a few sends per query (they carry their templates),
// pages too: every page, across chunk boundaries, holds the right sends
// in id order.
func TestListSingleSendsChunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	uid, _, err := d.CreateAccount(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	in := mail.SingleSendInput{TemplateID: 2, SenderID: 1, GroupID: 1, Name: "S", Subject: "s", Preheader: "p",
		Recipients: []mail.ListRef{{Table: mail.ListContacts, ID: 1}}}
	var ids []int64
	for i := 0; i < 47; i++ {
		q, err := d.CreateSingleSend(ctx, uid, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, q.ID)
	}
	if err := d.DeleteSingleSends(ctx, uid, []int64{ids[5], ids[25]}); err != nil {
		t.Fatal(err)
	}
	live := slices.Delete(slices.Delete(slices.Clone(ids), 25, 26), 5, 6)
	list := func(page *mail.Page) ([]int64, int64) {
		var got []int64
		total, err := d.ListSingleSends(ctx, uid, page, func(s *mail.SingleSend) error {
			got = append(got, s.ID)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, total
	}
	if got, _ := list(nil); !slices.Equal(got, live) {
		t.Fatalf("whole list %v, want %v", got, live)
	}
	for _, tc := range []struct {
		page mail.Page
		want []int64
	}{
		{mail.Page{Number: 1, Size: 30}, live[:30]},
		{mail.Page{Number: 2, Size: 30}, live[30:]},
		{mail.Page{Number: 3, Size: 30}, nil},
		{mail.Page{Number: 2, Size: 7}, live[7:14]},
		{mail.Page{Number: 1, Size: 1000, After: live[10]}, live[11:]},
		{mail.Page{Number: 2, Size: 21, After: live[0]}, live[22:43]},
	} {
		got, total := list(&tc.page)
		if !slices.Equal(got, tc.want) || total != int64(len(live)) {
			t.Errorf("page %+v: %v (total %d), want %v (total %d)", tc.page, got, total, tc.want, len(live))
		}
	}
	// Another account's list is empty.
	other, _, err := d.CreateAccount(ctx, t.Name()+" other")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := d.ListSingleSends(ctx, other, nil, func(*mail.SingleSend) error { t.Fatal("listed"); return nil }); err != nil || got != 0 {
		t.Fatal(got, err)
	}
}
