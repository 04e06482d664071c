package front

import (
	"context"
	"errors"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/tmux"
	"github.com/thatch-run/thatch/messages"
)

// Progress: the screen watcher. What it watches is the bindings' to say:
// a binding whose agent is at work (imbinding's State.Work) releases an
// IMWatchPane whenever what is to be watched changes (the work, the
// window, the agent, the prompt the chat shows), and the watcher keeps
// the newest one per thread. For each, it
//   - looks at the window's screen when it changed: tmux reports each
//     pane's output as it reads it (tmux.Client.OnActivity), so a look
//     comes lookSettle after a change, at most once per lookGap; a window
//     whose changes cannot be reported (on a borrowed server, or while
//     thatch's has no control-mode client) is looked at every pollEvery;
//   - tells the binding of a prompt of the agent's own on the screen
//     other than the one the chat shows (IMAgentPrompt), and of the one
//     it shows gone (IMAgentPromptGone): the binding decides, and its
//     next IMWatchPane says what the chat shows now;
//   - shows the chat that the agent works (Telegram's "typing" sign, which
//     lasts about five seconds, renewed every signEvery) while the pane
//     changed within signEvery and no prompt is shown;
//   - tells the binding that the agent stopped (IMAgentIdle) when the
//     pane stayed still for progressQuiet with no prompt shown, or the
//     window is gone.
//
// Threads not at work cost nothing, and a thread at work whose screen is
// still costs no capture.
const (
	lookSettle    = 30 * time.Millisecond
	lookGap       = 150 * time.Millisecond
	pollEvery     = time.Second
	signEvery     = 4 * time.Second
	progressQuiet = 20 * time.Second
)

// watcher holds the watches, by thread.
type watcher struct {
	mu      sync.Mutex
	threads map[string]*watched
	panes   map[string]string // a watched pane of thatch's server -> its thread
	windows map[string]string // a watched window -> its thread
	gen     uint64            // the activity feed's count last seen
	kick    chan struct{}     // wakes the watch loop (one slot)
	now     func() time.Time  // the clock of tmux's reports
}

// watched is one thread's watch.
type watched struct {
	w       messages.IMWatchPane // as the binding last released it
	own     bool                 // on thatch's server, whose activity tmux reports
	pane    string               // its pane's id, once read
	changed time.Time            // the screen last changed (or the watch began)
	dirty   bool                 // it changed since the last look
	looked  time.Time
	screen  uint64 // the screen's hash at the last look
	hashed  bool   // screen is set
	signed  time.Time
	idle    bool // the binding was told the agent stopped
}

func newWatcher() *watcher {
	return &watcher{threads: map[string]*watched{}, panes: map[string]string{}, windows: map[string]string{},
		kick: make(chan struct{}, 1), now: time.Now}
}

func (wr *watcher) wake() {
	select {
	case wr.kick <- struct{}{}:
	default:
	}
}

// set takes a binding's IMWatchPane: a new watch, the same one with
// another prompt shown, or (Since 0) the end of the watch.
func (wr *watcher) set(thread string, e *messages.IMWatchPane, now time.Time) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	t, ok := wr.threads[thread]
	if ok && (e.Since == 0 || e.WindowID != t.w.WindowID || e.Since != t.w.Since) {
		delete(wr.panes, t.pane)
		delete(wr.windows, t.w.WindowID)
		delete(wr.threads, thread)
		ok = false
	}
	switch {
	case e.Since == 0:
		return
	case ok:
		t.w = *e
		return
	}
	socket, _ := splitRef(e.WindowID)
	wr.threads[thread] = &watched{w: *e, own: socket == "", changed: now, dirty: true}
	wr.windows[e.WindowID] = thread
	wr.wake()
}

// active takes tmux's report of a pane that wrote output, or a window
// that closed (tmux.Client.OnActivity). It is called from the tmux
// client's reader: it only marks the watch.
func (wr *watcher) active(id string) {
	wr.mu.Lock()
	thread, ok := wr.panes[id]
	if !ok {
		thread, ok = wr.windows[id]
	}
	if t := wr.threads[thread]; ok && t != nil {
		t.changed, t.dirty = wr.now(), true
	}
	wr.mu.Unlock()
	if ok {
		wr.wake()
	}
}

// job is one thing the watch loop does for a thread.
type job struct {
	thread string
	w      messages.IMWatchPane
	own    bool
	pane   string
}

// round is what is due now.
type round struct {
	looks, idle []job
	signs       []string
	next        time.Time // when something is due next
}

// due decides what is due at now. gen and live are the activity feed's
// (tmux.Client.ActivityFeed): a new gen means changes may have been
// missed, so every watch is looked at again.
func (wr *watcher) due(now time.Time, gen uint64, live bool) round {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	r := round{next: now.Add(pollEvery)}
	soon := func(at time.Time) {
		if at.Before(r.next) {
			r.next = at
		}
	}
	missed := gen != wr.gen
	wr.gen = gen
	for thread, t := range wr.threads {
		j := job{thread: thread, w: t.w, own: t.own, pane: t.pane}
		if missed {
			t.dirty = true
		}
		polled := !live || !t.own || t.pane == ""
		at := maxTime(t.changed.Add(lookSettle), t.looked.Add(lookGap))
		if polled {
			at = t.looked.Add(pollEvery)
		}
		switch {
		case !polled && !t.dirty:
		case !now.Before(at):
			t.dirty, t.looked = false, now
			r.looks = append(r.looks, j)
		default:
			soon(at)
		}
		if t.idle || t.w.Shown != "" {
			continue
		}
		if still := now.Sub(t.changed); still >= progressQuiet {
			t.idle = true
			r.idle = append(r.idle, j)
			continue
		}
		soon(t.changed.Add(progressQuiet))
		if now.Sub(t.changed) >= signEvery {
			continue // still: a sign waits for the next change
		}
		if now.Sub(t.signed) >= signEvery {
			t.signed = now
			r.signs = append(r.signs, thread)
		}
		if renew := t.signed.Add(signEvery); renew.Before(t.changed.Add(signEvery)) {
			soon(renew)
		}
	}
	return r
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// of returns j's watch, if it is still the one j was made for; wr.mu is
// held.
func (wr *watcher) of(j job) *watched {
	t := wr.threads[j.thread]
	if t == nil || t.w.Since != j.w.Since || t.w.WindowID != j.w.WindowID {
		return nil
	}
	return t
}

// paneRead records the id of the pane of j's window, whose output tmux
// then reports.
func (wr *watcher) paneRead(j job, pane string) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if t := wr.of(j); t != nil && t.pane == "" && pane != "" {
		t.pane = pane
		wr.panes[pane] = j.thread
	}
}

// looked records the hash of the screen a look at j's window saw: where
// tmux cannot report changes, a new hash is how a change is seen.
func (wr *watcher) looked(j job, screen uint64, now time.Time) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	t := wr.of(j)
	if t == nil {
		return
	}
	if t.hashed && screen != t.screen {
		t.changed = now
	}
	t.screen, t.hashed = screen, true
}

// gone records that j's window is gone: the binding is told once.
func (wr *watcher) gone(j job) bool {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	t := wr.of(j)
	if t == nil || t.idle {
		return false
	}
	t.idle = true
	return true
}

// untold records that the binding could not be told j's agent stopped:
// it is told again when that is due again.
func (wr *watcher) untold(j job) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if t := wr.of(j); t != nil {
		t.idle = false
	}
}

// watchPane takes a binding's IMWatchPane, on the binding's watch lane, in
// the order the binding released them.
func (f *FrontEnd) watchPane(_ context.Context, from actors.Identity, e *messages.IMWatchPane) any {
	f.watch.set(from.ID, e, time.Now())
	return nil
}

// runWatch runs the watches until ctx ends; signs are shown by runSigns,
// so that a slow chat holds up no look.
func (f *FrontEnd) runWatch(ctx context.Context, signs chan<- string) {
	timer := time.NewTimer(pollEvery)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.watch.kick:
		case <-timer.C:
		}
		gen, live := f.tmux.ActivityFeed()
		r := f.watch.due(time.Now(), gen, live)
		for _, j := range r.idle {
			if f.tellBinding(ctx, j.thread, &messages.IMAgentIdle{Since: j.w.Since, Why: messages.AgentIdleQuiet}) != nil {
				f.watch.untold(j)
			}
		}
		for _, j := range r.looks {
			f.look(ctx, j)
		}
		for _, thread := range r.signs {
			select {
			case signs <- thread:
			default: // a sign is a hint: none is better than a late one
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(max(time.Until(r.next), time.Millisecond))
	}
}

// runSigns shows the typing sign in the threads sent on signs, until ctx
// ends.
func (f *FrontEnd) runSigns(ctx context.Context, signs <-chan string) {
	for {
		select {
		case <-ctx.Done():
			return
		case thread := <-signs:
			a, err := f.adapterOf(thread)
			ty, ok := a.(chat.Typer)
			if err != nil || !ok {
				continue // a platform with no such sign
			}
			cctx, cancel := context.WithTimeout(ctx, effectTimeout)
			if err := ty.Typing(cctx, thread); err != nil {
				f.log.Debug("cannot show that the agent works", "thread", thread, "error", err)
			}
			cancel()
		}
	}
}

// look captures the screen of one watched window and tells its binding
// what it shows that the binding does not know.
func (f *FrontEnd) look(ctx context.Context, j job) {
	cctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	if j.own && j.pane == "" {
		// Its pane's id, so that tmux's reports of its output find it:
		// read before the capture, so that no change after it is missed.
		if w, err := f.wins.Window(cctx, j.w.WindowID); err == nil {
			f.watch.paneRead(j, w.Pane)
		}
	}
	screen, err := f.wins.Capture(cctx, j.w.WindowID, 0)
	if errors.Is(err, tmux.ErrNoWindow) {
		if f.watch.gone(j) && f.tellBinding(cctx, j.thread, &messages.IMAgentIdle{Since: j.w.Since, Why: messages.AgentIdleGone}) != nil {
			f.watch.untold(j)
		}
		return
	}
	if err != nil {
		f.log.Debug("cannot look at a working agent's window; looking again", "thread", j.thread, "error", err)
		return
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(screen))
	f.watch.looked(j, h.Sum64(), time.Now())
	pr, found := Prompt{}, false
	if a, ok := f.agents.Get(j.w.Agent); ok {
		pr, found = a.FindPrompt(screen)
	}
	switch {
	case found && pr.Fingerprint != j.w.Shown:
		f.tellPrompt(cctx, j.thread, pr)
	case !found && j.w.Shown != "":
		f.tellBinding(cctx, j.thread, &messages.IMAgentPromptGone{Fingerprint: j.w.Shown})
	}
}

// Prompt is an agent's prompt as im/agents finds it.
type Prompt = agents.Prompt

// tellPrompt tells the binding of a prompt on its agent's screen.
func (f *FrontEnd) tellPrompt(ctx context.Context, thread string, pr Prompt) {
	text := strings.Join(append(append([]string(nil), pr.Context...), pr.Question), "\n")
	m := &messages.IMAgentPrompt{Fingerprint: pr.Fingerprint, Text: text}
	for _, o := range pr.Options {
		label := o.Label
		if o.Detail != "" {
			label += " (" + strings.ReplaceAll(o.Detail, "\n", " ") + ")"
		}
		m.Options = append(m.Options, messages.IMAgentOption{Label: label, Keys: o.Keys})
	}
	f.log.Debug("the agent shows a prompt", "thread", thread, "question", pr.Question, "options", len(pr.Options))
	f.tellBinding(ctx, thread, m)
}

// tellBinding delivers what the screen showed to a thread's binding.
func (f *FrontEnd) tellBinding(ctx context.Context, thread string, m any) error {
	err := f.tree.DeliverContext(ctx, bindingID(thread), m, deliverTimeout)
	if err != nil && ctx.Err() == nil {
		f.log.Warn("cannot tell a binding what its agent's screen shows", "thread", thread, "error", err)
	}
	return err
}
