package imbinding

import (
	"slices"
	"strconv"
	"strings"

	"github.com/thatch-run/thatch/messages"
)

// AgentAsk is an interactive prompt of the agent (a permission dialog, a
// numbered choice) shown in the chat with one button per option.
type AgentAsk struct {
	Nonce       uint64                   `json:"nonce"`
	Fingerprint string                   `json:"fingerprint"`
	User        string                   `json:"user,omitempty"`
	Options     []messages.IMAgentOption `json:"options"`
	// MessageIDs are the chat messages that carry its buttons.
	MessageIDs []string `json:"messageIDs,omitempty"`
	// Pending: a press is being carried out.
	Pending bool `json:"pending,omitempty"`
}

// pressAgent is the prefix of an agent prompt's button data:
// "p:<nonce>:<option>".
const pressAgent = "p:"

// maxOptionLabel is how much of an option's label its button shows; the
// message shows every option whole.
const maxOptionLabel = 40

// agentPrompt shows the agent's prompt in the chat, once per prompt: the
// same prompt seen again changes nothing; another one closes the first.
func (p *plan) agentPrompt(m *messages.IMAgentPrompt) {
	s := p.S
	if !s.Bound() || len(m.Options) == 0 {
		return
	}
	if a := s.Asked; a != nil {
		if a.Fingerprint == m.Fingerprint {
			return
		}
		p.closeAsk()
	}
	nonce := p.S.Nonce + 1
	p.Event(&messages.IMAgentAsked{Nonce: nonce, Fingerprint: m.Fingerprint, User: s.Actor, Options: m.Options})
	var text strings.Builder
	// It names the thread and its agent: the notification of a muted
	// topic, or of one thread among many, says who waits.
	text.WriteString(s.Name() + " · " + s.agent() + " asks:\n" + m.Text + "\n")
	var rows [][]messages.IMButton
	for i, o := range m.Options {
		text.WriteString("\n" + o.Label)
		rows = append(rows, []messages.IMButton{{Text: Clip(o.Label, maxOptionLabel),
			Data: pressAgent + strconv.FormatUint(nonce, 10) + ":" + strconv.Itoa(i)}})
	}
	p.say(messages.IMOutEntry{Text: text.String(), Buttons: rows, Prompt: nonce})
}

// closeAsk closes the agent's prompt shown and clears its buttons.
func (p *plan) closeAsk() {
	a := p.S.Asked
	if a == nil {
		return
	}
	p.Event(&messages.IMAgentAskClosed{Nonce: a.Nonce})
	for _, id := range a.MessageIDs {
		p.Effect(&messages.IMClearButtons{MessageID: id})
	}
}

// agentPromptGone closes the prompt shown once the screen no longer shows
// it (answered in the terminal), unless a press is on its way.
func (p *plan) agentPromptGone(m *messages.IMAgentPromptGone) {
	if a := p.S.Asked; a != nil && a.Fingerprint == m.Fingerprint && !a.Pending {
		p.closeAsk()
	}
}

// pressedAgentPrompt answers the agent's prompt with the option pressed:
// only the prompt the button was shown for, for the user it was shown to.
func (p *plan) pressedAgentPrompt(m *messages.IMPress) {
	s := p.S
	p.Event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, User: m.User, At: p.now.UnixMilli()})
	nonceText, optText, _ := strings.Cut(strings.TrimPrefix(m.Data, pressAgent), ":")
	nonce, err1 := strconv.ParseUint(nonceText, 10, 64)
	opt, err2 := strconv.Atoi(optText)
	a := s.Asked
	switch {
	case err1 != nil || err2 != nil:
		p.Effect(&messages.IMAnswerPress{CallbackID: m.CallbackID, Text: "This button is not active."})
	case a == nil || a.Nonce != nonce || !s.Bound():
		p.Effect(&messages.IMAnswerPress{CallbackID: m.CallbackID, Text: "That prompt is no longer open."})
		if m.MessageID != "" && (a == nil || !slices.Contains(a.MessageIDs, m.MessageID)) {
			p.Effect(&messages.IMClearButtons{MessageID: m.MessageID})
		}
	case m.User != a.User || opt < 0 || opt >= len(a.Options):
		p.Effect(&messages.IMAnswerPress{CallbackID: m.CallbackID, Text: "This button is not active."})
	case a.Pending:
		p.Effect(&messages.IMAnswerPress{CallbackID: m.CallbackID, Text: "An answer is on its way."})
	default:
		p.Effect(&messages.IMAnswerPress{CallbackID: m.CallbackID})
		p.Event(&messages.IMAgentAskPending{Nonce: nonce, Pending: true})
		p.Effect(&messages.IMAnswerAgentPrompt{WindowID: s.Window.WindowID, Tag: s.Tag, Agent: s.Info.AgentType,
			Fingerprint: a.Fingerprint, Nonce: nonce, Option: opt, Keys: a.Options[opt].Keys})
	}
}

// agentAnswered acts on how the answer went.
func (p *plan) agentAnswered(m *messages.IMAgentPromptAnswered) {
	a := p.S.Asked
	if a == nil || a.Nonce != m.Nonce {
		return
	}
	switch {
	case m.Err == "" && m.Outcome == messages.AgentPromptAnswered:
		p.closeAsk()
		p.workStarted() // the agent goes on: watch for its next prompt
	case m.Err == "" && m.Outcome == messages.AgentPromptGone:
		p.closeAsk()
		p.say(messages.IMOutEntry{Text: "That prompt is no longer open."})
	case m.Err != "":
		p.Event(&messages.IMAgentAskPending{Nonce: a.Nonce})
		p.say(messages.IMOutEntry{Text: "Could not answer the prompt: " + m.Err})
	default:
		p.Event(&messages.IMAgentAskPending{Nonce: a.Nonce})
		p.say(messages.IMOutEntry{Text: "The keys did not take: the prompt is still open."})
	}
}

// applyAsk applies the agent prompt's events to n, a copy of s.
func applyAsk(n, s *State, ev any) bool {
	switch e := ev.(type) {
	case *messages.IMAgentAsked:
		n.Nonce = e.Nonce
		n.Asked = &AgentAsk{Nonce: e.Nonce, Fingerprint: e.Fingerprint, User: e.User, Options: e.Options}
	case *messages.IMAgentAskPending:
		if s.Asked != nil && s.Asked.Nonce == e.Nonce {
			c := *s.Asked
			c.Pending = e.Pending
			n.Asked = &c
		}
	case *messages.IMAgentAskClosed:
		if s.Asked != nil && s.Asked.Nonce == e.Nonce {
			n.Asked = nil
		}
	default:
		return false
	}
	return true
}
