package front

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/thatch-run/thatch/messages"
)

// Following a pane is the fallback for an agent that keeps no transcript
// (mimo) while its session is not in its database (dbfollow.go): the
// follower captures the window's pane once a second and
// relays the lines that appeared since, once they have stopped changing
// (the agent finished writing). It is a poll, and the reply holds what the
// pane shows (the echo of the user's text included): only agents without
// a transcript take this road.

// panePrefix marks a "transcript" that is a window's pane: "pane:@3".
const panePrefix = "pane:"

// panePoll is how often a followed pane is captured.
const panePoll = time.Second

// paneLines is how much of a pane's history each capture reads.
const paneLines = 200

// paneFollow is one pane being followed. count is the binding's offset:
// one per delivery, so a reply is journaled once.
type paneFollow struct {
	binding string
	count   int64
	last    []string // the previous capture; nil until the first
	pending []string // new lines not delivered yet
	quiet   bool     // the pending lines were already there last poll
}

func (f *follower) followPaneLocked(binding, path string, offset int64) {
	if cur, ok := f.panes[path]; ok {
		cur.binding = binding
		cur.count = max(cur.count, offset)
		return
	}
	f.panes[path] = &paneFollow{binding: binding, count: offset}
}

// baseline records what a followed pane shows now, before anything is
// typed into it, so that a reply that comes before the first poll is new.
func (f *follower) baseline(ctx context.Context, path string) {
	if f.capture == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, effectTimeout)
	text, err := f.capture(cctx, strings.TrimPrefix(path, panePrefix))
	cancel()
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.panes[path]; ok && p.last == nil {
		p.last = screenLines(text)
	}
}

// pollPanes captures every followed pane and delivers settled new lines.
func (f *follower) pollPanes(ctx context.Context) {
	if f.capture == nil {
		return
	}
	f.mu.Lock()
	paths := slices.Collect(maps.Keys(f.panes))
	f.mu.Unlock()
	for _, path := range paths {
		if ctx.Err() != nil {
			return
		}
		f.pollPane(ctx, path)
	}
}

func (f *follower) pollPane(ctx context.Context, path string) {
	cctx, cancel := context.WithTimeout(ctx, effectTimeout)
	text, err := f.capture(cctx, strings.TrimPrefix(path, panePrefix))
	cancel()
	if err != nil {
		return // the window is gone; its binding finds out at the next message
	}
	lines := screenLines(text)
	f.mu.Lock()
	p, ok := f.panes[path]
	if !ok {
		f.mu.Unlock()
		return
	}
	if p.last == nil {
		p.last = lines // what was there before: not a reply
		f.mu.Unlock()
		return
	}
	if fresh := newLines(p.last, lines); len(fresh) > 0 {
		p.pending = append(p.pending, fresh...)
		p.quiet = false
	} else if len(p.pending) > 0 {
		p.quiet = true
	}
	p.last = lines
	if !p.quiet || len(p.pending) == 0 {
		f.mu.Unlock()
		return
	}
	m := &messages.IMTranscriptRead{Path: path, From: p.count, To: p.count + 1, Replies: []string{strings.Join(p.pending, "\n")},
		Ends: []int64{p.count + 1}}
	binding := p.binding
	f.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, deliverTimeout)
	defer cancel()
	if _, err := f.deliver(dctx, binding, m); err != nil {
		f.log.Warn("cannot relay a pane's new lines; trying again", "path", path, "error", err)
		return
	}
	f.mu.Lock()
	if p, ok := f.panes[path]; ok {
		p.count, p.pending, p.quiet = m.To, nil, false
	}
	f.mu.Unlock()
}

// screenLines splits a capture into lines without the blank tail.
func screenLines(text string) []string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// newLines returns the lines of cur after the end of old: it finds old's
// last two lines in cur (searching from the end) and returns what follows.
// A screen that scrolled past all of old is new as a whole.
func newLines(old, cur []string) []string {
	if len(old) == 0 {
		return cur
	}
	lastOld := old[len(old)-1]
	for i := len(cur) - 1; i >= 0; i-- {
		if cur[i] != lastOld {
			continue
		}
		if len(old) > 1 && i > 0 && cur[i-1] != old[len(old)-2] {
			continue
		}
		return cur[i+1:]
	}
	if len(cur) > 0 && len(cur) <= len(old) {
		return nil // redrawn, not grown
	}
	return cur
}
