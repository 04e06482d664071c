package screenshot

import "unicode/utf8"

// attr is a set of SGR attributes.
type attr uint8

const (
	attrBold attr = 1 << iota
	attrDim
	attrItalic
	attrUnderline
	attrReverse
	attrHidden
	attrStrike
)

// pen is the SGR state: what the next character is drawn with.
type pen struct {
	fg, bg tcolor
	a      attr
}

// cell is one cell of the grid. A wide character sits in its first cell;
// the second has cont set and is drawn with the first.
type cell struct {
	r    rune
	pen  pen
	cont bool
}

// grid is the parsed capture: rows×cols cells, row by row.
type grid struct {
	cols, rows int
	cells      []cell
}

// parse lays capture out on a cols×rows grid. It never fails: see the
// package documentation for what it clips and ignores.
func parse(capture []byte, cols, rows int) *grid {
	g := &grid{cols: cols, rows: rows, cells: make([]cell, cols*rows)}
	for i := range g.cells {
		g.cells[i].r = ' '
	}
	var p pen
	row, col := 0, 0
	for i := 0; i < len(capture) && row < rows; {
		b := capture[i]
		switch {
		case b == '\n':
			row, col = row+1, 0
			i++
		case b == '\r':
			col = 0
			i++
		case b == '\t':
			col = (col/8 + 1) * 8
			i++
		case b == 0x1b:
			i = escape(capture, i, &p)
		case b < 0x20 || b == 0x7f:
			i++ // other C0 controls move nothing in a capture
		default:
			r, n := utf8.DecodeRune(capture[i:])
			i += n
			if r >= 0x80 && r < 0xa0 { // C1 controls
				continue
			}
			w := runeWidth(r)
			if w == 0 {
				continue
			}
			if col+w <= cols {
				g.put(row, col, w, r, p)
			}
			col += w
		}
	}
	return g
}

// put writes r, w cells wide, at (row, col). Overwriting half of a wide
// character (after a carriage return) blanks its other half.
func (g *grid) put(row, col, w int, r rune, p pen) {
	line := g.cells[row*g.cols : (row+1)*g.cols]
	for c := col; c < col+w; c++ {
		if line[c].cont && c > 0 && c == col {
			line[c-1] = cell{r: ' ', pen: line[c-1].pen}
		}
		if c+1 < g.cols && line[c+1].cont && c == col+w-1 {
			line[c+1] = cell{r: ' ', pen: line[c+1].pen}
		}
	}
	line[col] = cell{r: r, pen: p}
	if w == 2 {
		line[col+1] = cell{r: ' ', pen: p, cont: true}
	}
}

// escape consumes the escape sequence starting at capture[i] (an ESC),
// applies it to p if it is SGR, and returns the index after it. A
// sequence cut off by the end of the input is dropped.
func escape(capture []byte, i int, p *pen) int {
	n := len(capture)
	if i+1 >= n {
		return n
	}
	switch capture[i+1] {
	case '[': // CSI: parameters 0x30-0x3F, intermediates 0x20-0x2F, final 0x40-0x7E
		j := i + 2
		start := j
		for j < n && capture[j] >= 0x30 && capture[j] <= 0x3f {
			j++
		}
		params := capture[start:j]
		inter := j
		for j < n && capture[j] >= 0x20 && capture[j] <= 0x2f {
			j++
		}
		if j >= n {
			return n
		}
		final := capture[j]
		if final < 0x40 || final > 0x7e {
			// Malformed: drop what was read and go on from the odd byte.
			return j
		}
		if final == 'm' && inter == j && (len(params) == 0 || params[0] < '<') {
			sgr(params, p)
		}
		return j + 1
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: up to BEL or ST
		for j := i + 2; j < n; j++ {
			switch capture[j] {
			case 0x07:
				return j + 1
			case 0x1b:
				if j+1 < n && capture[j+1] == '\\' {
					return j + 2
				}
				return j
			}
		}
		return n
	}
	// A two-byte sequence (or ESC with intermediates and a final byte).
	j := i + 1
	for j < n && capture[j] >= 0x20 && capture[j] <= 0x2f {
		j++
	}
	return min(j+1, n)
}

// maxParams bounds the parameters of one SGR sequence that are read, and
// maxSubs the sub-parameters of one parameter; the rest are ignored.
const (
	maxParams = 32
	maxSubs   = 6 // 38:2:colourspace:r:g:b
)

// param is one SGR parameter with its sub-parameters: v[0] is the
// parameter, v[1:n] what followed it after ':'.
type param struct {
	n int
	v [maxSubs]int
}

// sgr applies the parameters of one SGR sequence (the bytes between
// "ESC [" and "m"). Parameters are separated by ';', sub-parameters by ':'
// (as in "38:2::r:g:b" and "4:3"); an empty parameter is 0.
func sgr(params []byte, p *pen) {
	var arr [maxParams]param
	list := sgrParams(params, &arr)
	for k := 0; k < len(list); k++ {
		q := list[k].v[:list[k].n]
		switch v := q[0]; {
		case v == 38, v == 48, v == 58:
			var c tcolor
			var ok bool
			if len(q) > 1 {
				c, ok = extColor(q[1:])
			} else {
				var used int
				c, ok, used = extColorSemicolon(list[k+1:])
				k += used
			}
			if !ok {
				continue
			}
			switch v {
			case 38:
				p.fg = c
			case 48:
				p.bg = c
			} // 58 is the underline colour, not drawn
		default:
			sgrOne(q, p)
		}
	}
}

// sgrParams splits an SGR sequence's parameters (";" between them, ":"
// between a parameter's sub-parameters) into arr, and returns the ones
// read.
func sgrParams(params []byte, arr *[maxParams]param) []param {
	count := 1
	arr[0].n = 1
	for _, b := range params {
		if count > maxParams {
			break
		}
		cur := &arr[count-1]
		switch {
		case b >= '0' && b <= '9':
			v := &cur.v[cur.n-1]
			*v = min(*v*10+int(b-'0'), 1<<20)
		case b == ';':
			count++
			if count <= maxParams {
				arr[count-1].n = 1
			}
		case b == ':':
			if cur.n < maxSubs {
				cur.n++
			}
		}
	}
	return arr[:min(count, maxParams)]
}

// sgrOne applies one SGR parameter (with its sub-parameters q[1:]) that
// is not an extended colour.
func sgrOne(q []int, p *pen) {
	switch v := q[0]; {
	case v == 0:
		*p = pen{}
	case v == 1:
		p.a |= attrBold
	case v == 2:
		p.a |= attrDim
	case v == 3:
		p.a |= attrItalic
	case v == 4:
		if len(q) > 1 && q[1] == 0 {
			p.a &^= attrUnderline
		} else {
			p.a |= attrUnderline
		}
	case v == 7:
		p.a |= attrReverse
	case v == 8:
		p.a |= attrHidden
	case v == 9:
		p.a |= attrStrike
	case v == 21:
		p.a |= attrUnderline // double underline, drawn single
	case v == 22:
		p.a &^= attrBold | attrDim
	case v == 23:
		p.a &^= attrItalic
	case v == 24:
		p.a &^= attrUnderline
	case v == 27:
		p.a &^= attrReverse
	case v == 28:
		p.a &^= attrHidden
	case v == 29:
		p.a &^= attrStrike
	case v >= 30 && v <= 37:
		p.fg = indexed(v - 30)
	case v == 39:
		p.fg = colorDefault
	case v >= 40 && v <= 47:
		p.bg = indexed(v - 40)
	case v == 49:
		p.bg = colorDefault
	case v >= 90 && v <= 97:
		p.fg = indexed(v - 90 + 8)
	case v >= 100 && v <= 107:
		p.bg = indexed(v - 100 + 8)
	}
}

// extColor reads the sub-parameters after 38/48/58 in the colon form:
// "5:n", "2:r:g:b" or "2:colourspace:r:g:b".
func extColor(q []int) (tcolor, bool) {
	switch {
	case q[0] == 5 && len(q) >= 2:
		return indexed(clampByte(q[1])), true
	case q[0] == 2 && len(q) >= 4:
		n := len(q)
		return rgbColor(clampByte(q[n-3]), clampByte(q[n-2]), clampByte(q[n-1])), true
	}
	return 0, false
}

// extColorSemicolon reads the parameters after 38/48/58 in the semicolon
// form, "5;n" or "2;r;g;b", and reports how many it used.
func extColorSemicolon(rest []param) (tcolor, bool, int) {
	if len(rest) == 0 {
		return 0, false, 0
	}
	switch rest[0].v[0] {
	case 5:
		if len(rest) >= 2 {
			return indexed(clampByte(rest[1].v[0])), true, 2
		}
	case 2:
		if len(rest) >= 4 {
			return rgbColor(clampByte(rest[1].v[0]), clampByte(rest[2].v[0]), clampByte(rest[3].v[0])), true, 4
		}
	}
	return 0, false, len(rest)
}

func clampByte(v int) int { return min(max(v, 0), 255) }
