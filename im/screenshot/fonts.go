package screenshot

import (
	"image"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/gomonobold"
	"golang.org/x/image/font/gofont/gomonobolditalic"
	"golang.org/x/image/font/gofont/gomonoitalic"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// style selects a Go Mono face. Underline and strike-through are drawn over
// the glyph, so they are not part of it.
type style uint8

const (
	styleBold style = 1 << iota
	styleItalic
)

// Bounds on the caches, so that a long-running daemon shown every rune of
// Unicode over time, or asked for many sizes, stays small. Past a bound the
// cache is emptied and refilled.
const (
	maxGlyphs   = 8192
	maxFaceSets = 8
)

// goMono holds the four parsed Go Mono faces, indexed by style.
var goMono = sync.OnceValue(func() [4]*sfnt.Font {
	var fs [4]*sfnt.Font
	for s, ttf := range [4][]byte{gomono.TTF, gomonobold.TTF, gomonoitalic.TTF, gomonobolditalic.TTF} {
		f, err := opentype.Parse(ttf)
		if err != nil {
			// The fonts are compiled in: failing to parse them is a
			// broken build, not a runtime condition.
			panic("screenshot: parsing the embedded Go Mono font: " + err.Error())
		}
		fs[s] = f
	}
	return fs
})

// fontFiles caches fallback font files by path; a nil entry records a file
// that is missing or does not parse, so it is not read again.
var fontFiles struct {
	mu sync.Mutex
	m  map[string]*sfnt.Font
}

func loadFontFile(path string) *sfnt.Font {
	fontFiles.mu.Lock()
	defer fontFiles.mu.Unlock()
	if f, ok := fontFiles.m[path]; ok {
		return f
	}
	if fontFiles.m == nil {
		fontFiles.m = make(map[string]*sfnt.Font)
	}
	var f *sfnt.Font
	if b, err := os.ReadFile(path); err == nil {
		if strings.HasSuffix(strings.ToLower(path), ".ttc") {
			if c, err := opentype.ParseCollection(b); err == nil && c.NumFonts() > 0 {
				f, _ = c.Font(0)
			}
		} else {
			f, _ = opentype.Parse(b)
		}
	}
	fontFiles.m[path] = f
	return f
}

// metrics are the cell geometry for one font size, from Go Mono Regular.
type metrics struct {
	cellW, cellH int
	baseline     int // from the top of the cell
	line         int // thickness of light box-drawing lines and underlines
}

// metricsCache memoizes metricsFor by font size, emptied past
// maxFaceSets*8 sizes.
var metricsCache struct {
	mu sync.Mutex
	m  map[float64]metrics
}

func metricsFor(size float64) metrics {
	metricsCache.mu.Lock()
	defer metricsCache.mu.Unlock()
	if m, ok := metricsCache.m[size]; ok {
		return m
	}
	if metricsCache.m == nil || len(metricsCache.m) >= maxFaceSets*8 {
		metricsCache.m = make(map[float64]metrics)
	}
	m := computeMetrics(size)
	metricsCache.m[size] = m
	return m
}

func computeMetrics(size float64) metrics {
	f := goMono()[0]
	var buf sfnt.Buffer
	ppem := fixed.Int26_6(math.Round(size * 64))
	m, _ := f.Metrics(&buf, ppem, font.HintingNone)
	adv := ppem * 6 / 10 // Go Mono's advance is 0.6 em; the font says so below
	if x, err := f.GlyphIndex(&buf, 'M'); err == nil && x != 0 {
		if a, err := f.GlyphAdvance(&buf, x, ppem, font.HintingNone); err == nil {
			adv = a
		}
	}
	var mt metrics
	mt.cellW = max(1, adv.Ceil())
	mt.baseline = max(1, m.Ascent.Ceil())
	mt.cellH = mt.baseline + max(1, m.Descent.Ceil())
	mt.line = max(1, (mt.cellW+4)/9)
	return mt
}

// face is one font at one size. An opentype face is not safe for
// concurrent use: it is used only under faceSet.mu.
type face struct {
	f   *sfnt.Font
	buf sfnt.Buffer
	fc  font.Face
}

func newFace(f *sfnt.Font, size float64) *face {
	fc, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		return nil
	}
	return &face{f: f, fc: fc}
}

func (fc *face) has(r rune) bool {
	x, err := fc.f.GlyphIndex(&fc.buf, r)
	return err == nil && x != 0
}

// glyphKey names one cached mask.
type glyphKey struct {
	r rune
	s style
}

// mask is the coverage of one character over its whole cell span (one or
// two cells wide): drawing it means blending the foreground colour into
// the cell through it. Masks are immutable once cached.
type mask struct {
	w, h int
	pix  []uint8         // w*h, row by row
	ink  image.Rectangle // the part of the mask that is not zero
}

func newMask(w, h int) *mask {
	return &mask{w: w, h: h, pix: make([]uint8, w*h)}
}

// seal computes ink; call it once drawing is done.
func (m *mask) seal() *mask {
	minX, minY, maxX, maxY := m.w, m.h, 0, 0
	for y := 0; y < m.h; y++ {
		row := m.pix[y*m.w : (y+1)*m.w]
		for x, a := range row {
			if a != 0 {
				minX, maxX = min(minX, x), max(maxX, x+1)
				minY, maxY = min(minY, y), max(maxY, y+1)
			}
		}
	}
	if minX < maxX {
		m.ink = image.Rect(minX, minY, maxX, maxY)
	}
	return m
}

// faceSet renders and caches the glyph masks of one font size and one list
// of fallback fonts. It is shared between concurrent Render calls.
type faceSet struct {
	metrics
	size      float64
	fallbacks []string

	mu      sync.Mutex
	primary [4]*face // Go Mono by style
	extra   []*face  // fallback faces by index of fallbacks; nil: not loaded or unusable
	loaded  []bool   // whether fallbacks[i] was tried
	glyphs  map[glyphKey]*mask
}

var faceSets struct {
	mu sync.Mutex
	m  map[string]*faceSet
}

// faceSetFor returns the shared faceSet for o (normalized).
func faceSetFor(o Options) *faceSet {
	key := strconv.FormatFloat(o.FontSize, 'g', -1, 64) + "\x00" + strings.Join(o.FallbackFonts, "\x00")
	faceSets.mu.Lock()
	defer faceSets.mu.Unlock()
	if fs, ok := faceSets.m[key]; ok {
		return fs
	}
	if faceSets.m == nil || len(faceSets.m) >= maxFaceSets {
		faceSets.m = make(map[string]*faceSet)
	}
	fs := &faceSet{
		metrics:   metricsFor(o.FontSize),
		size:      o.FontSize,
		fallbacks: append([]string(nil), o.FallbackFonts...),
		extra:     make([]*face, len(o.FallbackFonts)),
		loaded:    make([]bool, len(o.FallbackFonts)),
		glyphs:    make(map[glyphKey]*mask),
	}
	for s, f := range goMono() {
		fs.primary[s] = newFace(f, o.FontSize)
	}
	faceSets.m[key] = fs
	return fs
}

// glyph returns the mask for r in style s, drawing it on first use.
func (fs *faceSet) glyph(r rune, s style) *mask {
	k := glyphKey{r, s}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if m, ok := fs.glyphs[k]; ok {
		return m
	}
	m := fs.draw(r, s)
	if len(fs.glyphs) >= maxGlyphs {
		fs.glyphs = make(map[glyphKey]*mask)
	}
	fs.glyphs[k] = m
	return m
}

// draw makes the mask of r: a drawn shape for box drawing, blocks and
// braille; else the glyph of the first font that has it (Go Mono in the
// style, then each fallback, made bold by smearing when s is bold); else
// a drawn stand-in for a few agent symbols; else the placeholder.
func (fs *faceSet) draw(r rune, s style) *mask {
	w := fs.cellW * runeWidth(r)
	if m := drawShape(r, w, fs.cellH, fs.line); m != nil {
		return m.seal()
	}
	if p := fs.primary[s]; p != nil && p.has(r) {
		return fs.drawGlyph(p, r, w, false)
	}
	for i, path := range fs.fallbacks {
		if !fs.loaded[i] {
			fs.loaded[i] = true
			if f := loadFontFile(path); f != nil {
				fs.extra[i] = newFace(f, fs.size)
			}
		}
		if fc := fs.extra[i]; fc != nil && fc.has(r) {
			return fs.drawGlyph(fc, r, w, s&styleBold != 0)
		}
	}
	if m := drawSymbol(r, w, fs.cellH, fs.line); m != nil {
		return m.seal()
	}
	return placeholder(w, fs.cellH, fs.line).seal()
}

// drawGlyph rasterizes r from fc centred in a span w pixels wide on the
// shared baseline. A glyph wider than the span (a fallback font's symbol)
// is drawn smaller so that it fits, and raised towards the middle of the
// cell.
func (fs *faceSet) drawGlyph(fc *face, r rune, w int, smear bool) *mask {
	m := newMask(w, fs.cellH)
	ffc := fc.fc
	baseline := fixed.I(fs.baseline)
	adv, ok := ffc.GlyphAdvance(r)
	if ok && adv > fixed.I(w)+fixed.I(1)/2 {
		k := float64(w) / (float64(adv) / 64)
		if small, err := opentype.NewFace(fc.f, &opentype.FaceOptions{Size: fs.size * k, DPI: 72, Hinting: font.HintingNone}); err == nil {
			ffc = small
			adv, _ = small.GlyphAdvance(r)
			lift := (1 - k) * (float64(fs.baseline) - float64(fs.cellH)/2)
			baseline -= fixed.Int26_6(lift * 64)
		}
	}
	dot := fixed.Point26_6{X: (fixed.I(w) - adv) / 2, Y: baseline}
	dr, src, sp, _, ok := ffc.Glyph(dot, r)
	if !ok {
		return placeholder(w, fs.cellH, fs.line).seal()
	}
	clip := dr.Intersect(image.Rect(0, 0, w, fs.cellH))
	for y := clip.Min.Y; y < clip.Max.Y; y++ {
		for x := clip.Min.X; x < clip.Max.X; x++ {
			m.pix[y*w+x] = coverage(src, sp.X+x-dr.Min.X, sp.Y+y-dr.Min.Y)
		}
	}
	if smear {
		// Faux bold: widen every stroke by one pixel to the right.
		for y := 0; y < fs.cellH; y++ {
			row := m.pix[y*w : (y+1)*w]
			for x := w - 1; x > 0; x-- {
				row[x] = max(row[x], row[x-1])
			}
		}
	}
	return m.seal()
}

// coverage reads one pixel of a glyph mask; opentype hands out an
// *image.Alpha, read directly.
func coverage(src image.Image, x, y int) uint8 {
	if a, ok := src.(*image.Alpha); ok {
		return a.AlphaAt(x, y).A
	}
	_, _, _, a := src.At(x, y).RGBA()
	return uint8(a >> 8)
}
