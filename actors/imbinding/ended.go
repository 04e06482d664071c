package imbinding

import (
	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// Ending is why and when a binding ended (PhaseEnded).
type Ending struct {
	Reason string `json:"reason"`
	At     int64  `json:"at"`
	// WindowClosed: the window was killed (im.on_close = "kill"); it is
	// kept otherwise.
	WindowClosed bool `json:"windowClosed,omitempty"`
	// Reopenable: the thread may come back (a topic closed): a message
	// meanwhile gets one note (Noted) and is not typed, and a reopen binds
	// the thread again to its window and session.
	Reopenable bool `json:"reopenable,omitempty"`
	Noted      bool `json:"noted,omitempty"`
}

// chatEnded handles the platform's word that the thread's chat is over.
func (p *plan) chatEnded(m *messages.IMChatEnded) {
	if p.seen(m.UpdateID) {
		return
	}
	p.Event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, User: m.User, At: p.now.UnixMilli()})
	p.endAs(m.Reason, false, m.Reopenable)
}

// chatReopened binds a thread that came back (a topic reopened) to its
// window and session again; its next message takes the usual route (a
// window gone offers Recover).
func (p *plan) chatReopened(m *messages.IMChatReopened) {
	s := p.S
	if p.seen(m.UpdateID) {
		return
	}
	p.Event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, User: m.User, At: p.now.UnixMilli()})
	if s.Phase != PhaseEnded || s.Ended == nil || !s.Ended.Reopenable || s.Window.WindowID == "" {
		return
	}
	p.Event(&messages.IMReopened{At: p.now.UnixMilli()})
	if s.Transcript != "" {
		p.Effect(&messages.IMFollowTranscript{Path: s.Transcript, Agent: s.Info.AgentType, Offset: s.Offset, Tag: s.Tag, SessionID: s.Info.SessionID})
	}
	p.say(messages.IMOutEntry{Text: "Reopened: this thread is bound again to " + s.Info.AgentType + " in " + s.windowName() + "."})
}

// endedMessage answers a message sent to an ended thread: in one that may
// come back (a closed topic), one note and nothing typed; in one that
// cannot, the chat is back (the bot was added again): a new setup.
func (p *plan) endedMessage(user string) {
	s := p.S
	if !s.Ended.Reopenable {
		p.say(messages.IMOutEntry{Text: "The earlier binding of this chat ended (" + s.Ended.Reason + "). Setting up a new one."})
		p.startSetup(user)
		return
	}
	if !s.Ended.Noted {
		p.Event(&messages.IMEndNoted{})
		p.say(messages.IMOutEntry{Text: "This topic is closed: nothing is typed to the agent. Reopen it to go on."})
	}
}

// end ends the binding: nobody can be answered in a chat that is over, so
// the queue and the outbox go; the window is killed when kill is set (the
// user's /kill) or im.on_close says "kill", and kept otherwise. An ended
// binding stays ended until its thread comes back (endedMessage,
// chatReopened).
func (p *plan) end(reason string, kill bool) { p.endAs(reason, kill, false) }

// endAs is end for a thread that may come back (reopenable).
func (p *plan) endAs(reason string, kill, reopenable bool) {
	s := p.S
	if s.Phase == PhaseEnded {
		return
	}
	kill = (kill || p.k.cfg.KillOnClose) && s.Window.WindowID != ""
	if s.Transcript != "" {
		p.Effect(&messages.IMStopFollowing{Path: s.Transcript})
	}
	p.Event(&messages.IMEnded{Reason: reason, At: p.now.UnixMilli(), WindowClosed: kill, Reopenable: reopenable})
	if kill {
		p.Effect(p.S.closeWindow())
	}
}

func (s *State) closeWindow() *messages.IMCloseWindow {
	return &messages.IMCloseWindow{WindowID: s.Window.WindowID, Tag: s.Tag}
}

// applyEnded applies IMEnded to n, a copy of the state.
func applyEnded(n *State, e *messages.IMEnded) {
	n.Phase = PhaseEnded
	n.Ended = &Ending{Reason: e.Reason, At: e.At, WindowClosed: e.WindowClosed, Reopenable: e.Reopenable}
	n.Setup, n.Prompt, n.Asked, n.Checking, n.Work = nil, nil, nil, false, 0
	n.Queue, n.Waiting, n.Outbox, n.OutFlight, n.Held = nil, nil, nil, 0, 0
	if !e.Reopenable {
		n.Transcript, n.Offset = "", 0 // a reopened thread follows its transcript on from here
	}
}

// applyReopen applies the events of an ended thread that may come back.
func applyReopen(n, s *State, ev any) bool {
	switch ev.(type) {
	case *messages.IMEndNoted:
		if s.Ended != nil {
			c := *s.Ended
			c.Noted = true
			n.Ended = &c
		}
	case *messages.IMReopened:
		n.Phase, n.Ended = PhaseBound, nil
	default:
		return false
	}
	return true
}

// endedAccepts reports the messages an ended binding still acts on: what
// comes from its thread, and its outbox's results and retries (what it
// says after it ended, when its chat is still there: /unbind, /kill). The
// results of the other effects it asked for before it ended are dropped.
func endedAccepts(msg any) bool {
	switch msg.(type) {
	case *messages.IMUpdate, *messages.IMPress, *messages.IMChatEnded, *messages.IMChatReopened, *messages.IMCommand, *messages.IMBindingsListed,
		*messages.IMChatSent, *messages.IMChatPartSent, *actors.Tick:
		return true
	}
	return false
}
