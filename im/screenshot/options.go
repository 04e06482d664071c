package screenshot

import (
	"errors"
	"fmt"
)

// Limits on Options. They bound the memory one call can take: the image
// is 4 bytes a pixel, so MaxPixels is 128 MiB. A 200×50 pane at the
// default size is 1800×850 pixels.
const (
	// MaxCols is the widest grid Render accepts.
	MaxCols = 1000
	// MaxRows is the tallest grid Render accepts.
	MaxRows = 1000
	// DefaultFontSize is the font size, in pixels per em, used when
	// Options.FontSize is 0.
	DefaultFontSize = 14
	// MinFontSize and MaxFontSize bound Options.FontSize.
	MinFontSize = 6
	MaxFontSize = 72
	// MaxPixels bounds the image: Cols*cellW × Rows*cellH.
	MaxPixels = 1 << 25
)

// ErrOptions is returned (wrapped, with the offending value) when Options
// are out of range. Check it with errors.Is.
var ErrOptions = errors.New("screenshot: invalid options")

// Options describe the pane and how large to draw it.
type Options struct {
	// Cols is the pane's width in cells (tmux #{pane_width}). Required:
	// 1..MaxCols. Characters beyond it are clipped.
	Cols int
	// Rows is the pane's height in cells (tmux #{pane_height}). Required:
	// 1..MaxRows. Lines beyond it are dropped. The image must also stay
	// within MaxPixels.
	Rows int
	// FontSize is the size of the font in pixels per em.
	// Default (0): DefaultFontSize. Otherwise MinFontSize..MaxFontSize.
	FontSize float64
	// FallbackFonts are TrueType/OpenType files (.ttf, .otf, or the first
	// font of a .ttc) tried in order for a character Go Mono lacks. Files
	// that do not exist or do not parse are skipped. A file is read only
	// when a character first needs it, and is then kept in memory for the
	// life of the process (a CJK collection is tens of megabytes).
	// Default (nil): DefaultFallbackFonts. An empty, non-nil slice turns
	// fallback off, so that only Go Mono and the drawn shapes are used.
	FallbackFonts []string
}

// DefaultFallbackFonts are the fonts tried, in order, for a character Go
// Mono lacks when Options.FallbackFonts is nil: DejaVu (Debian's
// fonts-dejavu-core, and the paths Arch and Fedora use), then Noto and
// WenQuanYi fonts for CJK text when they are installed.
var DefaultFallbackFonts = []string{
	"/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
	"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
	"/usr/share/fonts/TTF/DejaVuSansMono.ttf",
	"/usr/share/fonts/TTF/DejaVuSans.ttf",
	"/usr/share/fonts/dejavu-sans-mono-fonts/DejaVuSansMono.ttf",
	"/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
	"/usr/share/fonts/truetype/noto/NotoSansMono-Regular.ttf",
	"/usr/share/fonts/truetype/noto/NotoSansSymbols2-Regular.ttf",
	"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
	"/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
	"/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
}

// normalized applies the defaults and checks the ranges.
func (o Options) normalized() (Options, error) {
	if o.FontSize == 0 {
		o.FontSize = DefaultFontSize
	}
	if o.FallbackFonts == nil {
		o.FallbackFonts = DefaultFallbackFonts
	}
	var errs []error
	if o.Cols < 1 || o.Cols > MaxCols {
		errs = append(errs, fmt.Errorf("%w: Cols %d is outside 1..%d", ErrOptions, o.Cols, MaxCols))
	}
	if o.Rows < 1 || o.Rows > MaxRows {
		errs = append(errs, fmt.Errorf("%w: Rows %d is outside 1..%d", ErrOptions, o.Rows, MaxRows))
	}
	// The negated form also rejects NaN.
	if !(o.FontSize >= MinFontSize && o.FontSize <= MaxFontSize) {
		errs = append(errs, fmt.Errorf("%w: FontSize %v is outside %d..%d", ErrOptions, o.FontSize, MinFontSize, MaxFontSize))
	}
	if len(errs) == 0 {
		m := metricsFor(o.FontSize)
		if px := o.Cols * m.cellW * o.Rows * m.cellH; px > MaxPixels {
			errs = append(errs, fmt.Errorf("%w: %d×%d cells of %d×%d pixels is an image of %d pixels, more than %d", ErrOptions, o.Cols, o.Rows, m.cellW, m.cellH, px, MaxPixels))
		}
	}
	return o, errors.Join(errs...)
}

// CellSize reports the size in pixels of one cell for o.FontSize (Cols,
// Rows and FallbackFonts do not matter): the image Render returns is
// Cols*w by Rows*h pixels, and the cell at column c, row r covers
// [c*w, (c+1)*w) × [r*h, (r+1)*h). It returns 0, 0 for a FontSize outside
// MinFontSize..MaxFontSize.
func CellSize(o Options) (w, h int) {
	o.Cols, o.Rows = 1, 1
	n, err := o.normalized()
	if err != nil {
		return 0, 0
	}
	m := metricsFor(n.FontSize)
	return m.cellW, m.cellH
}
