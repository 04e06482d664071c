package front

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The transcripts of sessions started by hand, followed by the agents
// front end: each file is read from where its session's memory says it
// was read (agentmem.Watch's answer), whole lines at a time, and what
// the lines say of tool calls goes to that memory (toolReader.read),
// which journals how far it got. A file that has not grown for handIdle
// is let go; its hook tells it again when the session is resumed.

// Bounds of the following.
const (
	// handPoll is how often the followed files are looked at.
	handPoll = time.Second
	// handIdle is how long a file may stay as it is before it is let go.
	handIdle = 24 * time.Hour
	// handChunk bounds one read of a file.
	handChunk = 1 << 20
)

// handFollower follows the transcripts of the sessions started by hand.
type handFollower struct {
	tools *toolReader
	log   hclog.Logger
	kick  chan struct{}

	mu    sync.Mutex
	files map[string]*handFile // by path
}

// handFile is one followed transcript: how far it was read, and when it
// last grew.
type handFile struct {
	agent  string
	offset int64
	grew   time.Time
}

func newHandFollower(tools *toolReader, log hclog.Logger) *handFollower {
	return &handFollower{tools: tools, log: log, kick: make(chan struct{}, 1), files: map[string]*handFile{}}
}

// follow follows path, an agent's transcript, from offset (a file
// followed already goes on from the further of the two).
func (h *handFollower) follow(agent, path string, offset int64) {
	h.mu.Lock()
	if f, ok := h.files[path]; ok {
		f.offset, f.grew = max(f.offset, offset), time.Now()
	} else {
		h.files[path] = &handFile{agent: agent, offset: offset, grew: time.Now()}
	}
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// count is how many files are followed.
func (h *handFollower) count() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.files)
}

// run reads every followed file each handPoll (at once when one is
// added) until ctx ends.
func (h *handFollower) run(ctx context.Context) {
	t := time.NewTicker(handPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.kick:
		}
		h.mu.Lock()
		paths := slices.Collect(maps.Keys(h.files))
		h.mu.Unlock()
		for _, p := range paths {
			if ctx.Err() != nil {
				return
			}
			h.poll(ctx, p)
		}
	}
}

// poll reads what path has that is new, in whole lines, and hands it
// over; a file that has not grown for handIdle (or is gone as long) is
// let go.
func (h *handFollower) poll(ctx context.Context, path string) {
	h.mu.Lock()
	f, ok := h.files[path]
	if !ok {
		h.mu.Unlock()
		return
	}
	agent, offset, grew := f.agent, f.offset, f.grew
	h.mu.Unlock()
	lines, ends, to, err := readLines(path, offset)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		h.log.Warn("cannot read a transcript of a session started by hand", "path", path, "error", err)
		return
	case len(lines) == 0 && to > offset:
		// Only a line too long to keep, or blank ones: passed.
		h.moved(path, offset, to)
		return
	case len(lines) == 0:
		if time.Since(grew) > handIdle {
			h.mu.Lock()
			delete(h.files, path)
			h.mu.Unlock()
			h.log.Info("a session started by hand is let go: its transcript did not change for a day", "path", path)
		}
		return
	}
	if err := h.tools.read(ctx, "", agent, path, offset, to, lines, ends); err != nil {
		if ctx.Err() == nil {
			h.log.Warn("the tool calls of a session started by hand wait; trying again", "path", path, "error", err)
		}
		return
	}
	h.moved(path, offset, to)
}

// moved records path read from offset up to to, unless it moved
// meanwhile.
func (h *handFollower) moved(path string, offset, to int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, ok := h.files[path]; ok && f.offset == offset {
		f.offset, f.grew = to, time.Now()
	}
}

// readLines reads path's whole lines after offset (at most handChunk),
// with where each ends and where the last ends (offset when none).
func readLines(path string, offset int64) (lines [][]byte, ends []int64, to int64, err error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, offset, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, nil, offset, err
	}
	if fi.Size() <= offset {
		return nil, nil, offset, nil // nothing new
	}
	buf := make([]byte, min(fi.Size()-offset, handChunk))
	n, err := file.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, offset, err
	}
	buf = buf[:n]
	last := bytes.LastIndexByte(buf, '\n')
	if last < 0 && n == handChunk {
		// A line longer than a chunk holds no tool call thatch could
		// keep whole: it is passed.
		return nil, nil, skipLine(file, offset, offset+int64(n)), nil
	}
	if last < 0 {
		return nil, nil, offset, nil // no whole line yet
	}
	to = offset
	for _, line := range bytes.Split(buf[:last], []byte{'\n'}) {
		to += int64(len(line)) + 1
		if len(bytes.TrimSpace(line)) > 0 {
			lines, ends = append(lines, line), append(ends, to)
		}
	}
	return lines, ends, to, nil
}

// skipLine is where the line begun at offset and still going on at from
// ends (after its newline), or offset while it does not end yet.
func skipLine(file *os.File, offset, from int64) int64 {
	buf := make([]byte, 64<<10)
	for at := from; ; {
		n, err := file.ReadAt(buf, at)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return at + int64(i) + 1
		}
		if err != nil || n == 0 {
			return offset // read again once it ends
		}
		at += int64(n)
	}
}
