package telegram

import (
	"strings"
	"unicode/utf8"
)

// MaxMessageLen is Telegram's limit on the text of one message, counted
// after entity parsing in UTF-16 code units, as Telegram counts.
const MaxMessageLen = 4096

// utf16Len counts s in UTF-16 code units. A byte that is not valid UTF-8
// counts as one unit: it is sent as U+FFFD, which is one unit.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// Split cuts text into parts of at most limit UTF-16 code units whose
// concatenation is text, so that a long reply reaches Telegram whole and in
// order. A part ends after the last newline that fits; a line longer than
// the limit is cut after its last space or tab that fits, and only then
// inside a word (never inside a rune). A limit below 2 is taken as 2, the
// width of the widest rune. Split("") is nil.
func Split(text string, limit int) []string {
	if limit < 2 {
		limit = 2
	}
	var parts []string
	for text != "" {
		cut := cutPoint(text, limit)
		parts = append(parts, text[:cut])
		text = text[cut:]
	}
	return parts
}

// cutPoint returns the byte length of the next part of text: all of it when
// it fits, else the longest prefix that fits, shortened to end at a line
// boundary or a space when it holds one. It is always > 0 for text != "".
func cutPoint(text string, limit int) int {
	units, end := 0, 0
	for end < len(text) {
		r, size := utf8.DecodeRuneInString(text[end:])
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > limit {
			break
		}
		units += w
		end += size
	}
	if end == len(text) {
		return end
	}
	prefix := text[:end]
	if i := strings.LastIndexByte(prefix, '\n'); i >= 0 {
		return i + 1
	}
	if i := strings.LastIndexAny(prefix, " \t"); i >= 0 {
		return i + 1
	}
	return end
}

// isFence reports whether a line (without its newline) opens or closes a
// fenced code block. RenderHTML and splitMarkdown must agree on it.
func isFence(line string) bool {
	return strings.HasPrefix(strings.TrimLeft(line, " "), "```")
}

// minMarkdownLimit is the smallest limit splitMarkdown works with: room for
// a reopened fence, a closing fence and some text.
const minMarkdownLimit = 16

// splitMarkdown cuts Markdown into parts of at most limit UTF-16 code units
// that each render on their own: a part cut inside a fenced code block is
// closed with a fence and the next one reopens it with the same opening
// line, so no part leaves a block open that the next continues. Cuts fall at
// line boundaries where a line fits. Rendering only removes characters (see
// RenderHTML), so a rendered part stays within the limit too.
func splitMarkdown(md string, limit int) []string {
	if limit < minMarkdownLimit {
		limit = minMarkdownLimit
	}
	const closer = "```" // plus a newline before it when the part does not end with one
	const reserve = 4
	hdrMax := limit / 4
	pieceMax := limit - reserve - hdrMax - 1

	s := mdSplitter{limit: limit}
	atLineStart := true
	for _, line := range strings.SplitAfter(md, "\n") {
		if line == "" {
			continue
		}
		for i, piece := range Split(line, pieceMax) {
			fence := atLineStart && i == 0 && isFence(strings.TrimSuffix(piece, "\n"))
			closing := fence && s.fence != ""
			need := utf16Len(piece)
			if !closing {
				need += reserve
			}
			if s.units+need > limit && s.units > s.hdr {
				s.flush(closer, true)
			}
			s.add(piece)
			if fence {
				if closing {
					s.fence = ""
				} else {
					s.fence = fenceHeader(strings.TrimSuffix(piece, "\n"), hdrMax)
				}
			}
		}
		atLineStart = strings.HasSuffix(line, "\n")
	}
	if s.units > 0 {
		s.flush(closer, false)
	}
	return s.parts
}

// fenceHeader is the line that reopens a code block in the next part: the
// opening line itself, or a bare fence when that line is too long to repeat.
func fenceHeader(line string, max int) string {
	line = strings.TrimRight(line, " \t\r")
	if utf16Len(line) > max {
		return "```"
	}
	return line
}

// mdSplitter accumulates the current part of splitMarkdown.
type mdSplitter struct {
	limit int
	parts []string
	cur   strings.Builder
	units int
	hdr   int    // units of the reopened fence at the start of cur
	fence string // the open code block's opening line, "" outside one
}

func (s *mdSplitter) add(piece string) {
	s.cur.WriteString(piece)
	s.units += utf16Len(piece)
}

// flush ends the current part, closing an open code block, and starts the
// next one with the block reopened when more follows.
func (s *mdSplitter) flush(closer string, more bool) {
	text := s.cur.String()
	if s.fence != "" && more {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += closer
	}
	s.parts = append(s.parts, text)
	s.cur.Reset()
	s.units, s.hdr = 0, 0
	if s.fence != "" && more {
		s.add(s.fence + "\n")
		s.hdr = s.units
	}
}
