package imbinding

import (
	"time"

	"github.com/thatch-run/thatch/messages"
)

// The agent at work. A message typed and taken, or a prompt of the
// agent's answered from the chat, sets the agent to work (State.Work):
// while it works, the front end's screen watcher looks at its window for
// a prompt of its own (a permission dialog) and shows the chat that it
// works. What the watcher is to watch is this state's, and only this
// state's: every decision that changes it (the work, the window, the
// agent, the prompt the chat shows) releases an IMWatchPane with the new
// one (watchChanged), and the watcher reports back what it sees (a
// prompt, a prompt gone, the agent idle). So the prompt the chat shows has
// one fingerprint, Asked's, and a restart resumes the watch (Recovered).
//
// The work ends when the watcher sees the window stay still with no
// prompt (IMAgentIdle), or the window go, or after workMax: a reply in the
// transcript does not end it, since the agent may go on and ask.

// workMax bounds one piece of work's watch.
const workMax = 30 * time.Minute

// timerWork ends the work at workMax.
const timerWork = "work"

// workStarted sets the agent to work now.
func (p *plan) workStarted() {
	p.Event(&messages.IMWorkStarted{At: p.now.UnixMilli()})
	p.timer(timerWork, workMax)
}

// agentIdle ends the work the watcher saw stop. A report of other work
// (the watcher's view is behind) tells the watcher the current one again.
func (p *plan) agentIdle(m *messages.IMAgentIdle) {
	s := p.S
	if s.Work == 0 || m.Since != s.Work {
		p.Effect(s.watch())
		return
	}
	if a := s.Asked; m.Why == messages.AgentIdleGone && a != nil && !a.Pending {
		p.closeAsk()
	}
	p.Event(&messages.IMWorkEnded{})
}

// workTimer ends work that reached workMax.
func (p *plan) workTimer() {
	s := p.S
	if s.Work == 0 {
		return
	}
	if left := workMax - p.now.Sub(time.UnixMilli(s.Work)); left > 0 {
		p.timer(timerWork, left)
		return
	}
	p.Event(&messages.IMWorkEnded{})
}

// recoveredWork resumes the watch of work under way at a restart (its
// timer did not survive it).
func (p *plan) recoveredWork() {
	if p.S.Work == 0 {
		return
	}
	p.workTimer()
	if w := p.S.watch(); w.Since != 0 {
		p.Effect(w)
	}
}

// watch is what the screen watcher is to watch for s: the zero value
// when nothing (no work, or no window of a bound agent).
func (s *State) watch() *messages.IMWatchPane {
	if s.Work == 0 || !s.Bound() || s.Phase == PhaseEnded {
		return &messages.IMWatchPane{}
	}
	w := &messages.IMWatchPane{WindowID: s.Window.WindowID, Agent: s.Info.AgentType, Since: s.Work}
	if s.Asked != nil {
		w.Shown = s.Asked.Fingerprint
	}
	return w
}

// watchChanged tells the watcher what to watch when the decision changed
// it from what it was for before.
func (p *plan) watchChanged(before *State) {
	if was, now := before.watch(), p.S.watch(); *was != *now {
		p.Effect(now)
	}
}

// applyWork applies the work's events to n, a copy of the state.
func applyWork(n *State, ev any) bool {
	switch e := ev.(type) {
	case *messages.IMWorkStarted:
		n.Work = e.At
	case *messages.IMWorkEnded:
		n.Work = 0
	default:
		return false
	}
	return true
}
