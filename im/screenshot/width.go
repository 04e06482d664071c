package screenshot

import (
	"unicode"

	"golang.org/x/text/width"
)

// runeWidth is the number of cells r takes: 2 for East Asian wide and
// fullwidth characters (CJK, most emoji), 0 for combining marks and format
// characters (which Render does not draw), else 1. Ambiguous-width
// characters take one cell, as tmux gives them by default.
func runeWidth(r rune) int {
	if r < 0x300 {
		return 1
	}
	if unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf) {
		return 0
	}
	if r >= 0x1160 && r <= 0x11FF { // Hangul jungseong and jongseong join the syllable before
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
