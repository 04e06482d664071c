package imbinding

import (
	"time"
)

// View is what `thatch status` shows of a binding.
type View struct {
	Thread      string `json:"thread"`
	DisplayName string `json:"displayName"`
	Agent       string `json:"agent,omitempty"`
	Window      string `json:"window,omitempty"`
	Session     string `json:"session,omitempty"`
	State       string `json:"state"`
	Step        string `json:"step,omitempty"`
	Queued      int    `json:"queued,omitempty"`
	Unsent      int    `json:"unsent,omitempty"`
	LastMessage string `json:"lastMessage,omitempty"`
	// Refused is why the chat last refused one of the binding's messages
	// for good (it was dropped).
	Refused string `json:"refused,omitempty"`
	// Ended says why the binding ended, and whether its window was kept.
	Ended string `json:"ended,omitempty"`
	// User is who set the thread up or last spoke in it, in the
	// platform's ids (/sessions lists a user's threads by it).
	User string `json:"user,omitempty"`
	// Cwd is the agent's directory.
	Cwd string `json:"cwd,omitempty"`
}

// View shows the binding.
func (*Kind) View(s *State) any {
	v := View{Thread: s.Key, DisplayName: s.Chat.DisplayName, Agent: s.Info.AgentType, Window: s.Window.WindowID,
		Session: s.Info.SessionID, State: s.Phase, Queued: len(s.Queue) + len(s.Waiting), Unsent: len(s.Outbox), Refused: s.Refused,
		User: s.Actor, Cwd: s.Info.Cwd}
	if v.DisplayName == "" {
		v.DisplayName = s.Name()
	}
	if s.Setup != nil {
		v.Step = s.Setup.Step
		if v.Agent == "" {
			v.Agent = s.Setup.Agent
		}
	}
	if e := s.Ended; e != nil {
		v.Ended = e.Reason + "; window kept"
		if e.WindowClosed {
			v.Ended = e.Reason + "; window killed"
		}
	}
	if s.LastAt > 0 {
		v.LastMessage = time.UnixMilli(s.LastAt).UTC().Format(time.RFC3339)
	}
	return v
}
