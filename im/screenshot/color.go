package screenshot

import "image/color"

// tcolor is a terminal colour as the capture names it: the default, an
// index into the 256-colour palette, or a 24-bit RGB value. The zero value
// is the default colour.
type tcolor uint32

const (
	colorDefault tcolor = 0
	kindIndexed  tcolor = 1 << 24
	kindRGB      tcolor = 2 << 24
	kindMask     tcolor = 3 << 24
)

// indexed is palette colour i (0-255).
func indexed(i int) tcolor { return kindIndexed | tcolor(i&0xff) }

// rgbColor is the 24-bit colour r, g, b (each 0-255).
func rgbColor(r, g, b int) tcolor {
	return kindRGB | tcolor(r&0xff)<<16 | tcolor(g&0xff)<<8 | tcolor(b&0xff)
}

// The default colours and the 16 ANSI colours (a dark terminal theme, the
// one VS Code's terminal uses). Colours 16-255 are computed in palette.
var (
	defaultBG = color.RGBA{0x1e, 0x1e, 0x1e, 0xff}
	defaultFG = color.RGBA{0xd4, 0xd4, 0xd4, 0xff}
)

// DefaultBackground is the colour of a cell with no background set
// (#1e1e1e), so that a test can tell an empty cell.
func DefaultBackground() color.RGBA { return defaultBG }

// DefaultForeground is the colour of text with no foreground set
// (#d4d4d4).
func DefaultForeground() color.RGBA { return defaultFG }

var ansi16 = [16]color.RGBA{
	{0x00, 0x00, 0x00, 0xff}, // black
	{0xcd, 0x31, 0x31, 0xff}, // red
	{0x0d, 0xbc, 0x79, 0xff}, // green
	{0xe5, 0xe5, 0x10, 0xff}, // yellow
	{0x24, 0x72, 0xc8, 0xff}, // blue
	{0xbc, 0x3f, 0xbc, 0xff}, // magenta
	{0x11, 0xa8, 0xcd, 0xff}, // cyan
	{0xe5, 0xe5, 0xe5, 0xff}, // white
	{0x66, 0x66, 0x66, 0xff}, // bright black
	{0xf1, 0x4c, 0x4c, 0xff}, // bright red
	{0x23, 0xd1, 0x8b, 0xff}, // bright green
	{0xf5, 0xf5, 0x43, 0xff}, // bright yellow
	{0x3b, 0x8e, 0xea, 0xff}, // bright blue
	{0xd6, 0x70, 0xd6, 0xff}, // bright magenta
	{0x29, 0xb8, 0xdb, 0xff}, // bright cyan
	{0xff, 0xff, 0xff, 0xff}, // bright white
}

// palette is the xterm 256-colour palette: the 16 above, a 6×6×6 cube,
// then 24 greys.
var palette = func() (p [256]color.RGBA) {
	copy(p[:], ansi16[:])
	level := [6]uint8{0, 95, 135, 175, 215, 255}
	for i := range 216 {
		p[16+i] = color.RGBA{level[i/36], level[i/6%6], level[i%6], 0xff}
	}
	for i := range 24 {
		g := uint8(8 + 10*i)
		p[232+i] = color.RGBA{g, g, g, 0xff}
	}
	return p
}()

// Palette returns colour i (0-255) of the palette Render uses, so that a
// test can tell what an SGR colour looks like.
func Palette(i uint8) color.RGBA { return palette[i] }

// resolve turns c into RGB, using def for the default colour.
func (c tcolor) resolve(def color.RGBA) color.RGBA {
	switch c & kindMask {
	case kindIndexed:
		return palette[c&0xff]
	case kindRGB:
		return color.RGBA{uint8(c >> 16), uint8(c >> 8), uint8(c), 0xff}
	}
	return def
}

// mix is the colour a of the way from bg to fg (a in 0..255).
func mix(fg, bg color.RGBA, a uint32) color.RGBA {
	f := func(x, y uint8) uint8 { return uint8((uint32(x)*a + uint32(y)*(255-a) + 127) / 255) }
	return color.RGBA{f(fg.R, bg.R), f(fg.G, bg.G), f(fg.B, bg.B), 0xff}
}
