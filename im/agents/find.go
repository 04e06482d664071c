package agents

import (
	"context"
	"os"
	"time"
)

// The ways FindSession finds a session, in the order it tries them.
const (
	// HowLsof: the agent holds its transcript open (found with lsof, or
	// from /proc/<pid>/fd when lsof is missing).
	HowLsof = "lsof"
	// HowPane: a session id printed in the pane names an existing
	// transcript.
	HowPane = "pane"
	// HowHook: the agent's hook recorded the session for the window.
	HowHook = "hook"
	// HowNewest: the newest transcript for the directory that appeared
	// after the launch and that no other thread follows.
	HowNewest = "newest"
	// HowDB: mimo's database holds one session for the directory updated
	// since the launch.
	HowDB = "db"
)

// FindQuery is what FindSession looks at.
type FindQuery struct {
	// PanePID is the pane's process; its tree's open files are read.
	PanePID int
	// PaneText is the captured pane, for a session id printed on it.
	PaneText string
	// HookFile and WindowKey name the hook map entry of the window.
	HookFile, WindowKey string
	// Dir and Since enable the last step: a transcript for Dir written
	// at Since or later. Zero Since skips it. They are mimo's only step:
	// its one session for Dir updated at Since or later.
	Dir   string
	Since time.Time
	// Taken reports a transcript another thread follows: never taken
	// by the last step. nil: none is.
	Taken func(path string) bool
}

// Found is a session FindSession found.
type Found struct {
	// ID is the session id.
	ID string
	// Path is its transcript; "" when unknown (mimo, or a hook entry
	// without one).
	Path string
	// How is HowLsof, HowPane, HowHook, HowNewest or HowDB.
	How string
}

// FindSession finds the session of agent a running in a pane without
// touching the agent: first the transcript its processes hold open
// (q.PanePID and its descendants), then a session id in q.PaneText whose
// transcript exists, the newest on screen first, then the hook map entry
// for q.WindowKey, and last the newest transcript for q.Dir written since
// q.Since that q.Taken does not claim (claude does not keep its
// transcript open, codex prints no id). mimo's session is read from its
// database only (findMimo): never off its screen, where a UUID is not its
// session's id. Every step that cannot answer (no such process, no lsof,
// no hook file) falls through to the next; ok is false when none answers
// or ctx ends.
func (r *Registry) FindSession(ctx context.Context, a *Agent, q FindQuery) (Found, bool) {
	if a == nil {
		return Found{}, false
	}
	if a.format == formatMimo {
		return r.findMimo(a, q)
	}
	if f, ok := r.findOpen(ctx, a, q.PanePID); ok {
		return f, true
	}
	if ctx.Err() != nil {
		return Found{}, false
	}
	if f, ok := findInPane(a, q.PaneText); ok {
		return f, true
	}
	if f, ok := r.findHook(a, q.HookFile, q.WindowKey); ok {
		return f, true
	}
	return r.findNewest(a, q)
}

// findHook reads the hook map entry of the window.
func (r *Registry) findHook(a *Agent, hookFile, windowKey string) (Found, bool) {
	if hookFile == "" || windowKey == "" {
		return Found{}, false
	}
	e, ok, err := ReadHook(hookFile, windowKey)
	if err != nil {
		r.logger.Debug("hook map unreadable", "file", hookFile, "error", err)
		return Found{}, false
	}
	if !ok || !ValidSessionID(e.SessionID) || (e.Agent != "" && e.Agent != a.Name) {
		return Found{}, false
	}
	if e.TranscriptPath != "" && a.HasTranscript() {
		if _, ok := a.SessionIDFromPath(e.TranscriptPath); !ok {
			return Found{}, false // another agent's transcript: a stale entry
		}
	}
	return Found{ID: e.SessionID, Path: e.TranscriptPath, How: HowHook}, true
}

// findNewest takes the transcript for the directory that was made since
// the launch and that no other thread follows, when there is exactly one:
// a session of the user's own in the same directory (an older file,
// written to now) is never taken, and of two new ones it cannot tell
// which is this window's.
func (r *Registry) findNewest(a *Agent, q FindQuery) (Found, bool) {
	if q.Since.IsZero() || q.Dir == "" || !a.HasTranscript() {
		return Found{}, false
	}
	list, err := a.listSessions(q.Dir, q.Since) // stat only: no prompts read
	if err != nil {
		r.logger.Debug("cannot list the agent's sessions", "agent", a.Name, "dir", q.Dir, "error", err)
		return Found{}, false
	}
	var found []Found
	for _, s := range list {
		if born, ok := birthTime(s.Path); ok && born.Before(q.Since) {
			continue // an older session, written to now
		}
		if q.Taken != nil && q.Taken(s.Path) {
			continue
		}
		found = append(found, Found{ID: s.ID, Path: s.Path, How: HowNewest})
	}
	if len(found) != 1 {
		if len(found) > 1 {
			r.logger.Debug("several new transcripts for the directory; taking none", "agent", a.Name, "dir", q.Dir, "count", len(found))
		}
		return Found{}, false
	}
	return found[0], true
}

// findOpen looks for a transcript of a among the files the pane's
// processes hold open; of several, the most recently written wins.
func (r *Registry) findOpen(ctx context.Context, a *Agent, panePID int) (Found, bool) {
	if !a.HasTranscript() || panePID <= 0 || r.openMode == OpenFilesOff {
		return Found{}, false
	}
	tree, err := ProcTree(panePID)
	if err != nil {
		r.logger.Debug("pane process tree unreadable", "pid", panePID, "error", err)
		return Found{}, false
	}
	pids := make([]int, len(tree))
	for i, p := range tree {
		pids[i] = p.PID
	}
	paths := r.openFiles(ctx, pids)
	var best Found
	var bestMod int64
	for _, p := range paths {
		id, ok := a.SessionIDFromPath(p)
		if !ok {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if m := fi.ModTime().UnixNano(); best.ID == "" || m > bestMod {
			best, bestMod = Found{ID: id, Path: p, How: HowLsof}, m
		}
	}
	return best, best.ID != ""
}

// findInPane takes the UUIDs in text from the last (the newest output) to
// the first, and returns the first whose transcript exists.
func findInPane(a *Agent, text string) (Found, bool) {
	ids := uuidRe.FindAllString(text, -1)
	seen := map[string]bool{}
	for i := len(ids) - 1; i >= 0; i-- {
		id := ids[i]
		if seen[id] {
			continue
		}
		seen[id] = true
		if p, ok := a.Transcript("", id); ok {
			return Found{ID: id, Path: p, How: HowPane}, true
		}
	}
	return Found{}, false
}
