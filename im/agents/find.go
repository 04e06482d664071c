package agents

import (
	"context"
	"os"
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
)

// Found is a session FindSession found.
type Found struct {
	// ID is the session id.
	ID string
	// Path is its transcript; "" when unknown (mimo, or a hook entry
	// without one).
	Path string
	// How is HowLsof, HowPane or HowHook.
	How string
}

// FindSession finds the session of agent a running in a pane without
// touching the agent: first the transcript its processes hold open
// (panePID and its descendants), then a session id in paneText (the
// captured pane) whose transcript exists, the newest on screen first, then
// the hook map entry for windowKey in hookFile. For an agent without
// transcripts (mimo) the last id on screen is taken as it is. Every step
// that cannot answer (no such process, no lsof, no hook file) falls through
// to the next; ok is false when none answers or ctx ends.
func (r *Registry) FindSession(ctx context.Context, a *Agent, panePID int, paneText, hookFile, windowKey string) (Found, bool) {
	if a == nil {
		return Found{}, false
	}
	if f, ok := r.findOpen(ctx, a, panePID); ok {
		return f, true
	}
	if ctx.Err() != nil {
		return Found{}, false
	}
	if f, ok := findInPane(a, paneText); ok {
		return f, true
	}
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
		if !a.HasTranscript() {
			return Found{ID: id, How: HowPane}, true
		}
		if p, ok := a.Transcript("", id); ok {
			return Found{ID: id, Path: p, How: HowPane}, true
		}
	}
	return Found{}, false
}
