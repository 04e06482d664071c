package front

import (
	"context"
	"hash/fnv"
	"sync"
	"time"
)

// Progress: while the agent works on a message typed into its window and
// has not replied yet, the chat shows that it is working (Telegram's
// "typing" sign, which lasts about five seconds and so is renewed). It
// stops at the agent's reply, when the pane has been still for
// progressQuiet (the agent waits, on a question of its own or done
// without a reply the transcript shows), or after progressMax.
const (
	progressEvery = 4 * time.Second
	progressQuiet = 20 * time.Second
	progressMax   = 30 * time.Minute
)

// progress holds the threads whose agent works on a message.
type progress struct {
	mu     sync.Mutex
	active map[string]*working
}

// working is one thread's agent at work.
type working struct {
	window  string
	since   time.Time
	changed time.Time // the pane last changed
	screen  uint64    // the pane's hash when last looked at
}

// working marks thread's agent at work on a message just typed into
// window.
func (p *progress) working(thread, window string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active == nil {
		p.active = map[string]*working{}
	}
	now := time.Now()
	p.active[thread] = &working{window: window, since: now, changed: now}
}

// replied marks thread's agent done: its reply came.
func (p *progress) replied(thread string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.active, thread)
}

// snapshot lists the threads at work.
func (p *progress) snapshot() map[string]working {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]working, len(p.active))
	for k, w := range p.active {
		out[k] = *w
	}
	return out
}

// seen records what thread's pane shows now; it reports whether the
// agent still counts as at work.
func (p *progress) seen(thread string, screen uint64, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.active[thread]
	if !ok {
		return false
	}
	if screen != w.screen {
		w.screen, w.changed = screen, now
	}
	if now.Sub(w.changed) > progressQuiet || now.Sub(w.since) > progressMax {
		delete(p.active, thread)
		return false
	}
	return true
}

// runProgress shows the typing sign in every thread at work, every
// progressEvery, until ctx ends.
func (f *FrontEnd) runProgress(ctx context.Context) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for thread, w := range f.progress.snapshot() {
			f.showWorking(ctx, thread, w.window)
		}
	}
}

// showWorking looks at the pane of one thread at work and, while the
// agent still counts as working, shows the sign.
func (f *FrontEnd) showWorking(ctx context.Context, thread, window string) {
	cctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	screen, err := f.tmux.Capture(cctx, window, 0)
	if err != nil {
		f.progress.replied(thread) // the window is gone: nothing to wait for
		return
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(screen))
	if !f.progress.seen(thread, h.Sum64(), time.Now()) {
		return
	}
	a, err := f.adapterOf(thread)
	if err != nil {
		return
	}
	if err := a.Typing(cctx, thread); err != nil {
		f.log.Debug("cannot show that the agent works", "thread", thread, "error", err)
	}
}
