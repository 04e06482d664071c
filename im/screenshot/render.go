package screenshot

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"sync"
)

// Render draws capture, the output of `tmux capture-pane -e -p`, on a grid
// of o.Cols×o.Rows cells and returns an *image.RGBA of
// o.Cols*cellW × o.Rows*cellH pixels (see CellSize). It fails only for
// Options out of range (ErrOptions); any capture renders, clipped as the
// package documentation says. Render is safe for concurrent use.
func Render(capture []byte, o Options) (*image.RGBA, error) {
	n, err := o.normalized()
	if err != nil {
		return nil, err
	}
	fs := faceSetFor(n)
	img := image.NewRGBA(image.Rect(0, 0, n.Cols*fs.cellW, n.Rows*fs.cellH))
	fs.render(img, capture, n)
	return img, nil
}

// PNG renders capture as Render does and encodes it as an 8-bit RGB PNG,
// compressed for speed rather than size (a 200×50 screen is about 130 KB).
func PNG(capture []byte, o Options) ([]byte, error) {
	n, err := o.normalized()
	if err != nil {
		return nil, err
	}
	fs := faceSetFor(n)
	// The image does not leave PNG, so it is pooled: it is the largest
	// allocation of a screenshot (6 MB for 200×50).
	img := scratchImage(image.Rect(0, 0, n.Cols*fs.cellW, n.Rows*fs.cellH))
	defer images.Put(img)
	fs.render(img, capture, n)
	var buf bytes.Buffer
	if err := encodePNG(&buf, img); err != nil {
		return nil, fmt.Errorf("screenshot: encoding PNG: %w", err)
	}
	return buf.Bytes(), nil
}

var images sync.Pool // of *image.RGBA

// scratchImage returns a pooled image of bounds r, its pixels undefined.
func scratchImage(r image.Rectangle) *image.RGBA {
	if img, ok := images.Get().(*image.RGBA); ok && cap(img.Pix) >= 4*r.Dx()*r.Dy() {
		img.Pix = img.Pix[:4*r.Dx()*r.Dy()]
		img.Stride = 4 * r.Dx()
		img.Rect = r
		return img
	}
	return image.NewRGBA(r)
}

// render draws the grid of capture into img, which has the grid's size;
// every pixel is written.
func (fs *faceSet) render(img *image.RGBA, capture []byte, n Options) {
	g := parse(capture, n.Cols, n.Rows)
	fillRect(img, img.Rect, defaultBG)
	for row := 0; row < g.rows; row++ {
		for col := 0; col < g.cols; col++ {
			c := g.cells[row*g.cols+col]
			if c.cont {
				continue
			}
			span := 1
			if col+1 < g.cols && g.cells[row*g.cols+col+1].cont {
				span = 2
			}
			fs.drawCell(img, col*fs.cellW, row*fs.cellH, span, c)
		}
	}
}

// colors returns the foreground and background c is drawn with: reverse
// swaps them, dim takes the foreground half way to the background, hidden
// makes it the background.
func (c cell) colors() (fg, bg color.RGBA) {
	fg = c.pen.fg.resolve(defaultFG)
	bg = c.pen.bg.resolve(defaultBG)
	a := c.pen.a
	if a&attrReverse != 0 {
		fg, bg = bg, fg
	}
	if a&attrDim != 0 {
		fg = mix(fg, bg, 128)
	}
	if a&attrHidden != 0 {
		fg = bg
	}
	return fg, bg
}

// drawCell draws c over span cells with its top-left corner at (x, y).
func (fs *faceSet) drawCell(img *image.RGBA, x, y, span int, c cell) {
	fg, bg := c.colors()
	w := span * fs.cellW
	if bg != defaultBG {
		fillRect(img, image.Rect(x, y, x+w, y+fs.cellH), bg)
	}
	if fg == bg {
		return
	}
	if c.r != ' ' {
		var s style
		if c.pen.a&attrBold != 0 {
			s |= styleBold
		}
		if c.pen.a&attrItalic != 0 {
			s |= styleItalic
		}
		blend(img, x, y, fs.glyph(c.r, s), fg)
	}
	if c.pen.a&attrUnderline != 0 {
		uy := y + min(fs.baseline+max(1, (fs.cellH-fs.baseline)/3), fs.cellH-fs.line)
		fillRect(img, image.Rect(x, uy, x+w, uy+fs.line), fg)
	}
	if c.pen.a&attrStrike != 0 {
		sy := y + fs.baseline - fs.baseline*3/10
		fillRect(img, image.Rect(x, sy, x+w, sy+fs.line), fg)
	}
}

// fillRect paints r (inside img) with c.
func fillRect(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Rect)
	if r.Empty() {
		return
	}
	// Paint the first row, then copy it down.
	first := img.Pix[img.PixOffset(r.Min.X, r.Min.Y) : img.PixOffset(r.Max.X-1, r.Min.Y)+4]
	for i := 0; i < len(first); i += 4 {
		first[i], first[i+1], first[i+2], first[i+3] = c.R, c.G, c.B, c.A
	}
	for y := r.Min.Y + 1; y < r.Max.Y; y++ {
		copy(img.Pix[img.PixOffset(r.Min.X, y):], first)
	}
}

// blend paints fg into img through m placed at (x, y), over what is there.
func blend(img *image.RGBA, x, y int, m *mask, fg color.RGBA) {
	fr, fgG, fb := uint32(fg.R), uint32(fg.G), uint32(fg.B)
	for my := m.ink.Min.Y; my < m.ink.Max.Y; my++ {
		src := m.pix[my*m.w+m.ink.Min.X : my*m.w+m.ink.Max.X]
		off := img.PixOffset(x+m.ink.Min.X, y+my)
		dst := img.Pix[off : off+4*len(src)]
		for i, a8 := range src {
			if a8 == 0 {
				continue
			}
			p := dst[4*i : 4*i+3 : 4*i+3]
			if a8 == 255 {
				p[0], p[1], p[2] = fg.R, fg.G, fg.B
				continue
			}
			a := uint32(a8)
			p[0] = uint8((fr*a + uint32(p[0])*(255-a) + 127) / 255)
			p[1] = uint8((fgG*a + uint32(p[1])*(255-a) + 127) / 255)
			p[2] = uint8((fb*a + uint32(p[2])*(255-a) + 127) / 255)
		}
	}
}
