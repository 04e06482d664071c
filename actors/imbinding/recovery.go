package imbinding

import (
	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// recovered re-issues what a crash may have cut short: unsent chat
// messages, the transcript follower, a window check for queued messages,
// and the effect of the flow's current step.
func (p *plan) recovered() {
	s := p.s
	p.sendHead() // nothing is in flight after a restart
	p.recoveredWork()
	if s.Transcript != "" && s.Bound() {
		p.effect(&messages.IMFollowTranscript{Path: s.Transcript, Agent: s.Info.AgentType, Offset: s.Offset, Tag: s.Tag, SessionID: s.Info.SessionID})
	}
	if s.Prompt != nil && s.Prompt.Kind == PromptRename {
		p.effect(&actors.StartTimer{Name: timerRename, After: p.k.cfg.RenameTimeout})
	}
	if s.lookingForSession() {
		p.effect(&actors.StartTimer{Name: timerFind, After: findRetry})
	}
	if s.Phase == PhaseBound && len(s.Queue) > 0 {
		p.event(&messages.IMResumed{})
		p.effect(p.check())
	}
	if s.Setup == nil || (s.Phase != PhaseSetup && s.Phase != PhaseRecovering) {
		return
	}
	st := s.Setup
	switch st.Step {
	case StepDir:
		if s.Prompt == nil {
			p.effect(&messages.IMListDirectory{Path: st.Dir})
		}
	case StepWindow:
		name := s.Name()
		if s.Phase == PhaseRecovering {
			name = s.Chat.DisplayName
		}
		p.effect(&messages.IMCreateWindow{Tag: st.Tag, Name: name, Dir: st.Dir})
	case StepSessions:
		p.effect(&messages.IMListAgentSessions{Agent: st.Agent, Dir: st.Dir})
	case StepLaunch:
		p.effect(st.launch())
	case StepFind:
		p.effect(st.find())
	case StepWindows:
		if s.Prompt == nil {
			p.effect(&messages.IMListFreeWindows{})
		}
	case StepAdopt:
		p.effect(&messages.IMAdoptWindow{WindowID: st.Window, Tag: st.Tag, Name: s.Name()})
	}
}

// recoveredEnded sends what an ended binding said after it ended and was
// not sent yet, and kills, again, its window when that was to be killed:
// a crash may have cut the kill short (the tag check makes it a no-op
// when the window is gone).
func (p *plan) recoveredEnded() {
	p.sendHead() // what it said after it ended
	if s := p.s; s.Ended != nil && s.Ended.WindowClosed && s.Window.WindowID != "" {
		p.effect(s.closeWindow())
	}
}
