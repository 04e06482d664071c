package opencode

import (
	"errors"
	"io"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// readAll drains r and returns the frames and the error that ended it.
func readAll(r *SSEReader) ([]string, error) {
	var out []string
	for {
		f, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(f))
	}
}

func TestSSEReaderFrames(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one frame", "data: {\"a\":1}\n\n", []string{`{"a":1}`}},
		{"two frames", "data: a\n\ndata: b\n\n", []string{"a", "b"}},
		{"multi-line data joins with LF", "data: a\ndata: b\ndata:c\n\n", []string{"a\nb\nc"}},
		{"no space after colon", "data:x\n\n", []string{"x"}},
		{"only one space is stripped", "data:  x\n\n", []string{" x"}},
		{"comments are skipped", ": hello\ndata: a\n: mid\n\n:keepalive\n\n", []string{"a"}},
		{"CRLF", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", []string{"a\nb", "c"}},
		{"lone CR", "data: a\rdata: b\r\rdata: c\r\r", []string{"a\nb", "c"}},
		{"mixed endings", "data: a\r\n\ndata: b\n\r\n", []string{"a", "b"}},
		{"extra blank lines", "\n\n\ndata: a\n\n\n\n", []string{"a"}},
		{"event id retry ignored", "event: x\nid: 7\nretry: 10\ndata: a\n\n", []string{"a"}},
		{"frame without data is not dispatched", "event: x\nid: 1\n\ndata: a\n\n", []string{"a"}},
		{"empty data line dispatches empty frame", "data:\n\n", []string{""}},
		{"field without colon", "data\n\n", []string{""}},
		{"colon inside value", "data: {\"k\":\"a:b\"}\n\n", []string{`{"k":"a:b"}`}},
		{"BOM at start", "\xEF\xBB\xBFdata: a\n\n", []string{"a"}},
		{"unfinished frame at EOF dropped", "data: a\n\ndata: b\n", []string{"a"}},
		{"unfinished line at EOF dropped", "data: a\n\ndata: b", []string{"a"}},
		{"unknown field name", "dat: a\ndata: b\n\n", []string{"b"}},
		{"empty stream", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(NewSSEReader(strings.NewReader(tt.in), 0))
			if !errors.Is(err, io.EOF) {
				t.Fatalf("ended with %v, want io.EOF", err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Fatalf("frames = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSSEReaderLineTooLong(t *testing.T) {
	long := "data: " + strings.Repeat("x", 100) + "\n\n"
	r := NewSSEReader(strings.NewReader("data: ok\n\n"+long+"data: after\n\n"), 64)
	f, err := r.Next()
	if err != nil || string(f) != "ok" {
		t.Fatalf("first frame = %q, %v", f, err)
	}
	_, err = r.Next()
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	if !strings.Contains(err.Error(), "64 bytes") {
		t.Errorf("error %q does not name the limit", err)
	}
	// The reader is out of step after the overflow; it stays failed.
	if _, err2 := r.Next(); !errors.Is(err2, ErrLineTooLong) {
		t.Errorf("second Next = %v, want the same error", err2)
	}
}

func TestSSEReaderLineJustFits(t *testing.T) {
	line := "data: " + strings.Repeat("y", 58) // 64 bytes
	got, err := readAll(NewSSEReader(strings.NewReader(line+"\r\n\r\n"), 64))
	if !errors.Is(err, io.EOF) || len(got) != 1 || got[0] != strings.Repeat("y", 58) {
		t.Fatalf("got %q, %v", got, err)
	}
	_, err = readAll(NewSSEReader(strings.NewReader(line+"y\n\n"), 64))
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("65-byte line: err = %v, want ErrLineTooLong", err)
	}
}

func TestSSEReaderFrameTooLarge(t *testing.T) {
	in := strings.Repeat("data: "+strings.Repeat("z", 30)+"\n", 5) + "\n"
	_, err := readAll(NewSSEReader(strings.NewReader(in), 64))
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v, want ErrFrameTooLarge", err)
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestSSEReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	r := NewSSEReader(io.MultiReader(strings.NewReader("data: a\n\n"), failingReader{boom}), 0)
	got, err := readAll(r)
	if !errors.Is(err, boom) || len(got) != 1 {
		t.Fatalf("got %q, %v; want one frame then boom", got, err)
	}
}

// chunkReader hands out its input in the given chunk sizes, to move line
// ends (a CR and its LF above all) across read boundaries.
type chunkReader struct {
	data   []byte
	chunks []int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.chunks) > 0 {
		n = min(n, c.chunks[0])
		c.chunks = c.chunks[1:]
	}
	n = min(n, len(p))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestSSEReaderRoundTrip: any frames, written with any mix of line endings,
// comments and ignored fields, and read in any chunking, come back intact.
func TestSSEReaderRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		valueGen := rapid.StringMatching(`[^\r\n]{0,20}`)
		frames := rapid.SliceOfN(rapid.SliceOfN(valueGen, 1, 4), 0, 6).Draw(t, "frames")
		eols := []string{"\n", "\r\n", "\r"}
		var b strings.Builder
		if rapid.Bool().Draw(t, "bom") {
			b.WriteString("\xEF\xBB\xBF")
		}
		last := ""
		eol := func() string {
			e := eols[rapid.IntRange(0, 2).Draw(t, "eol")]
			if last == "\r" && e == "\n" {
				e = "\r\n" // CR then LF would be one line end, not two
			}
			last = e
			return e
		}
		var want []string
		for _, lines := range frames {
			if rapid.Bool().Draw(t, "comment") {
				b.WriteString(": " + valueGen.Draw(t, "c") + eol())
			}
			if rapid.Bool().Draw(t, "id") {
				b.WriteString("id: " + valueGen.Draw(t, "i") + eol())
			}
			for _, v := range lines {
				if v != "" && v[0] != ' ' && rapid.Bool().Draw(t, "nospace") {
					b.WriteString("data:" + v + eol())
				} else {
					b.WriteString("data: " + v + eol())
				}
			}
			b.WriteString(eol())
			want = append(want, strings.Join(lines, "\n"))
		}
		chunks := rapid.SliceOf(rapid.IntRange(1, 7)).Draw(t, "chunks")
		got, err := readAll(NewSSEReader(&chunkReader{data: []byte(b.String()), chunks: chunks}, 0))
		if !errors.Is(err, io.EOF) {
			t.Fatalf("ended with %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("got %d frames %q, want %d %q (input %q)", len(got), got, len(want), want, b.String())
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("frame %d = %q, want %q (input %q)", i, got[i], want[i], b.String())
			}
		}
	})
}
