package agents

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Session is one session of an agent, as a picker shows it.
type Session struct {
	// ID is the session's id, the one ResumeCommand takes.
	ID string
	// Path is the transcript file; "" for mimo, which keeps its sessions
	// in a database (MimoDB).
	Path string
	// Modified is the transcript's modification time (mimo: the session's
	// time_updated); Sessions orders by it.
	Modified time.Time
	// FirstPrompt is the first thing the user typed, whitespace folded and
	// cut to PromptWidth characters; "" when none was found near the start.
	// A mimo session without one shows its Title instead.
	FirstPrompt string
	// Title is the session's title, where the agent keeps one (mimo:
	// opencode names a session after its first prompt); "" otherwise.
	Title string
}

// Bounds of the codex scan: rollout files are filed by day, not by
// directory, so Sessions reads the newest days only.
const (
	// CodexScanDays is how many day directories (newest first) are read.
	CodexScanDays = 31
	// CodexScanFiles is how many rollout files are opened at most.
	CodexScanFiles = 2000
)

// promptScanLines is how many lines of a transcript are read looking for
// its first prompt.
const promptScanLines = 200

const uuidPattern = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`

var (
	uuidRe          = regexp.MustCompile(uuidPattern)
	claudeFileRe    = regexp.MustCompile(`^(` + uuidPattern + `)\.jsonl$`)
	codexFileRe     = regexp.MustCompile(`^rollout-.*-(` + uuidPattern + `)\.jsonl$`)
	copilotDirRe    = regexp.MustCompile(`^(` + uuidPattern + `)$`)
	errStopReadLine = errors.New("agents: stop")
)

func (a *Agent) claudeRoot() string  { return filepath.Join(a.home, ".claude", "projects") }
func (a *Agent) codexRoot() string   { return filepath.Join(a.home, ".codex", "sessions") }
func (a *Agent) copilotRoot() string { return filepath.Join(a.home, ".copilot", "session-state") }

// ClaudeProjectDirs returns the names Claude Code may have given cwd's
// project directory: every character but ASCII letters and digits turned
// into '-' (what current versions do), and only '/' turned into '-' (what
// the issue describes). They differ only for paths with '.', '_' or other
// punctuation.
func ClaudeProjectDirs(cwd string) []string {
	cwd = filepath.Clean(cwd)
	alnum := strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, cwd)
	slash := strings.ReplaceAll(cwd, "/", "-")
	if slash == alnum {
		return []string{alnum}
	}
	return []string{alnum, slash}
}

// Sessions returns the agent's sessions for the directory cwd, newest
// first, at most limit of them (limit <= 0: all), each with its first
// prompt. A missing session directory is no sessions, not an error.
func (a *Agent) Sessions(cwd string, limit int) ([]Session, error) {
	out, err := a.listSessions(cwd, time.Time{})
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	if a.format == formatMimo {
		a.mimoFirstPrompts(out)
		return out, nil
	}
	for i := range out {
		out[i].FirstPrompt = a.firstPrompt(out[i].Path)
	}
	return out, nil
}

// listSessions returns the agent's sessions for cwd that were written at
// since or later (zero since: all of them), newest first, without their
// first prompts. mimo's are read from its database (one query). A
// transcript is stat'ed, and opened only when it was
// written since then and only where the directory it ran in is recorded
// inside it (codex's session_meta, copilot's session.start); claude's are
// never opened. findNewest polls with it while a launched agent's session
// is looked for, so it must not read every transcript of the directory
// (Sessions reads up to promptScanLines lines of each for its prompt).
func (a *Agent) listSessions(cwd string, since time.Time) ([]Session, error) {
	cwd = filepath.Clean(cwd)
	var out []Session
	var err error
	switch a.format {
	case formatClaude:
		out, err = a.claudeSessions(cwd, since)
	case formatCodex:
		out, err = a.codexSessions(cwd, since)
	case formatCopilot:
		out, err = a.copilotSessions(cwd, since)
	case formatMimo:
		out, err = a.mimoSessions(cwd, since, 0)
	default:
		return nil, fmt.Errorf("%w: %s", ErrNoTranscripts, a.Name)
	}
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Modified.Equal(out[j].Modified) {
			return out[i].Modified.After(out[j].Modified)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// readDir lists dir; a directory that does not exist is empty.
func readDir(dir string) ([]fs.DirEntry, error) {
	es, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agents: list %s: %w", dir, err)
	}
	return es, nil
}

func (a *Agent) claudeSessions(cwd string, since time.Time) ([]Session, error) {
	var out []Session
	seen := map[string]bool{}
	for _, name := range ClaudeProjectDirs(cwd) {
		dir := filepath.Join(a.claudeRoot(), name)
		es, err := readDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			m := claudeFileRe.FindStringSubmatch(e.Name())
			if m == nil || e.IsDir() || seen[m[1]] {
				continue
			}
			if s, ok := statSession(m[1], filepath.Join(dir, e.Name()), since); ok {
				seen[m[1]] = true
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// statSession returns the session whose transcript is path, unless path
// is not a regular file or was last written before since.
func statSession(id, path string, since time.Time) (Session, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.ModTime().Before(since) {
		return Session{}, false
	}
	return Session{ID: id, Path: path, Modified: fi.ModTime()}, true
}

// codexDays returns the day directories under the codex root, newest
// first, at most CodexScanDays.
func (a *Agent) codexDays() ([]string, error) {
	days, err := filepath.Glob(filepath.Join(a.codexRoot(), "[0-9][0-9][0-9][0-9]", "[0-9][0-9]", "[0-9][0-9]"))
	if err != nil {
		return nil, fmt.Errorf("agents: codex days: %w", err)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(days)))
	if len(days) > CodexScanDays {
		days = days[:CodexScanDays]
	}
	return days, nil
}

func (a *Agent) codexSessions(cwd string, since time.Time) ([]Session, error) {
	days, err := a.codexDays()
	if err != nil {
		return nil, err
	}
	var out []Session
	opened := 0
	for _, day := range days {
		es, err := readDir(day)
		if err != nil {
			return nil, err
		}
		for i := len(es) - 1; i >= 0 && opened < CodexScanFiles; i-- {
			m := codexFileRe.FindStringSubmatch(es[i].Name())
			if m == nil || es[i].IsDir() {
				continue
			}
			path := filepath.Join(day, es[i].Name())
			s, ok := statSession(m[1], path, since)
			if !ok {
				continue
			}
			opened++
			if meta, ok := codexMeta(path); ok && filepath.Clean(meta) == cwd {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// codexMeta returns the cwd that a rollout file's session_meta records.
func codexMeta(path string) (string, bool) {
	var cwd string
	found := false
	_ = readLines(path, 4, func(line []byte) error {
		var l codexLine
		if json.Unmarshal(line, &l) == nil && l.Type == "session_meta" && l.Payload != nil {
			cwd, found = l.Payload.Cwd, l.Payload.Cwd != ""
			return errStopReadLine
		}
		return nil
	})
	return cwd, found
}

func (a *Agent) copilotSessions(cwd string, since time.Time) ([]Session, error) {
	root := a.copilotRoot()
	es, err := readDir(root)
	if err != nil {
		return nil, err
	}
	var out []Session
	for _, e := range es {
		m := copilotDirRe.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		s, ok := statSession(m[1], filepath.Join(dir, "events.jsonl"), since)
		if !ok {
			continue
		}
		if got, known := copilotCwd(dir); known && filepath.Clean(got) != cwd {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// copilotCwd returns the directory a copilot session ran in: from the
// session.start event's data.context.cwd, else from workspace.yaml's
// top-level "cwd:" line. known is false when neither records it.
func copilotCwd(dir string) (cwd string, known bool) {
	_ = readLines(filepath.Join(dir, "events.jsonl"), 4, func(line []byte) error {
		var l copilotLine
		if json.Unmarshal(line, &l) == nil && l.Type == "session.start" {
			if l.Data != nil && l.Data.Context != nil && l.Data.Context.Cwd != "" {
				cwd, known = l.Data.Context.Cwd, true
			}
			return errStopReadLine
		}
		return nil
	})
	if known {
		return cwd, true
	}
	b, err := os.ReadFile(filepath.Join(dir, "workspace.yaml"))
	if err != nil || len(b) > MaxLine {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "cwd:"); ok {
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			return v, v != ""
		}
	}
	return "", false
}

func (a *Agent) firstPrompt(path string) string {
	var p string
	_ = readLines(path, promptScanLines, func(line []byte) error {
		if t, ok := a.userPrompt(line); ok {
			p = cutPrompt(t)
			return errStopReadLine
		}
		return nil
	})
	return p
}

// readLines calls fn on each of the first max lines of path, skipping
// (and counting) lines longer than MaxLine. fn stops the read by
// returning an error, which readLines returns unless it is errStopReadLine.
func readLines(path string, max int, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for n := 0; n < max; n++ {
		line, long, err := readLine(br)
		if len(line) > 0 && !long {
			if ferr := fn(bytes.TrimRight(line, "\r\n")); ferr != nil {
				if errors.Is(ferr, errStopReadLine) {
					return nil
				}
				return ferr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
	return nil
}

// readLine reads one line, keeping at most MaxLine bytes of it; long is
// true when the line was longer (and its bytes were discarded).
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > MaxLine+1 {
				long, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, long, err
	}
}

// Transcript returns the path of the transcript of sessionID, the file a
// relay follows. cwd is where to look first; a session filed under another
// directory is still found. An unsafe id or an agent without transcripts
// finds nothing.
func (a *Agent) Transcript(cwd, sessionID string) (string, bool) {
	if !ValidSessionID(sessionID) {
		return "", false
	}
	switch a.format {
	case formatClaude:
		if cwd != "" {
			for _, name := range ClaudeProjectDirs(cwd) {
				p := filepath.Join(a.claudeRoot(), name, sessionID+".jsonl")
				if isFile(p) {
					return p, true
				}
			}
		}
		return firstGlob(filepath.Join(a.claudeRoot(), "*", sessionID+".jsonl"))
	case formatCodex:
		return firstGlob(filepath.Join(a.codexRoot(), "*", "*", "*", "rollout-*-"+sessionID+".jsonl"))
	case formatCopilot:
		p := filepath.Join(a.copilotRoot(), sessionID, "events.jsonl")
		return p, isFile(p)
	}
	return "", false
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// firstGlob returns the newest regular file matching pattern.
func firstGlob(pattern string) (string, bool) {
	ms, _ := filepath.Glob(pattern)
	best, bestT := "", time.Time{}
	for _, m := range ms {
		fi, err := os.Stat(m)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if best == "" || fi.ModTime().After(bestT) {
			best, bestT = m, fi.ModTime()
		}
	}
	return best, best != ""
}

// SessionIDFromPath returns the session id that path names if path has
// the shape of this agent's transcript: claude ".../projects/<dir>/<uuid>.jsonl",
// codex ".../sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl", copilot
// ".../session-state/<uuid>/events.jsonl". Only the shape is checked, not
// the home directory, so a path reported through a symlink still counts.
func (a *Agent) SessionIDFromPath(path string) (string, bool) {
	path = filepath.Clean(path)
	dir, base := filepath.Split(path)
	dir = filepath.Clean(dir)
	switch a.format {
	case formatClaude:
		m := claudeFileRe.FindStringSubmatch(base)
		if m == nil || filepath.Base(filepath.Dir(dir)) != "projects" {
			return "", false
		}
		return m[1], true
	case formatCodex:
		m := codexFileRe.FindStringSubmatch(base)
		if m == nil || filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(dir)))) != "sessions" {
			return "", false
		}
		return m[1], true
	case formatCopilot:
		m := copilotDirRe.FindStringSubmatch(filepath.Base(dir))
		if base != "events.jsonl" || m == nil || filepath.Base(filepath.Dir(dir)) != "session-state" {
			return "", false
		}
		return m[1], true
	}
	return "", false
}
