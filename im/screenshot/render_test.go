package screenshot

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

var writePNG = flag.String("screenshot.png", "", "TestPNGDecodesToTheRenderedImage writes the fixture's PNG to this file, to look at")

// noFallback turns the fallback fonts off, so that what a test sees does
// not depend on the fonts installed.
var noFallback = []string{}

func mustRender(t *testing.T, capture string, o Options) *image.RGBA {
	t.Helper()
	img, err := Render([]byte(capture), o)
	if err != nil {
		t.Fatalf("Render(%q): %v", capture, err)
	}
	return img
}

// cellRect is the pixel rectangle of span cells starting at (col, row).
func cellRect(o Options, col, row, span int) image.Rectangle {
	w, h := CellSize(o)
	return image.Rect(col*w, row*h, (col+span)*w, (row+1)*h)
}

// countNot counts the pixels of r that are not c.
func countNot(img *image.RGBA, r image.Rectangle, c color.RGBA) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if img.RGBAAt(x, y) != c {
				n++
			}
		}
	}
	return n
}

// sameCell reports whether r of a and r2 of b hold the same pixels.
func sameCell(a *image.RGBA, r image.Rectangle, b *image.RGBA, r2 image.Rectangle) bool {
	for y := 0; y < r.Dy(); y++ {
		for x := 0; x < r.Dx(); x++ {
			if a.RGBAAt(r.Min.X+x, r.Min.Y+y) != b.RGBAAt(r2.Min.X+x, r2.Min.Y+y) {
				return false
			}
		}
	}
	return true
}

func TestImageSizeIsCellsTimesCellSize(t *testing.T) {
	for _, o := range []Options{
		{Cols: 1, Rows: 1},
		{Cols: 80, Rows: 24},
		{Cols: 200, Rows: 50},
		{Cols: 7, Rows: 3, FontSize: 9},
		{Cols: 7, Rows: 3, FontSize: 31.5},
	} {
		w, h := CellSize(o)
		if w < 4 || h < 8 || h <= w {
			t.Fatalf("CellSize(%+v) = %d×%d: not a plausible monospace cell", o, w, h)
		}
		img := mustRender(t, "hello\n", o)
		if got, want := img.Bounds(), image.Rect(0, 0, o.Cols*w, o.Rows*h); got != want {
			t.Errorf("Render(%+v) bounds %v, want %v", o, got, want)
		}
	}
	if w1, _ := CellSize(Options{FontSize: 14}); w1 >= func() int { w, _ := CellSize(Options{FontSize: 28}); return w }() {
		t.Errorf("a larger font gives no larger cell")
	}
}

func TestRedBackgroundFillsOnlyItsCell(t *testing.T) {
	o := Options{Cols: 5, Rows: 3, FallbackFonts: noFallback}
	img := mustRender(t, "\n  \x1b[41m \x1b[0m\n", o)
	red := cellRect(o, 2, 1, 1)
	if n := countNot(img, red, Palette(1)); n != 0 {
		t.Errorf("%d pixels of the red cell are not red %v", n, Palette(1))
	}
	other := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if !image.Pt(x, y).In(red) && img.RGBAAt(x, y) != DefaultBackground() {
				other++
			}
		}
	}
	if other != 0 {
		t.Errorf("%d pixels outside the red cell are not the default background", other)
	}
}

func TestLetterHasInkAndSpaceHasNone(t *testing.T) {
	o := Options{Cols: 4, Rows: 1, FallbackFonts: noFallback}
	img := mustRender(t, "A b", o)
	for col, want := range []bool{true, false, true, false} {
		n := countNot(img, cellRect(o, col, 0, 1), DefaultBackground())
		if (n > 0) != want {
			t.Errorf("cell %d: %d pixels differ from the background, want ink=%v", col, n, want)
		}
	}
	// The ink is the foreground colour where the glyph is solid.
	if countNot(img, cellRect(o, 0, 0, 1), DefaultForeground()) == cellRect(o, 0, 0, 1).Dx()*cellRect(o, 0, 0, 1).Dy() {
		t.Errorf("no pixel of 'A' has the default foreground colour")
	}
}

func TestReverseVideoSwapsColours(t *testing.T) {
	o := Options{Cols: 3, Rows: 1, FallbackFonts: noFallback}
	plain := mustRender(t, "A", o)
	rev := mustRender(t, "\x1b[7mA\x1b[27m", o)
	r := cellRect(o, 0, 0, 1)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			switch plain.RGBAAt(x, y) {
			case DefaultBackground():
				if got := rev.RGBAAt(x, y); got != DefaultForeground() {
					t.Fatalf("(%d,%d): background of 'A' is %v reversed, want the foreground %v", x, y, got, DefaultForeground())
				}
			case DefaultForeground():
				if got := rev.RGBAAt(x, y); got != DefaultBackground() {
					t.Fatalf("(%d,%d): ink of 'A' is %v reversed, want the background %v", x, y, got, DefaultBackground())
				}
			}
		}
	}
	// With colours: a reversed space shows the foreground colour.
	img := mustRender(t, "\x1b[31;42;7m \x1b[0m ", o)
	if n := countNot(img, cellRect(o, 0, 0, 1), Palette(1)); n != 0 {
		t.Errorf("reversed red-on-green space: %d pixels are not red", n)
	}
	if n := countNot(img, cellRect(o, 1, 0, 1), DefaultBackground()); n != 0 {
		t.Errorf("the reset after the reversed cell did not hold: %d pixels", n)
	}
}

// fullRows lists the pixel rows of r that are entirely c; fullCols the
// columns.
func fullRows(img *image.RGBA, r image.Rectangle, c color.RGBA) []int {
	var rows []int
	for y := r.Min.Y; y < r.Max.Y; y++ {
		if countNot(img, image.Rect(r.Min.X, y, r.Max.X, y+1), c) == 0 {
			rows = append(rows, y-r.Min.Y)
		}
	}
	return rows
}

func fullCols(img *image.RGBA, r image.Rectangle, c color.RGBA) []int {
	var cols []int
	for x := r.Min.X; x < r.Max.X; x++ {
		if countNot(img, image.Rect(x, r.Min.Y, x+1, r.Max.Y), c) == 0 {
			cols = append(cols, x-r.Min.X)
		}
	}
	return cols
}

// anyInkRow reports whether some pixel row of r has no background pixel.
func anyInkRow(img *image.RGBA, r image.Rectangle) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		if countNot(img, image.Rect(r.Min.X, y, r.Max.X, y+1), DefaultBackground()) == r.Dx() {
			return true
		}
	}
	return false
}

// transpose swaps x and y, so that a column check is a row check.
func transpose(img *image.RGBA) *image.RGBA {
	b := img.Bounds()
	t := image.NewRGBA(image.Rect(b.Min.Y, b.Min.X, b.Max.Y, b.Max.X))
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			t.SetRGBA(y, x, img.RGBAAt(x, y))
		}
	}
	return t
}

func near(v, mid, tol int) bool { return v >= mid-tol && v <= mid+tol }

func TestBoxDrawingLinesCrossTheCell(t *testing.T) {
	o := Options{Cols: 6, Rows: 3, FallbackFonts: noFallback}
	w, h := CellSize(o)
	img := mustRender(t, "──\n│\n│", o)

	// ─: a horizontal line of foreground across the middle of both cells,
	// unbroken from one to the next.
	rows := fullRows(img, cellRect(o, 0, 0, 2), DefaultForeground())
	if len(rows) == 0 {
		t.Fatalf("──: no pixel row is foreground across both cells")
	}
	for _, y := range rows {
		if !near(y, h/2, 2) {
			t.Errorf("─: line on row %d, want near the middle %d", y, h/2)
		}
	}
	if top := countNot(img, image.Rect(0, 0, 2*w, 1), DefaultBackground()); top != 0 {
		t.Errorf("─: %d pixels on the cell's top row", top)
	}

	// │: a vertical line down the middle, joining the cell below.
	cols := fullCols(img, image.Rect(0, h, w, 3*h), DefaultForeground())
	if len(cols) == 0 {
		t.Fatalf("│ over │: no pixel column is foreground down both cells")
	}
	for _, x := range cols {
		if !near(x, w/2, 2) {
			t.Errorf("│: line in column %d, want near the middle %d", x, w/2)
		}
	}
	if left := countNot(img, image.Rect(0, h, 1, 3*h), DefaultBackground()); left != 0 {
		t.Errorf("│: %d pixels in the cell's left column", left)
	}
}

func TestBoxCornersAndBlocksJoinTheirNeighbours(t *testing.T) {
	o := Options{Cols: 3, Rows: 3, FallbackFonts: noFallback}
	w, h := CellSize(o)
	// A rounded box: the top line runs from ╭ through ─ into ╮, and the
	// sides run from ╭ down through │ into ╰.
	// (The arc is antialiased: "unbroken" means no background pixel.)
	img := mustRender(t, "╭─╮\n│ │\n╰─╯", o)
	if !anyInkRow(img, image.Rect(w*3/4, 0, 2*w+w/4, h)) {
		t.Errorf("╭─╮: the top line is broken between the corners and ─")
	}
	if !anyInkRow(transpose(img), image.Rect(h*3/4, 0, 2*h+h/4, w)) {
		t.Errorf("╭/│/╰: the left side is broken between the corners and │")
	}
	// █ fills its cell; ▌ and ▐ together fill theirs, without overlap.
	img = mustRender(t, "█▌▐", o)
	if n := countNot(img, cellRect(o, 0, 0, 1), DefaultForeground()); n != 0 {
		t.Errorf("█: %d pixels are not foreground", n)
	}
	left, right := countNot(img, cellRect(o, 1, 0, 1), DefaultBackground()), countNot(img, cellRect(o, 2, 0, 1), DefaultBackground())
	if left+right != w*h {
		t.Errorf("▌ and ▐ cover %d+%d pixels, want %d together", left, right, w*h)
	}
}

func TestWideCharacterTakesTwoCells(t *testing.T) {
	o := Options{Cols: 6, Rows: 2, FallbackFonts: noFallback}
	for _, wide := range []string{"中", "🎉", "ｗ"} {
		img := mustRender(t, wide+"A\n  A", o)
		// The A after the wide character lands where the A after two
		// spaces does.
		if !sameCell(img, cellRect(o, 2, 0, 1), img, cellRect(o, 2, 1, 1)) {
			t.Errorf("%q: the next character is not two cells on", wide)
		}
		if countNot(img, cellRect(o, 3, 0, 3), DefaultBackground()) != 0 {
			t.Errorf("%q: ink after the next character", wide)
		}
		// The wide character's own drawing spans both of its cells.
		if countNot(img, cellRect(o, 0, 0, 1), DefaultBackground()) == 0 || countNot(img, cellRect(o, 1, 0, 1), DefaultBackground()) == 0 {
			t.Errorf("%q: does not draw over both of its cells", wide)
		}
	}
	// A wide character that would straddle the right edge is dropped.
	img := mustRender(t, "abcde中", o)
	if n := countNot(img, cellRect(o, 5, 0, 1), DefaultBackground()); n != 0 {
		t.Errorf("half a wide character drawn at the right edge (%d pixels)", n)
	}
}

// isPlaceholder reports whether the cells at r show exactly the
// placeholder drawn in the default colours.
func isPlaceholder(img *image.RGBA, r image.Rectangle, o Options) bool {
	n, _ := o.normalized()
	m := metricsFor(n.FontSize)
	p := placeholder(r.Dx(), r.Dy(), m.line)
	for y := 0; y < p.h; y++ {
		for x := 0; x < p.w; x++ {
			want := DefaultBackground()
			if p.pix[y*p.w+x] == 255 {
				want = DefaultForeground()
			}
			if img.RGBAAt(r.Min.X+x, r.Min.Y+y) != want {
				return false
			}
		}
	}
	return true
}

func TestGlyphInNoFontShowsPlaceholder(t *testing.T) {
	// U+E000 is private use: neither Go Mono nor any fallback has it.
	for _, fonts := range [][]string{nil, noFallback} {
		o := Options{Cols: 3, Rows: 1, FallbackFonts: fonts}
		img := mustRender(t, "\ue000", o)
		if !isPlaceholder(img, cellRect(o, 0, 0, 1), o) {
			t.Errorf("fallbacks %v: U+E000 is not drawn as the placeholder", fonts)
		}
		if isPlaceholder(img, cellRect(o, 1, 0, 1), o) {
			t.Errorf("fallbacks %v: the placeholder spills into the next cell", fonts)
		}
	}
	// Without fallback fonts, a symbol only DejaVu has is a placeholder too:
	// visible, not blank.
	o := Options{Cols: 2, Rows: 1, FallbackFonts: noFallback}
	if img := mustRender(t, "❯", o); !isPlaceholder(img, cellRect(o, 0, 0, 1), o) {
		t.Errorf("❯ without fallback fonts: not the placeholder")
	}
}

// agentSymbols are characters claude and codex draw that Go Mono lacks.
const agentSymbols = "❯⏺⎿✻✶✳✢·●○◯⚠✓✗✔✘→…⏵⏸⎯⧉▶◆★"

func TestAgentSymbolsAreDrawn(t *testing.T) {
	// The symbols drawn as shapes need no font at all.
	for _, fonts := range [][]string{noFallback, nil} {
		o := Options{Cols: 2, Rows: 1, FallbackFonts: fonts}
		for _, r := range "⏺⎿⏵⏸⎯⧉╭╮╰╯│─▐▛███▜▌▝▜▛▘" + agentSymbols {
			if fonts == nil && !dejaVuInstalled() {
				break
			}
			if fonts != nil && !strings.ContainsRune("⏺⎿⏵⏸⎯⧉╭╮╰╯│─▐▛███▜▌▝▜▛▘·●○→…", r) {
				continue // needs a fallback font
			}
			img := mustRender(t, string(r), o)
			cell := cellRect(o, 0, 0, 1)
			if countNot(img, cell, DefaultBackground()) == 0 {
				t.Errorf("fallbacks %v: %q (%U) is blank", fonts, r, r)
			}
			if isPlaceholder(img, cell, o) {
				t.Errorf("fallbacks %v: %q (%U) is the placeholder", fonts, r, r)
			}
		}
	}
	if !dejaVuInstalled() {
		t.Skip("DejaVu Sans Mono is not installed (Debian: fonts-dejavu-core): ❯ ✻ ✓ and the like are placeholders")
	}
}

func dejaVuInstalled() bool {
	for _, p := range DefaultFallbackFonts {
		if strings.Contains(p, "DejaVuSansMono") && loadFontFile(p) != nil {
			return true
		}
	}
	return false
}

func TestPNGDecodesToTheRenderedImage(t *testing.T) {
	capture := loadFixture(t)
	o := Options{Cols: 200, Rows: 50}
	want, err := Render(capture, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PNG(capture, o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("image/png cannot decode PNG's output: %v", err)
	}
	if got.Bounds() != want.Bounds() {
		t.Fatalf("decoded bounds %v, rendered %v", got.Bounds(), want.Bounds())
	}
	for y := want.Rect.Min.Y; y < want.Rect.Max.Y; y++ {
		for x := want.Rect.Min.X; x < want.Rect.Max.X; x++ {
			if c := color.RGBAModel.Convert(got.At(x, y)); c != want.RGBAAt(x, y) {
				t.Fatalf("pixel (%d,%d): decoded %v, rendered %v", x, y, c, want.RGBAAt(x, y))
			}
		}
	}
	if *writePNG != "" {
		if err := os.WriteFile(*writePNG, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFixtureShowsItsColours(t *testing.T) {
	// The fixture's diff lines have a truecolor background (92,38,48) for
	// the removal; some cell of row 22 must show it.
	o := Options{Cols: 200, Rows: 50}
	img, err := Render(loadFixture(t), o)
	if err != nil {
		t.Fatal(err)
	}
	removed := color.RGBA{92, 38, 48, 255}
	if countNot(img, cellRect(o, 10, 20, 1), removed) != 0 {
		t.Errorf("cell (10,20) of the fixture is not the removed-line background %v", removed)
	}
}

func TestBadInputIsClippedOrIgnored(t *testing.T) {
	o := Options{Cols: 3, Rows: 2, FallbackFonts: noFallback}
	for _, capture := range []string{
		"\x1b", "\x1b[", "\x1b[3", "\x1b[38;2;1", "\x1b[38;5m", "\x1b[38:2m", "\x1b]8;;http://x", "\x1bP", "\x1b(",
		"\x1b[99999999999999999999m", "\x1b[" + strings.Repeat("1;", 10000) + "m",
		"\xff\xfe\xc0", "\xe4\xb8", "a\x00b\x07c\x7f", "\u0301\u200d\ufe0f",
		strings.Repeat("x", 1000), strings.Repeat("\n", 1000), strings.Repeat("中", 10),
		"\r\r\t\t\t\tz", "ab\r中", "中\rx",
	} {
		img, err := Render([]byte(capture), o)
		if err != nil {
			t.Errorf("Render(%q): %v", capture, err)
			continue
		}
		w, h := CellSize(o)
		if img.Bounds() != image.Rect(0, 0, 3*w, 2*h) {
			t.Errorf("Render(%q): bounds %v", capture, img.Bounds())
		}
	}

	// A long line is clipped, not wrapped; lines past Rows are dropped.
	img := mustRender(t, "abcdef\nghi\njkl", o)
	ref := mustRender(t, "abc\nghi", o)
	if !sameCell(img, img.Rect, ref, ref.Rect) {
		t.Errorf("abcdef/ghi/jkl on 3×2 differs from abc/ghi")
	}
	// Invalid UTF-8 shows as U+FFFD, one cell per bad byte.
	img = mustRender(t, "\xffA", o)
	ref = mustRender(t, "\ufffdA", o)
	if !sameCell(img, img.Rect, ref, ref.Rect) {
		t.Errorf("\\xff is not drawn as U+FFFD")
	}
	// A cut-off escape sequence draws nothing.
	if img := mustRender(t, "\x1b[38;2;255", o); countNot(img, img.Rect, DefaultBackground()) != 0 {
		t.Errorf("a truncated escape sequence left ink")
	}
	// An OSC 8 hyperlink around text is skipped; the text shows.
	img = mustRender(t, "\x1b]8;;http://x\x1b\\ab\x1b]8;;\x1b\\c", o)
	ref = mustRender(t, "abc", o)
	if !sameCell(img, img.Rect, ref, ref.Rect) {
		t.Errorf("a hyperlinked abc differs from abc")
	}
}

func TestOptionsOutOfRange(t *testing.T) {
	for _, o := range []Options{
		{Cols: 0, Rows: 1}, {Cols: 1, Rows: 0}, {Cols: -5, Rows: 5}, {Cols: MaxCols + 1, Rows: 1},
		{Cols: 1, Rows: MaxRows + 1}, {Cols: 1, Rows: 1, FontSize: 2}, {Cols: 1, Rows: 1, FontSize: 500},
		{Cols: 1, Rows: 1, FontSize: math.NaN()}, {Cols: MaxCols, Rows: MaxRows},
	} {
		if _, err := Render(nil, o); !errors.Is(err, ErrOptions) {
			t.Errorf("Render(%+v): %v, want ErrOptions", o, err)
		}
		if _, err := PNG(nil, o); !errors.Is(err, ErrOptions) {
			t.Errorf("PNG(%+v): %v, want ErrOptions", o, err)
		}
	}
	if w, h := CellSize(Options{FontSize: 1000}); w != 0 || h != 0 {
		t.Errorf("CellSize of an invalid size = %d×%d, want 0×0", w, h)
	}
}

func TestSGR(t *testing.T) {
	for _, tc := range []struct {
		seq  string
		want pen
	}{
		{"31", pen{fg: indexed(1)}},
		{"1;3;4;9", pen{a: attrBold | attrItalic | attrUnderline | attrStrike}},
		{"1;2;22", pen{}},
		{"4:3", pen{a: attrUnderline}},
		{"4;4:0", pen{}},
		{"7;27", pen{}},
		{"97;104", pen{fg: indexed(15), bg: indexed(12)}},
		{"38;5;196", pen{fg: indexed(196)}},
		{"48;5;21;1", pen{bg: indexed(21), a: attrBold}},
		{"38;2;10;20;30", pen{fg: rgbColor(10, 20, 30)}},
		{"38:2::10:20:30;48:2:1:2:3", pen{fg: rgbColor(10, 20, 30), bg: rgbColor(1, 2, 3)}},
		{"38:5:9", pen{fg: indexed(9)}},
		{"58;5;1;31", pen{fg: indexed(1)}}, // the underline colour is read and ignored
		{"38;2;300;;5", pen{fg: rgbColor(255, 0, 5)}},
		{"38;2;1;2-3m", pen{}}, // an intermediate byte: not SGR
		{"31;39;41;49", pen{}},
		{"31;0;32", pen{fg: indexed(2)}},
		{"", pen{}},
		{"38;5", pen{}},
		{"2;8", pen{a: attrDim | attrHidden}},
	} {
		g := parse([]byte("\x1b[31;41;1;3;4;7m\x1b[0m\x1b["+tc.seq+"mx"), 1, 1)
		if got := g.cells[0].pen; got != tc.want {
			t.Errorf("SGR %q: pen %+v, want %+v", tc.seq, got, tc.want)
		}
	}
}

func TestAttributesCarryAcrossLines(t *testing.T) {
	// tmux does not reset at the end of a line: a colour set on one line
	// holds on the next until changed.
	g := parse([]byte("\x1b[31mA\nB\x1b[39mC"), 3, 2)
	if got := g.cells[3].pen.fg; got != indexed(1) {
		t.Errorf("B: fg %x, want red", got)
	}
	if got := g.cells[4].pen.fg; got != colorDefault {
		t.Errorf("C: fg %x, want the default", got)
	}
}

func TestPalette(t *testing.T) {
	for i, want := range map[uint8]color.RGBA{
		16: {0, 0, 0, 255}, 21: {0, 0, 255, 255}, 196: {255, 0, 0, 255}, 231: {255, 255, 255, 255},
		232: {8, 8, 8, 255}, 255: {238, 238, 238, 255}, 244: {128, 128, 128, 255},
	} {
		if got := Palette(i); got != want {
			t.Errorf("Palette(%d) = %v, want %v", i, got, want)
		}
	}
}

func TestConcurrentRendersShareTheCache(t *testing.T) {
	capture := loadFixture(t)
	want, err := Render(capture, Options{Cols: 200, Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			// Different sizes make glyphs miss the cache concurrently.
			o := Options{Cols: 200, Rows: 50, FontSize: float64(10 + i%3)}
			if i%2 == 0 {
				o.FontSize = 0
			}
			got, err := Render(capture, o)
			if err != nil {
				errs <- err
				return
			}
			if o.FontSize == 0 && !bytes.Equal(got.Pix, want.Pix) {
				errs <- fmt.Errorf("render %d differs from the first", i)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPackageIsPure(t *testing.T) {
	// The renderer takes text and returns pixels: it runs no programs
	// (tmux is the caller's business) and knows nothing of thatch.
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "os/exec" || dep == "net" || (strings.HasPrefix(dep, "github.com/thatch-run/thatch") && dep != "github.com/thatch-run/thatch/im/screenshot") {
			t.Errorf("im/screenshot depends on %s", dep)
		}
	}
}
