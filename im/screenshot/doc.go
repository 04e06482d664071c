// Package screenshot renders a tmux pane to a PNG, so that a chat can be
// sent a picture of what the agent's pane shows.
//
// It is pure: it takes the pane's text and returns pixels. It runs no
// programs (the caller runs tmux), opens no network, and reads only font
// files (see Fonts). It imports nothing else of thatch.
//
//	out, _ := exec.Command("tmux", "capture-pane", "-e", "-p", "-t", pane).Output()
//	png, err := screenshot.PNG(out, screenshot.Options{Cols: width, Rows: height})
//
// # Input
//
// The capture is the output of `tmux capture-pane -e -p`: one line per
// pane row, ended by '\n', with SGR escape sequences (ESC [ ... m) for the
// attributes. tmux does not reset attributes at the end of a line, and
// neither does the parser: a colour holds until a later sequence changes
// it. Understood: the 16 colours (30-37, 40-47, 90-97, 100-107), 256
// colours (38;5;n) and truecolor (38;2;r;g;b), in the semicolon and the
// colon forms (38:2::r:g:b), default colours (39, 49), bold, dim, italic,
// underline (4 and 4:n, 21 drawn single), reverse, hidden, strike-through,
// their resets (22-29) and 0. The underline colour (58) is read and
// ignored, as are blink and overline.
//
// Each character takes one cell of a monospace grid of Options.Cols by
// Options.Rows cells; East Asian wide and fullwidth characters (CJK, most
// emoji) take two (golang.org/x/text/width). The image is Cols×w by
// Rows×h pixels for the cell size w×h that CellSize reports.
//
// # What is clipped or ignored
//
// Render never fails on its input and never panics. It clips and ignores:
//   - characters past Cols on a line (the line is not wrapped), and a wide
//     character that would straddle the right edge;
//   - lines past Rows (the first Rows lines are drawn);
//   - escape sequences other than SGR (other CSI sequences, OSC such as
//     hyperlinks, DCS, two-byte escapes) and SGR parameters it does not
//     know; a sequence cut off by the end of the input, or broken by a
//     byte that cannot be part of it, is dropped;
//   - control characters, except '\n' (next row), '\r' (back to the first
//     column) and '\t' (to the next multiple of 8);
//   - combining marks and format characters (zero width), which are not
//     drawn.
//
// Invalid UTF-8 shows as U+FFFD, one cell per bad byte. A cell with no
// character is the default background. Options out of range (Cols, Rows
// outside 1..1000, a font size outside 6..72, an image of more than
// MaxPixels) are an error, ErrOptions.
//
// # Colours
//
// Dark: DefaultBackground (#1e1e1e) behind DefaultForeground (#d4d4d4).
// The 16 ANSI colours are those of VS Code's dark terminal theme; 16-231
// are the xterm 6×6×6 cube and 232-255 its greys (Palette). Reverse swaps
// foreground and background; dim draws the foreground half way to the
// background; bold picks the bold font and keeps the colour.
//
// # Fonts
//
// Text is drawn in Go Mono (golang.org/x/image/font/gofont), in its bold,
// italic and bold italic faces as the attributes say. Go Mono lacks most
// of the symbols coding agents draw, so:
//   - box drawing (U+2500-U+257F: light, heavy, double, dashed, rounded
//     corners, diagonals), block elements (U+2580-U+259F) and braille
//     (U+2800-U+28FF) are drawn as shapes sized to the cell, so that lines
//     and blocks join across cells;
//   - other characters Go Mono lacks come from the first fallback font that
//     has them (Options.FallbackFonts; by default DejaVu Sans Mono and
//     DejaVu Sans, Debian's fonts-dejavu-core, then Noto and WenQuanYi CJK
//     fonts when installed), scaled down if wider than their cells; bold is
//     imitated by widening the strokes;
//   - a few agent symbols that DejaVu lacks too (claude's ⏺ and ⎿, ⏵ ⏸ ⏹
//     ⎯ ⧉) are drawn as shapes when no font has them;
//   - a character no font has is drawn as a hollow rectangle, never left
//     blank.
//
// Without DejaVu installed the package still works: symbols such as ❯ ✻ ✓
// then show as rectangles.
//
// # Cost
//
// Glyph masks are cached per font size, character and style (shared by
// concurrent calls, bounded in size), so a screen costs mostly the
// blending of its cells: about 3 ms for 200×50 cells, and about 15 ms with
// the PNG encoding (BenchmarkRender200x50, BenchmarkPNG200x50).
package screenshot
