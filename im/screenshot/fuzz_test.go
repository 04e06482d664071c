package screenshot

import (
	"image"
	"testing"
)

// FuzzRender feeds arbitrary bytes to the parser and renderer: no input
// may panic, every image has the size of its grid, and the second cell of
// a wide character always follows a wide first cell.
func FuzzRender(f *testing.F) {
	f.Add([]byte("\x1b[1;31mred\x1b[0m ─│╭╮ 中文 🎉\n\x1b[38;2;1;2;3;48;5;200mx\x1b[7m y"))
	f.Add([]byte("\x1b[38:2::255:0:0m\x1b]8;;u\x07link\x1b]8;;\x07\x1b[4:3m~\x1b[m"))
	f.Add([]byte("\xff\xfe\x1b[\x1b[38;5\x1b"))
	f.Add([]byte("ab\r中\rx\t\ty\n\n\n\nz"))
	f.Add(loadFixture(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		cols, rows := 11, 4
		if len(data) > 0 {
			cols = 1 + int(data[0])%23
		}
		o := Options{Cols: cols, Rows: rows, FontSize: 8}
		img, err := Render(data, o)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		w, h := CellSize(o)
		if img.Bounds() != image.Rect(0, 0, cols*w, rows*h) {
			t.Fatalf("bounds %v for %d×%d cells of %d×%d", img.Bounds(), cols, rows, w, h)
		}
		g := parse(data, cols, rows)
		for i, c := range g.cells {
			if !c.cont {
				continue
			}
			if i%cols == 0 || g.cells[i-1].cont || runeWidth(g.cells[i-1].r) != 2 {
				t.Fatalf("cell %d continues a wide character, but cell %d is %q", i, i-1, g.cells[max(i-1, 0)].r)
			}
		}
	})
}
