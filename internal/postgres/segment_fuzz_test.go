package postgres

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/mail"
)

// SegmentPredicate compiles conditions as a segment query does, for this
// package's tests (the external ones in segment_sql_test.go too): the
// boolean SQL expression, reading a contact as "c", and its $n arguments.
func SegmentPredicate(conds []mail.Condition, or bool) (string, []any) {
	p := &predicate{}
	return p.compile(conds, or), p.args
}

var (
	placeholderRE = regexp.MustCompile(`\$([0-9]+)`)
	timestampRE   = regexp.MustCompile(`\$([0-9]+)::timestamp`)
)

// PredicateProblem says what is wrong with a compiled predicate, "" when
// nothing is: its placeholders must be exactly $1…$len(args) (PostgreSQL
// refuses a statement with an argument no $n names), every text argument
// UTF-8 without NUL, and every argument cast to timestamp a time of the
// years 0001-9999 (PostgreSQL refuses year 0).
func PredicateProblem(sql string, args []any) string {
	seen := map[int]bool{}
	for _, m := range placeholderRE.FindAllStringSubmatch(sql, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 1 || n > len(args) {
			return fmt.Sprintf("placeholder $%s with %d arguments", m[1], len(args))
		}
		seen[n] = true
	}
	if len(seen) != len(args) {
		return fmt.Sprintf("%d distinct placeholders for %d arguments", len(seen), len(args))
	}
	for i, a := range args {
		if s, ok := a.(string); ok && (!utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0) {
			return fmt.Sprintf("argument $%d %q is not text PostgreSQL stores", i+1, s)
		}
	}
	for _, m := range timestampRE.FindAllStringSubmatch(sql, -1) {
		n, _ := strconv.Atoi(m[1])
		s, _ := args[n-1].(string)
		if tm, err := time.Parse("2006-01-02 15:04:05", s); err != nil || !mail.InYearRange(tm) {
			return fmt.Sprintf("argument $%d %q is not a timestamp of years 0001-9999", n, s)
		}
	}
	return ""
}
