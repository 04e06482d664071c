package imbinding

import (
	"github.com/thatch-run/thatch/messages"
)

// recovered re-issues what a crash may have cut short: unsent chat
// messages, the transcript follower, a window check for queued messages,
// and the effect of the flow's current step.
func (p *plan) recovered() {
	s := p.S
	p.sendHead() // nothing is in flight after a restart
	p.recoveredWork()
	p.recoveredTurn()
	if s.Transcript != "" && s.Bound() {
		p.Effect(&messages.IMFollowTranscript{Path: s.Transcript, Agent: s.Info.AgentType, Offset: s.Offset, Tag: s.Tag, SessionID: s.Info.SessionID})
	}
	if s.Prompt != nil && s.Prompt.Kind == PromptRename {
		p.timer(timerRename, p.k.cfg.RenameTimeout)
	}
	if s.lookingForSession() {
		p.timer(timerFind, findRetry)
	}
	if s.Phase == PhaseBound && len(s.Queue) > 0 {
		p.Event(&messages.IMResumed{})
		p.Effect(p.check())
	}
	if s.Setup == nil || (s.Phase != PhaseSetup && s.Phase != PhaseRecovering) {
		return
	}
	st := s.Setup
	switch st.Step {
	case StepDir:
		if s.Prompt == nil {
			p.Effect(&messages.IMListDirectory{Path: st.Dir})
		}
	case StepWindow:
		p.Effect(st.createWindow(s))
	case StepSessions:
		p.Effect(&messages.IMListAgentSessions{Agent: st.Agent, Dir: st.Dir})
	case StepLaunch:
		p.Effect(st.launch())
	case StepFind:
		p.Effect(st.find())
	case StepWindows:
		if s.Prompt == nil {
			p.Effect(&messages.IMListFreeWindows{})
		}
	case StepAdopt:
		p.Effect(&messages.IMAdoptWindow{WindowID: st.Window, Tag: st.Tag, Name: s.Name()})
	}
}

// recoveredEnded sends what an ended binding said after it ended and was
// not sent yet, and kills, again, its window when that was to be killed:
// a crash may have cut the kill short (the tag check makes it a no-op
// when the window is gone).
func (p *plan) recoveredEnded() {
	p.sendHead() // what it said after it ended
	if s := p.S; s.Ended != nil && s.Ended.WindowClosed && s.Window.WindowID != "" {
		p.Effect(s.closeWindow())
	}
}
