package screenshot

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"sync"
)

// encodePNG appends img to out as an 8-bit RGB PNG (the alpha channel of
// a rendered screen is always opaque, so it is dropped). It exists because
// image/png tries all five row filters on every row, half the time of a
// 200×50 screenshot. A terminal screen is mostly rows equal to the row
// above, so it filters with Up only (Sub on the first row, which has
// nothing above it) and compresses at zlib.BestSpeed: about 40% of the
// time of image/png at BestSpeed, for a file 4% larger.
//
// The zlib writer and the IDAT buffer are pooled: a flate compressor is
// about a megabyte of state, and a screenshot is taken again and again.
func encodePNG(out *bytes.Buffer, img *image.RGBA) error {
	b := img.Rect
	width, height := b.Dx(), b.Dy()
	idat := idatBuffers.Get().(*bytes.Buffer)
	defer idatBuffers.Put(idat)
	idat.Reset()
	zw := zlibWriters.Get().(*zlib.Writer)
	defer zlibWriters.Put(zw)
	zw.Reset(idat)
	line := make([]byte, 1+3*width)
	zeros := make([]byte, 1+3*width)
	zeros[0] = 2 // Up, all differences zero
	var above []byte
	for y := 0; y < height; y++ {
		off := img.PixOffset(b.Min.X, b.Min.Y+y)
		row := img.Pix[off : off+4*width]
		switch {
		case above == nil:
			line[0] = 1 // Sub: the first row has nothing above it
			var l0, l1, l2 byte
			for x := range width {
				s, d := row[4*x:4*x+3:4*x+3], line[1+3*x:4+3*x:4+3*x]
				d[0], d[1], d[2] = s[0]-l0, s[1]-l1, s[2]-l2
				l0, l1, l2 = s[0], s[1], s[2]
			}
		case bytes.Equal(row, above):
			// A row like the one above, common on a terminal screen.
			if _, err := zw.Write(zeros); err != nil {
				return err
			}
			continue
		default:
			line[0] = 2 // Up
			for x := range width {
				s, a, d := row[4*x:4*x+3:4*x+3], above[4*x:4*x+3:4*x+3], line[1+3*x:4+3*x:4+3*x]
				d[0], d[1], d[2] = s[0]-a[0], s[1]-a[1], s[2]-a[2]
			}
		}
		if _, err := zw.Write(line); err != nil {
			return err
		}
		above = row
	}
	if err := zw.Close(); err != nil {
		return err
	}

	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(height))
	ihdr[8] = 8  // bits per sample
	ihdr[9] = 2  // colour type: RGB
	ihdr[10] = 0 // deflate
	ihdr[11] = 0 // adaptive filtering
	ihdr[12] = 0 // no interlace
	out.Grow(8 + 12 + len(ihdr) + 12 + idat.Len() + 12)
	out.WriteString("\x89PNG\r\n\x1a\n")
	writeChunk(out, "IHDR", ihdr[:])
	writeChunk(out, "IDAT", idat.Bytes())
	writeChunk(out, "IEND", nil)
	return nil
}

var (
	zlibWriters = sync.Pool{New: func() any {
		zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed) // a valid level: no error
		return zw
	}}
	idatBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// writeChunk appends one PNG chunk: length, type, data, CRC of type and
// data.
func writeChunk(out *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	out.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	out.WriteString(typ)
	out.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	out.Write(n[:])
}
