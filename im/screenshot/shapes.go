package screenshot

import "math"

// Box drawing (U+2500–U+257F), block elements (U+2580–U+259F) and braille
// (U+2800–U+28FF) are drawn as shapes sized to the cell rather than taken
// from a font: a font's box glyphs rarely reach the cell edges, so lines
// would break between cells, and Go Mono has none of them.

// Line weights of one arm of a box-drawing character.
const (
	armNone   = 0
	armLight  = 1
	armHeavy  = 2
	armDouble = 3
)

// boxArms lists, for U+2500–U+257F, the weight of the arms going left,
// right, up and down, one digit each. An empty entry is drawn by a special
// case (dashes, arcs, diagonals).
var boxArms = [128]string{
	"1100", "2200", "0011", "0022", "", "", "", "", // 2500
	"", "", "", "", "0101", "0201", "0102", "0202", // 2508
	"1001", "2001", "1002", "2002", "0110", "0210", "0120", "0220", // 2510
	"1010", "2010", "1020", "2020", "0111", "0211", "0121", "0112", // 2518
	"0122", "0221", "0212", "0222", "1011", "2011", "1021", "1012", // 2520
	"1022", "2021", "2012", "2022", "1101", "2101", "1201", "2201", // 2528
	"1102", "2102", "1202", "2202", "1110", "2110", "1210", "2210", // 2530
	"1120", "2120", "1220", "2220", "1111", "2111", "1211", "2211", // 2538
	"1121", "1112", "1122", "2121", "1221", "2112", "1212", "2221", // 2540
	"2212", "2122", "1222", "2222", "", "", "", "", // 2548
	"3300", "0033", "0301", "0103", "0303", "3001", "1003", "3003", // 2550
	"0310", "0130", "0330", "3010", "1030", "3030", "0311", "0133", // 2558
	"0333", "3011", "1033", "3033", "3301", "1103", "3303", "3310", // 2560
	"1130", "3330", "3311", "1133", "3333", "", "", "", // 2568
	"", "", "", "", "1000", "0010", "0100", "0001", // 2570
	"2000", "0020", "0200", "0002", "1200", "0012", "2100", "0021", // 2578
}

// canvas is a mask being drawn.
type canvas struct{ *mask }

// fill covers [x0,x1)×[y0,y1) fully, clipped to the canvas.
func (c canvas) fill(x0, y0, x1, y1 int) { c.fillA(x0, y0, x1, y1, 255) }

func (c canvas) fillA(x0, y0, x1, y1 int, a uint8) {
	x0, y0 = max(x0, 0), max(y0, 0)
	x1, y1 = min(x1, c.w), min(y1, c.h)
	for y := y0; y < y1; y++ {
		row := c.pix[y*c.w : (y+1)*c.w]
		for x := x0; x < x1; x++ {
			row[x] = max(row[x], a)
		}
	}
}

// plot covers pixel (x, y) to the fraction f (0..1), keeping the larger.
func (c canvas) plot(x, y int, f float64) {
	if x < 0 || y < 0 || x >= c.w || y >= c.h || f <= 0 {
		return
	}
	a := uint8(math.Round(min(f, 1) * 255))
	c.pix[y*c.w+x] = max(c.pix[y*c.w+x], a)
}

// drawShape returns the mask of r when r is drawn as a shape, else nil. w
// and h are the span's size in pixels, lw the light line thickness.
func drawShape(r rune, w, h, lw int) *mask {
	switch {
	case r >= 0x2500 && r <= 0x257F:
		c := canvas{newMask(w, h)}
		c.box(r, lw)
		return c.mask
	case r >= 0x2580 && r <= 0x259F:
		c := canvas{newMask(w, h)}
		c.block(r)
		return c.mask
	case r >= 0x2800 && r <= 0x28FF:
		c := canvas{newMask(w, h)}
		c.braille(r)
		return c.mask
	}
	return nil
}

// span is the pixel range [lo, hi) across a line of weight wt centred on
// mid. A double line spans both of its strokes and the gap between.
func span(mid, wt, lw int) (lo, hi int) {
	switch wt {
	case armLight:
		lo = mid - lw/2
		return lo, lo + lw
	case armHeavy:
		lo = mid - lw
		return lo, lo + 2*lw
	case armDouble:
		g := 2 * lw
		return mid - lw/2 - g, mid - lw/2 + g + lw
	}
	return mid, mid
}

func (c canvas) box(r rune, lw int) {
	i := r - 0x2500
	switch {
	case r >= 0x2504 && r <= 0x250B: // dashed lines, light/heavy, triple then quadruple
		wt := armLight + int(i%2)
		n := 3
		if i >= 8 {
			n = 4
		}
		c.dashes((i/2)%2 == 0, wt, n, lw)
		return
	case r >= 0x254C && r <= 0x254F: // double dashes
		c.dashes(i-0x4C < 2, armLight+int(i%2), 2, lw)
		return
	case r >= 0x256D && r <= 0x2570: // rounded corners ╭╮╯╰
		sx := []int{1, -1, -1, 1}[r-0x256D]
		sy := []int{1, 1, -1, -1}[r-0x256D]
		c.arc(sx, sy, lw)
		return
	case r >= 0x2571 && r <= 0x2573: // diagonals ╱╲╳
		if r != 0x2572 {
			c.diagonal(true, lw)
		}
		if r != 0x2571 {
			c.diagonal(false, lw)
		}
		return
	}
	a := boxArms[i]
	if len(a) != 4 {
		return
	}
	c.arms(int(a[0]-'0'), int(a[1]-'0'), int(a[2]-'0'), int(a[3]-'0'), lw)
}

// arms draws a box-drawing character from the weights of its four arms.
// Each arm runs from its cell edge to the centre and on across the
// perpendicular lines, so that joins are filled. A double arm is two
// strokes; each stroke stops at the perpendicular stroke it meets on its
// side, which gives the inner and outer corners of ╔, ╦ and ╬.
func (c canvas) arms(l, r, u, d, lw int) {
	g := armGeom{l: l, r: r, u: u, d: d, lw: lw, mx: c.w / 2, my: c.h / 2}
	// The x ranges of the vertical arms and the y ranges of the
	// horizontal ones.
	g.uLo, g.uHi = span(g.mx, u, lw)
	g.dLo, g.dHi = span(g.mx, d, lw)
	g.lLo, g.lHi = span(g.my, l, lw)
	g.rLo, g.rHi = span(g.my, r, lw)
	g.vLo, g.vHi, g.hasV = union(u, g.uLo, g.uHi, d, g.dLo, g.dHi)
	g.hLo, g.hHi, g.hasH = union(l, g.lLo, g.lHi, r, g.rLo, g.rHi)
	// A single or heavy arm that meets a double line running straight
	// through (╟, ╤) stops at its near stroke; at a corner (╒, ╓) it runs
	// on to the far stroke.
	g.vThrough = u == armDouble && d == armDouble
	g.hThrough = l == armDouble && r == armDouble
	c.horizontalArms(g)
	c.verticalArms(g)
}

// armGeom is where a box-drawing cell's arms go: their weights, the
// line width, the cell's middle, and the spans arms computes.
type armGeom struct {
	l, r, u, d, lw, mx, my         int
	uLo, uHi, dLo, dHi             int
	lLo, lHi, rLo, rHi             int
	vLo, vHi, hLo, hHi             int
	hasV, hasH, vThrough, hThrough bool
}

// horizontalArms draws the left and right arms.
func (c canvas) horizontalArms(g armGeom) {
	l, r, u, d, lw, mx := g.l, g.r, g.u, g.d, g.lw, g.mx
	for _, side := range []struct {
		wt       int
		lo, hi   int
		leftward bool
	}{{l, g.lLo, g.lHi, true}, {r, g.rLo, g.rHi, false}} {
		switch side.wt {
		case armLight, armHeavy:
			if side.leftward {
				end := mx
				if g.hasV {
					end = g.vHi
					if g.vThrough && r == armNone {
						end = g.vLo + lw
					}
				}
				c.fill(0, side.lo, end, side.hi)
			} else {
				start := mx
				if g.hasV {
					start = g.vLo
					if g.vThrough && l == armNone {
						start = g.vHi - lw
					}
				}
				c.fill(start, side.lo, c.w, side.hi)
			}
		case armDouble:
			top, bottom := side.lo, side.hi-lw
			if side.leftward {
				c.fill(0, top, doubleEnd(u, g.uLo, d, g.dHi, mx), top+lw)
				c.fill(0, bottom, doubleEnd(d, g.dLo, u, g.uHi, mx), bottom+lw)
			} else {
				c.fill(doubleEnd(u, g.uHi, d, g.dLo, mx), top, c.w, top+lw)
				c.fill(doubleEnd(d, g.dHi, u, g.uLo, mx), bottom, c.w, bottom+lw)
			}
		}
	}
}

// verticalArms draws the up and down arms, as horizontalArms with x and y
// exchanged.
func (c canvas) verticalArms(g armGeom) {
	l, r, u, d, lw, my := g.l, g.r, g.u, g.d, g.lw, g.my
	for _, side := range []struct {
		wt     int
		lo, hi int
		upward bool
	}{{u, g.uLo, g.uHi, true}, {d, g.dLo, g.dHi, false}} {
		switch side.wt {
		case armLight, armHeavy:
			if side.upward {
				end := my
				if g.hasH {
					end = g.hHi
					if g.hThrough && d == armNone {
						end = g.hLo + lw
					}
				}
				c.fill(side.lo, 0, side.hi, end)
			} else {
				start := my
				if g.hasH {
					start = g.hLo
					if g.hThrough && u == armNone {
						start = g.hHi - lw
					}
				}
				c.fill(side.lo, start, side.hi, c.h)
			}
		case armDouble:
			left, right := side.lo, side.hi-lw
			if side.upward {
				c.fill(left, 0, left+lw, doubleEnd(l, g.lLo, r, g.rHi, my))
				c.fill(right, 0, right+lw, doubleEnd(r, g.rLo, l, g.lHi, my))
			} else {
				c.fill(left, doubleEnd(l, g.lHi, r, g.rLo, my), left+lw, c.h)
				c.fill(right, doubleEnd(r, g.rHi, l, g.lLo, my), right+lw, c.h)
			}
		}
	}
}

// doubleEnd is where one stroke of a double arm stops: at the
// perpendicular arm on its own side (near), else across the one on the
// other side (far), else at the centre.
func doubleEnd(nearWt, near, farWt, far, mid int) int {
	switch {
	case nearWt != armNone:
		return near
	case farWt != armNone:
		return far
	}
	return mid
}

// union is the range covered by whichever of two arms exist.
func union(aWt, aLo, aHi, bWt, bLo, bHi int) (lo, hi int, ok bool) {
	switch {
	case aWt != armNone && bWt != armNone:
		return min(aLo, bLo), max(aHi, bHi), true
	case aWt != armNone:
		return aLo, aHi, true
	case bWt != armNone:
		return bLo, bHi, true
	}
	return 0, 0, false
}

// dashes draws a dashed line of n dashes across the cell.
func (c canvas) dashes(horizontal bool, wt, n, lw int) {
	length, mid := c.w, c.h/2
	if !horizontal {
		length, mid = c.h, c.w/2
	}
	lo, hi := span(mid, wt, lw)
	for k := 0; k < n; k++ {
		s, e := k*length/n, (k+1)*length/n
		gap := max(1, (e-s)/3)
		s += gap / 2
		e -= gap - gap/2
		if horizontal {
			c.fill(s, lo, e, hi)
		} else {
			c.fill(lo, s, hi, e)
		}
	}
}

// arc draws a rounded corner: a light line that leaves the cell towards sx
// (1 right, -1 left) and towards sy (1 down, -1 up), turning through a
// quarter circle. The straight parts line up with ─ and │.
func (c canvas) arc(sx, sy, lw int) {
	xLo, _ := span(c.w/2, armLight, lw)
	yLo, _ := span(c.h/2, armLight, lw)
	half := float64(lw) / 2
	cx, cy := float64(xLo)+half, float64(yLo)+half // centre of the stroke
	rx := float64(c.w) - cx
	if sx < 0 {
		rx = cx
	}
	ry := float64(c.h) - cy
	if sy < 0 {
		ry = cy
	}
	rad := min(rx, ry)
	ox, oy := cx+float64(sx)*rad, cy+float64(sy)*rad // the circle's centre
	// Straight parts from where the arc ends to the cell edges.
	if sx > 0 {
		c.fill(int(math.Ceil(ox)), yLo, c.w, yLo+lw)
	} else {
		c.fill(0, yLo, int(math.Floor(ox)), yLo+lw)
	}
	if sy > 0 {
		c.fill(xLo, int(math.Ceil(oy)), xLo+lw, c.h)
	} else {
		c.fill(xLo, 0, xLo+lw, int(math.Floor(oy)))
	}
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			px, py := float64(x)+0.5, float64(y)+0.5
			// Only the quarter facing the corner.
			if (px-ox)*float64(sx) > 0.5 || (py-oy)*float64(sy) > 0.5 {
				continue
			}
			d := math.Abs(math.Hypot(px-ox, py-oy) - rad)
			c.plot(x, y, half+0.5-d)
		}
	}
}

// diagonal draws a line from corner to corner: rising (╱) or falling (╲).
func (c canvas) diagonal(rising bool, lw int) {
	w, h := float64(c.w), float64(c.h)
	length := math.Hypot(w, h)
	half := float64(lw) / 2
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			px, py := float64(x)+0.5, float64(y)+0.5
			if rising {
				py = h - py
			}
			// Distance from (px, py) to the line through (0,0) and (w,h).
			d := math.Abs(px*h-py*w) / length
			c.plot(x, y, half+0.5-d)
		}
	}
}

// block draws U+2580–U+259F. Halves and quadrants split the cell at the
// same lines, so ▀ over ▄ and ▌ beside ▐ tile without gap or overlap.
func (c canvas) block(r rune) {
	w, h := c.w, c.h
	left := func(k int) int { return (k*w + 4) / 8 }  // right edge of the left k/8
	lower := func(k int) int { return h - (k*h+4)/8 } // top edge of the lower k/8
	xs, ys := left(4), lower(4)
	quad := func(ul, ur, ll, lr bool) {
		if ul {
			c.fill(0, 0, xs, ys)
		}
		if ur {
			c.fill(xs, 0, w, ys)
		}
		if ll {
			c.fill(0, ys, xs, h)
		}
		if lr {
			c.fill(xs, ys, w, h)
		}
	}
	switch {
	case r == 0x2580: // ▀
		c.fill(0, 0, w, ys)
	case r >= 0x2581 && r <= 0x2588: // ▁..█ lower eighths
		c.fill(0, lower(int(r-0x2580)), w, h)
	case r >= 0x2589 && r <= 0x258F: // ▉..▏ left eighths, 7/8 down to 1/8
		c.fill(0, 0, left(int(0x2590-r)), h)
	case r == 0x2590: // ▐
		c.fill(xs, 0, w, h)
	case r >= 0x2591 && r <= 0x2593: // ░▒▓ shades as flat coverage
		c.fillA(0, 0, w, h, uint8(64*(r-0x2590)))
	case r == 0x2594: // ▔
		c.fill(0, 0, w, (h+4)/8)
	case r == 0x2595: // ▕
		c.fill(w-(w+4)/8, 0, w, h)
	default: // quadrants ▖..▟
		q := [...][4]bool{
			{false, false, true, false}, // ▖
			{false, false, false, true}, // ▗
			{true, false, false, false}, // ▘
			{true, false, true, true},   // ▙
			{true, false, false, true},  // ▚
			{true, true, true, false},   // ▛
			{true, true, false, true},   // ▜
			{false, true, false, false}, // ▝
			{false, true, true, false},  // ▞
			{false, true, true, true},   // ▟
		}[r-0x2596]
		quad(q[0], q[1], q[2], q[3])
	}
}

// braille draws the dots of U+2800–U+28FF: two columns of four, bits 0-2
// and 6 down the left column, 3-5 and 7 down the right.
func (c canvas) braille(r rune) {
	bits := int(r - 0x2800)
	dots := [8][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}, {0, 3}, {1, 3}}
	rad := max(0.8, min(float64(c.w)/8, float64(c.h)/16)+0.3)
	for b, d := range dots {
		if bits&(1<<b) == 0 {
			continue
		}
		ox := float64(c.w) * float64(2*d[0]+1) / 4
		oy := float64(c.h) * float64(2*d[1]+1) / 8
		for y := int(oy - rad - 1); y <= int(oy+rad+1); y++ {
			for x := int(ox - rad - 1); x <= int(ox+rad+1); x++ {
				dist := math.Hypot(float64(x)+0.5-ox, float64(y)+0.5-oy)
				c.plot(x, y, rad+0.5-dist)
			}
		}
	}
}

// placeholder is drawn for a character no font has: a hollow rectangle
// inside the span, so that the gap is visible rather than silently blank.
func placeholder(w, h, lw int) *mask {
	c := canvas{newMask(w, h)}
	c.frame(1, h/6, w-1, h-h/6, lw)
	return c.mask
}

// drawSymbol returns a drawn stand-in for the symbols coding agents print
// that neither Go Mono nor DejaVu has (claude's ⏺ and ⎿ above all), else
// nil. It is tried after the fonts, so an installed font that has the
// symbol wins.
func drawSymbol(r rune, w, h, lw int) *mask {
	c := canvas{newMask(w, h)}
	fw, fh := float64(w), float64(h)
	cx, cy := fw/2, fh/2
	switch r {
	case 0x23FA: // ⏺ record: a filled circle
		rad := fw * 0.4
		c.coverFunc(func(x, y float64) bool { return math.Hypot(x-cx, y-cy) <= rad })
	case 0x23F9: // ⏹ stop: a filled square
		s := fw * 0.34
		c.coverFunc(func(x, y float64) bool { return math.Abs(x-cx) <= s && math.Abs(y-cy) <= s })
	case 0x23F5, 0x23F4: // ⏵ ⏴ small triangles pointing right, left
		s := fw * 0.36
		right := r == 0x23F5
		c.coverFunc(func(x, y float64) bool {
			t := (x - (cx - s)) / (2 * s) // 0 at the flat side, 1 at the tip
			if !right {
				t = ((cx + s) - x) / (2 * s)
			}
			return t >= 0 && t <= 1 && math.Abs(y-cy) <= s*(1-t)
		})
	case 0x23F8: // ⏸ pause: two bars
		s := fw * 0.34
		bw := max(1, int(math.Round(fw*0.22)))
		c.fill(int(cx-s), int(cy-s), int(cx-s)+bw, int(cy+s))
		c.fill(int(math.Ceil(cx+s))-bw, int(cy-s), int(math.Ceil(cx+s)), int(cy+s))
	case 0x23BF: // ⎿ a corner: down from the top, then right to the edge
		xLo, _ := span(w/2, armLight, lw)
		yc := int(fh * 0.62)
		c.fill(xLo, 0, xLo+lw, yc+lw)
		c.fill(xLo, yc, w, yc+lw)
	case 0x23AF: // ⎯ a horizontal line through the middle, edge to edge
		yLo, _ := span(h/2, armLight, lw)
		c.fill(0, yLo, w, yLo+lw)
	case 0x29C9: // ⧉ two joined squares
		s := int(math.Round(fw * 0.55))
		x0, y0 := int(fw*0.1), int(cy)-s*2/3
		c.frame(x0, y0, x0+s, y0+s, lw)
		x1, y1 := x0+s/2, y0+s/2
		c.frame(x1, y1, min(x1+s, w), y1+s, lw)
	default:
		return nil
	}
	return c.mask
}

// frame draws the outline of [x0,x1)×[y0,y1), lw thick.
func (c canvas) frame(x0, y0, x1, y1, lw int) {
	c.fill(x0, y0, x1, y0+lw)
	c.fill(x0, y1-lw, x1, y1)
	c.fill(x0, y0, x0+lw, y1)
	c.fill(x1-lw, y0, x1, y1)
}

// coverFunc covers each pixel by the share of 4×4 sample points for which
// inside holds: an antialiased filled shape.
func (c canvas) coverFunc(inside func(x, y float64) bool) {
	for y := 0; y < c.h; y++ {
		for x := 0; x < c.w; x++ {
			n := 0
			for sy := 0; sy < 4; sy++ {
				for sx := 0; sx < 4; sx++ {
					if inside(float64(x)+(float64(sx)+0.5)/4, float64(y)+(float64(sy)+0.5)/4) {
						n++
					}
				}
			}
			c.plot(x, y, float64(n)/16)
		}
	}
}
