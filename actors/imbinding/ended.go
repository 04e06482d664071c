package imbinding

import (
	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// Window treatments when a binding's chat ends (Config.OnClose).
const (
	OnCloseKeep = "keep"
	OnCloseKill = "kill"
)

// Ending is why and when a binding ended (PhaseEnded).
type Ending struct {
	Reason string `json:"reason"`
	At     int64  `json:"at"`
	// WindowClosed: the window was killed (im.on_close = "kill"); it is
	// kept otherwise.
	WindowClosed bool `json:"windowClosed,omitempty"`
}

// chatEnded handles the platform's word that the thread's chat is over.
func (p *plan) chatEnded(m *messages.IMChatEnded) {
	if p.seen(m.UpdateID) {
		return
	}
	p.event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, User: m.User, At: p.now.UnixMilli()})
	p.end(m.Reason, false)
}

// end ends the binding: nobody can be answered in a chat that is over, so
// the queue and the outbox go; the window is killed when kill is set (the
// user's /kill) or im.on_close says "kill", and kept otherwise. An ended binding stays ended until a message arrives
// in its thread again (the bot was added back): that starts a new setup.
func (p *plan) end(reason string, kill bool) {
	s := p.s
	if s.Phase == PhaseEnded {
		return
	}
	kill = (kill || p.k.cfg.OnClose == OnCloseKill) && s.Window.WindowID != ""
	if s.Transcript != "" {
		p.effect(&messages.IMStopFollowing{Path: s.Transcript})
	}
	p.event(&messages.IMEnded{Reason: reason, At: p.now.UnixMilli(), WindowClosed: kill})
	if kill {
		p.effect(p.s.closeWindow())
	}
}

func (s *State) closeWindow() *messages.IMCloseWindow {
	return &messages.IMCloseWindow{WindowID: s.Window.WindowID, Tag: s.Tag}
}

// applyEnded applies IMEnded to n, a copy of the state.
func applyEnded(n *State, e *messages.IMEnded) {
	n.Phase = PhaseEnded
	n.Ended = &Ending{Reason: e.Reason, At: e.At, WindowClosed: e.WindowClosed}
	n.Setup, n.Prompt, n.Asked, n.Checking = nil, nil, nil, false
	n.Queue, n.Outbox, n.OutFlight, n.Held = nil, nil, 0, 0
	n.Transcript, n.Offset = "", 0
}

// endedAccepts reports the messages an ended binding still acts on: what
// comes from its thread, and its outbox's results and retries (what it
// says after it ended, when its chat is still there: /unbind, /kill). The
// results of the other effects it asked for before it ended are dropped.
func endedAccepts(msg any) bool {
	switch msg.(type) {
	case *messages.IMUpdate, *messages.IMPress, *messages.IMChatEnded, *messages.IMCommand, *messages.IMBindingsListed,
		*messages.IMChatSent, *messages.IMChatPartSent, *actors.Tick:
		return true
	}
	return false
}
