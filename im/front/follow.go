package front

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/messages"
)

// maxLine is the longest transcript line read; a longer one is skipped
// (an agent's tool output, not a reply anyone reads on a phone).
const maxLine = 1 << 20

// followed is one transcript being followed for one binding: the
// session sessionID of the agent in the window tagged tag.
type followed struct {
	binding string
	agent   string
	offset  int64
	tag     string
	session string
	// ino is the file's inode when it was last read (0 before): another
	// one means the file was replaced, and is read from its start.
	ino uint64
	// resetPending: the file was read from its start again, and the
	// binding is told so with the next delivery.
	resetPending bool
}

// follower follows agents' transcripts with inotify (fsnotify), one
// watcher for all of them, and hands each batch of replies to the binding
// that owns the transcript. It is a reader driven by the bindings' effects
// (IMFollowTranscript, IMStopFollowing on their lanes) and keeps no fact
// of its own: it reads from the offset the binding journaled and answered
// with (messages.IMTranscriptAt), so a restart neither repeats nor loses a
// reply; which binding holds which transcript is the transcript
// registry's (actors/imtranscripts); and which session switch a binding
// was told of is the binding's (messages.IMSwitchSeen).
//
// One goroutine owns the watcher and does every read and delivery; Follow
// and Stop only record what to do and wake it.
type follower struct {
	log   hclog.Logger
	parse func(agent string, line []byte) []messages.IMTurnItem
	// deliver hands m to binding and returns its answer once it has
	// journaled what m made it decide.
	deliver func(ctx context.Context, binding string, m any) (any, error)
	// capture reads a window's pane, for agents that keep no transcript.
	capture func(ctx context.Context, window string) (string, error)
	// tools, when set, is handed every read's complete lines before the
	// binding is: the memory of the agent's session buffers its tool
	// calls (a read handed twice is dropped there by its end offset).
	tools toolsFunc
	panes map[string]*paneFollow // by path ("pane:@3")
	dbs   map[string]*dbFollow   // by path ("db:ses_...")

	mu    sync.Mutex
	files map[string]*followed // by path
	dirs  map[string]int       // watched directories, by how many files in them are followed
	// missing are directories of followed files that could not be watched
	// (not created yet): tried again every poll, read once watched.
	missing map[string]bool
	dirty   map[string]bool // paths to read now
	wake    chan struct{}
	// hookFile is the map the agents' hooks write (see agents.WriteHook);
	// hooksDirty asks for it to be read and compared with what is
	// followed.
	hookFile   string
	hooksDirty bool
	// hookStamp is the hook map's size and time as last read: the poll
	// reads it again when they changed, should the watcher have missed a
	// write (a file system whose events are not told, an overflow).
	hookStamp string

	w    *fsnotify.Watcher
	stop context.CancelFunc
	done chan struct{}
}

// toolsFunc hands the complete lines of a transcript read from from to to
// to the memory of the agent's session (followed for binding), with where
// each line ends.
type toolsFunc func(ctx context.Context, binding, agent, path string, from, to int64, lines [][]byte, ends []int64) error

func newFollower(log hclog.Logger, parse func(string, []byte) []messages.IMTurnItem,
	deliver func(context.Context, string, any) (any, error),
	capture func(context.Context, string) (string, error), hookFile string, tools toolsFunc) (*follower, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if hookFile != "" {
		// The hooks write the map by renaming a new file over it: the
		// directory is watched, not the file.
		dir := filepath.Dir(hookFile)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			w.Close()
			return nil, err
		}
		if err := w.Add(dir); err != nil {
			w.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{log: log, parse: parse, deliver: deliver, capture: capture, panes: map[string]*paneFollow{}, dbs: map[string]*dbFollow{}, files: map[string]*followed{}, dirs: map[string]int{}, missing: map[string]bool{},
		dirty: map[string]bool{}, wake: make(chan struct{}, 1), w: w, stop: cancel, done: make(chan struct{}),
		hookFile: hookFile, tools: tools}
	go f.run(ctx)
	return f, nil
}

// Follow starts (or moves) following path for binding from offset, as
// the transcript of session in the window tagged tag.
func (f *follower) Follow(binding, path, agent string, offset int64, tag, session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.HasPrefix(path, panePrefix) {
		f.followPaneLocked(binding, path, offset)
		return
	}
	if tag != "" && f.hookFile != "" {
		f.hooksDirty = true // the session may have changed while no one looked
	}
	if cur, ok := f.files[path]; ok {
		cur.binding, cur.agent, cur.tag, cur.session = binding, agent, tag, session
		if offset > cur.offset {
			cur.offset = offset
		}
	} else {
		f.files[path] = &followed{binding: binding, agent: agent, offset: offset, tag: tag, session: session}
		dir := filepath.Dir(path)
		if f.dirs[dir] == 0 && !f.missing[dir] {
			if err := f.w.Add(dir); err != nil {
				f.log.Debug("cannot watch a transcript directory yet; trying again", "dir", dir, "error", err)
				f.missing[dir] = true
			}
		}
		f.dirs[dir]++
	}
	f.markLocked(path)
}

// Stop stops following path.
func (f *follower) Stop(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopLocked(path)
}

func (f *follower) stopLocked(path string) {
	delete(f.panes, path)
	delete(f.dbs, path)
	if _, ok := f.files[path]; !ok {
		return
	}
	delete(f.files, path)
	delete(f.dirty, path)
	dir := filepath.Dir(path)
	if f.dirs[dir]--; f.dirs[dir] <= 0 {
		delete(f.dirs, dir)
		if !f.missing[dir] {
			_ = f.w.Remove(dir)
		}
		delete(f.missing, dir)
	}
}

// Count is how many transcripts are followed.
func (f *follower) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.files) + len(f.panes) + len(f.dbs)
}

func (f *follower) markLocked(path string) {
	f.dirty[path] = true
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// watchMissing watches the directories that did not exist before, and
// reads their followed files once they do.
func (f *follower) watchMissing() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for dir := range f.missing {
		if err := f.w.Add(dir); err != nil {
			continue
		}
		delete(f.missing, dir)
		for p := range f.files {
			if filepath.Dir(p) == dir {
				f.markLocked(p)
			}
		}
	}
}

// Close stops the goroutine and the watcher.
func (f *follower) Close() error {
	f.stop()
	<-f.done
	return f.w.Close()
}

func (f *follower) run(ctx context.Context) {
	defer close(f.done)
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	poll := time.NewTicker(panePoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			f.hookChanged()
			f.watchMissing()
			f.pollPanes(ctx)
			f.pollDBs(ctx)
		case ev, ok := <-f.w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create) {
				f.mu.Lock()
				if _, ok := f.files[ev.Name]; ok {
					f.markLocked(ev.Name)
				}
				if ev.Name == f.hookFile {
					f.hooksDirty = true
				}
				f.mu.Unlock()
			}
		case err, ok := <-f.w.Errors:
			if !ok {
				return
			}
			// An overflow loses events, not data: read every file again.
			f.log.Warn("transcript watcher error; reading every transcript again", "error", err)
			f.mu.Lock()
			for p := range f.files {
				f.markLocked(p)
			}
			f.hooksDirty = f.hookFile != ""
			f.mu.Unlock()
		case <-f.wake:
		case <-retry.C:
		}
		// The old transcript's last lines first, then a switch: a reply
		// written before the switch still goes out.
		again := f.drain(ctx)
		if f.checkHooks(ctx) || again {
			retry.Reset(time.Second) // a delivery failed: try again soon
		}
	}
}

// drain reads every dirty file; it reports whether one failed and must
// be read again (by the retry timer, so that a failing delivery does not
// spin).
func (f *follower) drain(ctx context.Context) (again bool) {
	var failed []string
	defer func() {
		f.mu.Lock()
		for _, p := range failed {
			if _, ok := f.files[p]; ok {
				f.dirty[p] = true
			}
		}
		f.mu.Unlock()
	}()
	for ctx.Err() == nil {
		path, item, ok := f.next()
		if !ok {
			break
		}
		r, err := f.read(ctx, path, item)
		if err != nil {
			if ctx.Err() == nil {
				f.log.Warn("cannot relay transcript replies; trying again", "path", path, "error", err)
			}
			failed = append(failed, path)
			continue
		}
		f.mu.Lock()
		if cur, ok := f.files[path]; ok && cur.binding == item.binding {
			switch {
			case r.at != nil && !r.at.Following:
				// The binding follows another transcript now (its
				// IMStopFollowing may not have run yet, or a crash lost
				// it): nothing of this one is read for it any more.
				f.log.Debug("a binding no longer follows a transcript; not reading it", "thread", item.binding, "path", path)
				f.stopLocked(path)
				f.mu.Unlock()
				continue
			case r.at != nil:
				cur.offset = r.at.Offset // the binding's, as it journaled it
			case r.to > cur.offset || r.reset:
				cur.offset = r.to // a replaced or truncated file goes back
			}
			cur.ino = r.ino
			// A reset the binding was not told of yet (nothing complete
			// was read after it) goes with the next delivery.
			cur.resetPending = r.reset && !r.told
			if r.more {
				f.dirty[path] = true
			}
		}
		f.mu.Unlock()
	}
	return len(failed) > 0
}

// next takes one dirty path off the set, with a copy of what is followed.
func (f *follower) next() (string, followed, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for p := range f.dirty {
		delete(f.dirty, p)
		if cur, ok := f.files[p]; ok {
			return p, *cur, true
		}
	}
	return "", followed{}, false
}

// readResult is what one read of a transcript did.
type readResult struct {
	// to is the offset after the lines read; ino the file's inode.
	to  int64
	ino uint64
	// reset: the file was read from its start again (truncated or
	// replaced); told: the binding was told so with a delivery.
	reset, told bool
	// more: a chunk's worth was read; there may be more.
	more bool
	// at is the binding's answer to the delivery (nil when nothing was
	// delivered, or the binding gave none).
	at *messages.IMTranscriptAt
}

// read reads complete lines of path from item.offset (at most a chunk)
// and delivers their replies. A file that is shorter than the offset
// (truncated) or another file than before (replaced by a rename) is read
// from its start, and the binding told so (Reset) with the first delivery
// after it, so that no later reply is lost and none is relayed twice.
func (f *follower) read(ctx context.Context, path string, item followed) (readResult, error) {
	keep := readResult{to: item.offset, ino: item.ino, reset: item.resetPending}
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return keep, nil // not written yet: the directory watch tells when it is
	}
	if err != nil {
		return keep, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return keep, err
	}
	r := readResult{to: item.offset, ino: inode(info), reset: item.resetPending}
	if info.Size() < item.offset || (item.ino != 0 && r.ino != item.ino) {
		f.log.Info("a transcript was truncated or replaced; reading it from its start", "path", path, "offset", item.offset, "size", info.Size())
		r.to, r.reset = 0, true
	}
	from := r.to
	size := info.Size() - from
	if size <= 0 {
		return r, nil
	}
	buf := make([]byte, min(size, 4*maxLine))
	n, err := fh.ReadAt(buf, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return keep, err
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		if n == 4*maxLine {
			// One line longer than the chunk: skip it whole.
			r.to, r.more = from+int64(n), true
		}
		return r, nil // else a partial line: wait for its end
	}
	var items []messages.IMTurnItem
	var ends []int64
	var lines [][]byte
	var lineEnds []int64
	at := from
	for _, line := range bytes.Split(buf[:end], []byte{'\n'}) {
		at += int64(len(line)) + 1
		if len(line) == 0 || len(line) > maxLine {
			continue
		}
		lines, lineEnds = append(lines, line), append(lineEnds, at)
		for _, it := range f.parse(item.agent, line) {
			items = append(items, it)
			ends = append(ends, at)
		}
	}
	r.to, r.more = from+int64(end)+1, n == 4*maxLine
	f.log.Trace("transcript read", "path", path, "from", from, "to", r.to, "items", len(items))
	if f.tools != nil && len(lines) > 0 {
		if err := f.tools(ctx, item.binding, item.agent, path, from, r.to, lines, lineEnds); err != nil {
			return keep, err
		}
	}
	if len(items) > 0 || r.reset {
		dctx, cancel := context.WithTimeout(ctx, deliverTimeout)
		defer cancel()
		ans, err := f.deliver(dctx, item.binding, &messages.IMTranscriptRead{Path: path, From: from, To: r.to, Items: items, ItemEnds: ends, Reset: r.reset})
		if err != nil {
			return keep, err
		}
		r.told = true
		r.at, _ = ans.(*messages.IMTranscriptAt)
	}
	return r, nil
}

// inode is the file's inode number (0 where the system does not say).
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// hookStamp is the size and modification time of the hook map ("" when
// it cannot be read).
func hookStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
}

// hookChanged asks for the hook map to be read when its stamp is not the
// one last read.
func (f *follower) hookChanged() {
	if f.hookFile == "" {
		return
	}
	stamp := hookStamp(f.hookFile)
	f.mu.Lock()
	defer f.mu.Unlock()
	if stamp != f.hookStamp {
		f.hooksDirty = true
	}
}

// checkHooks reads the hook map when a hook wrote it (or a transcript
// started being followed), and tells each binding whose window's agent
// now runs another session than the one followed: claude's /clear starts
// a new session and transcript, /resume goes back to another. It reports
// whether a binding could not be told (and so must be told again).
func (f *follower) checkHooks(ctx context.Context) (again bool) {
	f.mu.Lock()
	if !f.hooksDirty {
		f.mu.Unlock()
		return false
	}
	f.hooksDirty = false
	tagged := false
	for _, it := range f.files {
		tagged = tagged || it.tag != ""
	}
	f.mu.Unlock()
	if !tagged {
		return false
	}
	stamp := hookStamp(f.hookFile) // before the read: a write after it is read again
	hooks, err := agents.ReadHooks(f.hookFile)
	f.mu.Lock()
	f.hookStamp = stamp
	f.mu.Unlock()
	if err != nil {
		f.log.Warn("cannot read the agents' hook map; a session an agent switched to is not followed until it can", "file", f.hookFile, "error", err)
		return false
	}
	// What to tell is decided on what is followed now, not on what was
	// followed before the map was read: a binding may have taken a switch
	// meanwhile, and telling it again would repeat the switch.
	f.mu.Lock()
	tell := f.switchesLocked(hooks)
	f.mu.Unlock()
	for _, t := range tell {
		dctx, cancel := context.WithTimeout(ctx, deliverTimeout)
		_, err := f.deliver(dctx, t.binding, t.msg)
		cancel()
		if err != nil {
			f.log.Warn("cannot tell a binding its agent switched sessions; trying again", "thread", t.binding, "session", t.msg.SessionID, "error", err)
			again = true
			continue
		}
		f.log.Debug("told a binding its agent runs another session", "thread", t.binding, "session", t.msg.SessionID, "source", t.msg.Source)
	}
	if again {
		f.mu.Lock()
		f.hooksDirty = true
		f.mu.Unlock()
	}
	return again
}

// sessionSwitch is one binding to tell that its window's agent switched.
type sessionSwitch struct {
	binding string
	msg     *messages.IMSessionChanged
}

// switchesLocked compares the hook map with what is followed: a window
// whose agent runs a session that no transcript followed under its tag
// carries is a switch. While a binding takes a switch it follows both
// sessions, the old and the new; the new one being followed already means
// there is nothing to tell. A binding told of an entry it took or refused
// before ignores it (messages.IMSwitchSeen), so a switch is told until
// the binding has seen it, not once.
func (f *follower) switchesLocked(hooks map[string]agents.HookEntry) []sessionSwitch {
	type window struct {
		binding, agent string
		sessions       map[string]bool
	}
	byTag := map[string]*window{}
	for _, it := range f.files {
		if it.tag == "" {
			continue
		}
		w := byTag[it.tag]
		if w == nil {
			w = &window{binding: it.binding, agent: it.agent, sessions: map[string]bool{}}
			byTag[it.tag] = w
		}
		w.sessions[it.session] = true
	}
	var tell []sessionSwitch
	for tag, w := range byTag {
		e, ok := hooks[tag]
		if !ok || e.SessionID == "" || w.sessions[e.SessionID] || e.TranscriptPath == "" ||
			(e.Agent != "" && e.Agent != w.agent) {
			continue
		}
		m := &messages.IMSessionChanged{Tag: tag, SessionID: e.SessionID, Transcript: filepath.Clean(e.TranscriptPath), Source: e.Source}
		if !e.Updated.IsZero() {
			m.Updated = e.Updated.UnixMilli()
		}
		if e.Source == "resume" {
			// An earlier session goes on in its own transcript: what it
			// held when it was resumed was relayed (or not) when it was
			// written; what came after is new.
			m.Offset = e.Size
			if m.Offset == 0 {
				m.Offset = fileEnd(m.Transcript)
			}
		}
		tell = append(tell, sessionSwitch{w.binding, m})
	}
	return tell
}
