package mail

import (
	"strconv"
	"unicode/utf8"
)

// Stored text is bounded and clean on every path (API forms, JSON, CSV
// import): see docs/limits.md.
const (
	// MaxLine is the longest single-line text, in characters: names,
	// address parts, custom text values, email_owner.
	MaxLine = 255
	// MaxText is the longest multi-line text, in characters: an
	// unsubscribe group's description.
	MaxText = 1000
)

// LineProblem says what is wrong with v as a single-line text field named
// field, "" when nothing is: a single line may not be longer than MaxLine
// characters, and may not hold a control character (C0, DEL, C1: CR, LF,
// NUL, TAB…) or a Unicode line or paragraph separator (U+2028, U+2029),
// since it may reach a mail header or a page.
func LineProblem(field, v string) string {
	return textProblem(field, v, MaxLine, false)
}

// TextProblem is LineProblem for a multi-line text of at most max
// characters: line breaks and tabs are allowed, other control characters
// are not.
func TextProblem(field, v string, max int) string {
	return textProblem(field, v, max, true)
}

func textProblem(field, v string, max int, multiline bool) string {
	if !utf8.ValidString(v) {
		return "The " + Label(field) + " must be UTF-8 text."
	}
	if hasControl(v, multiline) {
		if multiline {
			return "The " + Label(field) + " may not contain control characters."
		}
		return "The " + Label(field) + " may not contain line breaks or control characters."
	}
	if utf8.RuneCountInString(v) > max {
		return "The " + Label(field) + " may not be greater than " + strconv.Itoa(max) + " characters."
	}
	return ""
}

// hasControl reports whether v holds a control character or a line or
// paragraph separator; multiline allows CR, LF and TAB.
func hasControl(v string, multiline bool) bool {
	for i := 0; i < len(v); i++ {
		b := v[i]
		if b < 0x20 || b == 0x7f {
			if multiline && (b == '\n' || b == '\r' || b == '\t') {
				continue
			}
			return true
		}
		if b >= 0x80 {
			return hasControlRunes(v[i:], multiline)
		}
	}
	return false
}

func hasControlRunes(v string, multiline bool) bool {
	for _, r := range v {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 {
			if multiline && (r == '\n' || r == '\r' || r == '\t') {
				continue
			}
			return true
		}
	}
	return false
}

// checkLine adds LineProblem's message to p; it reports whether v is fine.
func (p *Problems) checkLine(field, v string) bool {
	if msg := LineProblem(field, v); msg != "" {
		p.Add(field, msg)
		return false
	}
	return true
}
