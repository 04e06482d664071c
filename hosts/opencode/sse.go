package opencode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLine bounds one line of the event stream, and the data of one
// frame, when no other limit is given. opencode sends each event as one
// "data:" line, and a message.part.updated frame carries a whole text or
// tool output part, so the limit is generous; it exists so that a broken or
// hostile peer cannot make the reader buffer without end.
const DefaultMaxLine = 8 << 20

var (
	// ErrLineTooLong is returned by SSEReader.Next when a line of the stream
	// is longer than the reader's limit. The stream cannot be resynchronised
	// after it: the caller drops the connection.
	ErrLineTooLong = errors.New("opencode: SSE line too long")
	// ErrFrameTooLarge is returned by SSEReader.Next when the data lines of
	// one frame add up to more than the reader's limit.
	ErrFrameTooLarge = errors.New("opencode: SSE frame too large")
)

// SSEReader splits a text/event-stream body into the data of its frames.
//
// It follows the parts of the WHATWG event-stream format that opencode's
// /event route uses: "data:" lines (several in one frame are joined with
// "\n"), comment lines starting with ":", and a blank line ending each
// frame. Lines may end in LF, CRLF or a lone CR. The "event", "id" and
// "retry" fields are read and dropped: this server sends none of them and
// has no replay, so there is no last-event id to keep. A frame that the
// stream ends in the middle of is not returned, as the format prescribes.
//
// A lone CR at the very end of the bytes read so far is held until the next
// byte shows whether an LF follows; opencode ends lines with LF, so this
// never delays one of its frames.
type SSEReader struct {
	sc      *bufio.Scanner
	max     int
	data    []byte
	hasData bool
	first   bool
	err     error // sticky: after a limit is passed the stream is out of step
}

// NewSSEReader returns a reader of the stream r whose lines, and frames,
// may be at most maxLine bytes long. Default: DefaultMaxLine when maxLine
// is zero or less.
func NewSSEReader(r io.Reader, maxLine int) *SSEReader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	sc := bufio.NewScanner(r)
	initial := 64 << 10
	if initial > maxLine+2 {
		initial = maxLine + 2
	}
	// +2 leaves room for the line's own CRLF, which is not part of the line.
	sc.Buffer(make([]byte, 0, initial), maxLine+2)
	sc.Split(splitSSELine)
	return &SSEReader{sc: sc, max: maxLine, first: true}
}

// Next returns the data of the next complete frame; the slice is the
// caller's to keep. It returns io.EOF when the stream ends cleanly (an
// unfinished last frame is dropped), ErrLineTooLong or ErrFrameTooLarge
// (wrapped) when a limit is passed, and the underlying read error otherwise.
func (r *SSEReader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) > r.max {
			r.err = fmt.Errorf("%w: a line is longer than %d bytes", ErrLineTooLong, r.max)
			return nil, r.err
		}
		if r.first {
			r.first = false
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 {
			if !r.hasData {
				continue
			}
			out := r.data
			r.data, r.hasData = nil, false
			if out == nil {
				out = []byte{}
			}
			return out, nil
		}
		if line[0] == ':' {
			continue // comment, used by some servers as a keep-alive
		}
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(name) != "data" {
			continue // event, id, retry and unknown fields carry nothing for thatch
		}
		extra := len(value)
		if r.hasData {
			extra++
		}
		if len(r.data)+extra > r.max {
			r.err = fmt.Errorf("%w: more than %d bytes of data in one frame", ErrFrameTooLarge, r.max)
			return nil, r.err
		}
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
	}
	err := r.sc.Err()
	switch {
	case err == nil:
		r.err = io.EOF
	case errors.Is(err, bufio.ErrTooLong):
		r.err = fmt.Errorf("%w: a line is longer than %d bytes", ErrLineTooLong, r.max)
	default:
		r.err = err
	}
	return nil, r.err
}

// splitSSELine is a bufio.SplitFunc for lines ended by LF, CRLF or CR.
func splitSSELine(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if atEOF {
			return i + 1, data[:i], nil
		}
		return 0, nil, nil // a CR last: wait to see whether an LF follows
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}
