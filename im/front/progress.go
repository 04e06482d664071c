package front

import (
	"context"
	"errors"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/thatch-run/thatch/im/agents"
	"github.com/thatch-run/thatch/im/tmux"
	"github.com/thatch-run/thatch/messages"
)

// Progress: while the agent works on a message typed into its window and
// has not replied yet, the chat shows that it is working (Telegram's
// "typing" sign, which lasts about five seconds and so is renewed every
// signEvery), and the window's screen is looked at every progressEvery
// for a prompt of the agent's own (a permission dialog): one found is
// shown in the chat with its options as buttons, and a prompt that went
// away is closed there. Watching stops at the agent's reply, when the
// pane has been still for progressQuiet with no prompt on it (done
// without a reply the transcript shows), or after progressMax. Threads
// not at work cost nothing.
const (
	progressEvery = time.Second
	signEvery     = 4 * time.Second
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
	window, agent string
	since         time.Time
	changed       time.Time // the pane last changed
	screen        uint64    // the pane's hash when last looked at
	signed        time.Time // the typing sign last shown
	// prompt is the fingerprint of the agent's prompt the binding was
	// told of, while it is on screen.
	prompt string
}

// working marks thread's agent at work on a message just typed into
// window (or a prompt just answered there).
func (p *progress) working(thread, window, agent string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active == nil {
		p.active = map[string]*working{}
	}
	now := time.Now()
	p.active[thread] = &working{window: window, agent: agent, since: now, changed: now}
}

// replied marks thread's agent done: its reply came. A thread whose
// screen shows a prompt the binding was told of stays watched (a reply
// can come just before the prompt, or while it waits): its prompt's end
// is seen and told, so that its buttons go.
func (p *progress) replied(thread string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.active[thread]; ok && w.prompt != "" {
		return
	}
	delete(p.active, thread)
}

// drop forgets a thread (its window is gone) and returns the prompt the
// binding was told of ("" none).
func (p *progress) drop(thread string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	shown := ""
	if w, ok := p.active[thread]; ok {
		shown = w.prompt
	}
	delete(p.active, thread)
	return shown
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

// look is what one look at a thread's screen decided.
type look struct {
	atWork bool   // the agent still counts as at work
	sign   bool   // show the typing sign now
	shown  string // the prompt the binding was told of before ("" none)
}

// seen records what thread's pane shows now (its hash, and the
// fingerprint of the prompt on it, "" for none).
func (p *progress) seen(thread string, screen uint64, prompt string, now time.Time) look {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.active[thread]
	if !ok {
		return look{}
	}
	if screen != w.screen {
		w.screen, w.changed = screen, now
	}
	l := look{atWork: true, shown: w.prompt}
	w.prompt = prompt
	if (prompt == "" && now.Sub(w.changed) > progressQuiet) || now.Sub(w.since) > progressMax {
		delete(p.active, thread)
		l.atWork = false
		return l
	}
	if prompt == "" && now.Sub(w.signed) >= signEvery {
		w.signed, l.sign = now, true
	}
	return l
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
			f.showWorking(ctx, thread, w.window, w.agent)
		}
	}
}

// showWorking looks at the pane of one thread at work: a prompt of the
// agent's own that appeared or went away is told to the binding, and
// while the agent works with no prompt open, the sign is shown.
func (f *FrontEnd) showWorking(ctx context.Context, thread, window, agent string) {
	cctx, cancel := context.WithTimeout(ctx, effectTimeout)
	defer cancel()
	screen, err := f.wins.Capture(cctx, window, 0)
	if errors.Is(err, tmux.ErrNoWindow) {
		// The window is gone: nothing to wait for.
		if shown := f.progress.drop(thread); shown != "" {
			f.tellBinding(cctx, thread, &messages.IMAgentPromptGone{Fingerprint: shown})
		}
		return
	}
	if err != nil {
		f.log.Debug("cannot look at a working agent's window; looking again", "thread", thread, "error", err)
		return
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(screen))
	pr, found := Prompt{}, false
	if a, ok := f.agents.Get(agent); ok {
		pr, found = a.FindPrompt(screen)
	}
	fp := ""
	if found {
		fp = pr.Fingerprint
	}
	l := f.progress.seen(thread, h.Sum64(), fp, time.Now())
	switch {
	case found && fp != l.shown:
		f.tellPrompt(cctx, thread, pr)
	case !found && l.shown != "":
		f.tellBinding(cctx, thread, &messages.IMAgentPromptGone{Fingerprint: l.shown})
	}
	if !l.sign {
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
func (f *FrontEnd) tellBinding(ctx context.Context, thread string, m any) {
	if err := f.tree.DeliverContext(ctx, bindingID(thread), m, deliverTimeout); err != nil {
		f.log.Warn("cannot tell a binding what its agent's screen shows", "thread", thread, "error", err)
	}
}
