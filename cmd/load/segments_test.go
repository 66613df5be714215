package main

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSelects checks the load's own evaluation of stored conditions, which
// its check compares every segment's members against.
func TestSelects(t *testing.T) {
	contacts := []listedContact{
		{ID: 1, FirstName: "Anna", LastName: "Adler", City: "Berlin"},
		{ID: 2, FirstName: "ANTON", LastName: "Becker", City: ""},
		{ID: 3, FirstName: "Ben", LastName: "Maier", City: "bonn"},
		{ID: 4, FirstName: "Clara", LastName: "Keller", City: "Berlin"},
	}
	or := "or"
	tests := []struct {
		name string
		seg  listedSegment
		want []int64
	}{
		{"starts with, any case", listedSegment{SelectField: []string{"2"}, SelectOperator: []string{"starts with"}, Value: []string{"an"}}, []int64{1, 2}},
		{"is, any case", listedSegment{SelectField: []string{"7"}, SelectOperator: []string{"is"}, Value: []string{"Bonn"}}, []int64{3}},
		{"contains", listedSegment{SelectField: []string{"3"}, SelectOperator: []string{"contains"}, Value: []string{"ll"}}, []int64{4}},
		{"ends with", listedSegment{SelectField: []string{"3"}, SelectOperator: []string{"ends with"}, Value: []string{"er"}}, []int64{1, 2, 3, 4}},
		{"is empty takes no value", listedSegment{SelectField: []string{"7", "2"}, SelectOperator: []string{"is empty", "starts with"}, Value: []string{"a"}}, []int64{2}},
		{"and", listedSegment{SelectField: []string{"2", "7"}, SelectOperator: []string{"starts with", "is not"}, Value: []string{"a", "berlin"}}, []int64{2}},
		{"or", listedSegment{SelectField: []string{"7", "3"}, SelectOperator: []string{"is", "starts with"}, Value: []string{"bonn", "k"}, QueryType: &or}, []int64{3, 4}},
		{"none", listedSegment{SelectField: []string{"2"}, SelectOperator: []string{"is"}, Value: []string{"zed"}}, nil},
	}
	for _, tt := range tests {
		got, err := selects(tt.seg, contacts)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	for _, bad := range []listedSegment{
		{SelectField: []string{"5"}, SelectOperator: []string{"is"}, Value: []string{"x"}},
		{SelectField: []string{"2"}, SelectOperator: []string{"is before"}, Value: []string{"x"}},
		{SelectField: []string{"2"}, SelectOperator: []string{"is"}},
	} {
		if _, err := selects(bad, contacts); err == nil {
			t.Errorf("%v: no error for conditions the load does not make", bad)
		}
	}
}

// TestRandomConditions checks that every segment the load saves has a
// value for each condition that takes one, and that the check can evaluate
// it.
func TestRandomConditions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &segLoad{typeID: 7}
	for range 200 {
		f := s.segmentForm("x", rng)
		g := listedSegment{}
		for i := 0; f.Has("select_field[" + strconv.Itoa(i) + "]"); i++ {
			k := strconv.Itoa(i)
			g.SelectField = append(g.SelectField, f.Get("select_field["+k+"]"))
			g.SelectOperator = append(g.SelectOperator, f.Get("select_operator["+k+"]"))
			if v := f.Get("value[" + k + "]"); v != "" {
				g.Value = append(g.Value, v)
			} else if f.Get("select_operator["+k+"]") != "is empty" {
				t.Fatalf("%v: condition %s has no value", f, k)
			}
		}
		if q := f.Get("query_type"); q != "" {
			g.QueryType = &q
		}
		if len(g.SelectField) == 0 || strings.TrimSpace(f.Get("contact_type_id")) != "7" {
			t.Fatalf("%v: no condition or no type", f)
		}
		if _, err := selects(g, nil); err != nil {
			t.Fatalf("%v: %v", f, err)
		}
	}
}

func TestFirstDifferences(t *testing.T) {
	got := firstDifferences([]int64{1, 2, 4, 7}, []int64{2, 3, 4, 8})
	if want := []int64{1, -3, 7, -8}; !slices.Equal(got, want) {
		t.Errorf("firstDifferences = %v, want %v", got, want)
	}
	if d := firstDifferences([]int64{1, 2}, []int64{1, 2}); len(d) != 0 {
		t.Errorf("equal lists differ by %v", d)
	}
}
