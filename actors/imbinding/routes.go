package imbinding

import (
	"fmt"
	"slices"

	"github.com/thatch-run/thatch/messages"
)

// recheck checks the window again for the queued messages.
func (p *plan) recheck() {
	if len(p.S.Queue) == 0 {
		return
	}
	p.Event(&messages.IMResumed{})
	p.Effect(p.check())
}

// check is the window check for the queue, with the oldest message to
// type at once if the window is as expected (the chat-side name, which
// the handler cannot see, is checked here).
func (p *plan) check() *messages.IMCheckWindow {
	s := p.S
	c := &messages.IMCheckWindow{WindowID: s.Window.WindowID, Tag: s.Tag}
	if len(s.Queue) > 0 && s.Phase == PhaseBound && s.Name() == s.Chat.DisplayName {
		q := s.Queue[0]
		c.Type = &messages.IMTypeIfWell{UpdateID: q.UpdateID, Text: q.Text, Name: s.windowName(), Agent: s.Info.AgentType}
	}
	return c
}

// checked routes the queued messages by the window check's outcome.
func (p *plan) checked(m *messages.IMWindowChecked) {
	s := p.S
	if s.Phase != PhaseBound || !s.Checking || m.WindowID != s.Window.WindowID {
		return // a check that no longer matters
	}
	if m.Typed != 0 {
		// All was well and the check typed the oldest message.
		if len(s.Queue) > 0 && s.Queue[0].UpdateID == m.Typed {
			p.Event(&messages.IMChecked{Forward: true})
			p.sentToWindow(&messages.IMSentToWindow{UpdateID: m.Typed, Err: m.TypeErr, NotTaken: m.TypeNotTaken, NotReady: m.TypeNotReady})
		}
		return
	}
	user := s.Actor
	switch {
	case !m.Alive || m.Agent == "":
		p.Event(&messages.IMChecked{})
		why, window := "The window of this session is gone.", ""
		if m.Alive {
			why, window = "The agent is no longer running in its window.", m.WindowID
		}
		p.askIn(PromptDead, why+" Your message is kept.", user, nil, "", window,
			[][]messages.IMButton{{{Text: "Recover", Data: "recover"}, {Text: "New Session", Data: "new"}}})
	case m.Agent != s.Info.AgentType:
		p.Event(&messages.IMChecked{})
		p.ask(PromptMismatch, fmt.Sprintf("This thread is bound to %s, but %s runs in its window. Your message is kept.", s.Info.AgentType, m.Agent),
			user, nil, m.Agent,
			[][]messages.IMButton{{{Text: "Update Binding", Data: "update"}, {Text: "New Session", Data: "new"}}})
	case s.Name() != s.Chat.DisplayName || m.Name != s.windowName():
		p.Event(&messages.IMChecked{})
		p.ask(PromptRename, fmt.Sprintf("This thread is now called %q; its session is %q. Rename the session? (Renamed in %s without an answer.)",
			s.Name(), s.Chat.DisplayName, p.k.cfg.RenameTimeout),
			user, nil, "",
			[][]messages.IMButton{{{Text: "Rename", Data: "rename"}, {Text: "New Session", Data: "new"}}})
		p.timer(timerRename, p.k.cfg.RenameTimeout)
	default:
		p.forward()
	}
}

// forward types the oldest queued message into the window. One message
// per check: the one before may have ended the agent, and the next must
// not reach the shell left behind.
func (p *plan) forward() {
	p.Event(&messages.IMChecked{Forward: true})
	q := p.S.Queue[0]
	p.Effect(&messages.IMSendToWindow{WindowID: p.S.Window.WindowID, UpdateID: q.UpdateID, Text: q.Text})
}

func (p *plan) sentToWindow(m *messages.IMSentToWindow) {
	s := p.S
	i := slices.IndexFunc(s.Queue, func(q Queued) bool { return q.UpdateID == m.UpdateID && q.Sent })
	if i < 0 {
		return
	}
	if m.Err != "" && !m.NotTaken {
		if m.NotReady {
			if s.Held != m.UpdateID {
				p.Event(&messages.IMTypingHeld{UpdateID: m.UpdateID})
				p.say(messages.IMOutEntry{Text: fmt.Sprintf("%s is not taking input now: a question or a dialog may be open in its window, or its input line holds text not sent yet. Your message waits and is typed once it takes input.",
					s.Info.AgentType)})
			}
			// Not at once: the agent waits on its user, maybe for long.
			p.Event(&messages.IMResumed{Hold: true})
			p.timer(timerTyping, typingRetry)
			return
		}
		p.Event(&messages.IMResumed{})
		p.Effect(p.check())
		return
	}
	check := len(s.Queue) > 1 && s.Phase == PhaseBound
	p.Event(&messages.IMDelivered{UpdateID: m.UpdateID, Check: check})
	if !m.NotTaken {
		p.workStarted()
		p.startTurn()
	}
	if m.NotTaken {
		// Typing it again would put it in the input line twice.
		p.say(messages.IMOutEntry{Text: fmt.Sprintf("Your message %q was typed into %s, but %s did not take it: it is still in its input line (%s). Open the window to send it, or clear the line and send it again.",
			Clip(s.Queue[i].Text, 60), s.Info.AgentType, s.Info.AgentType, m.Err)})
	}
	if s.Info.SessionID == "" {
		// An agent writes its transcript only after its first prompt.
		p.Effect(s.findBound())
	}
	if check {
		p.Effect(p.check())
	}
}
