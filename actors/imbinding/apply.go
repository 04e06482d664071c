package imbinding

import (
	"fmt"
	"maps"
	"slices"

	"github.com/thatch-run/thatch/actors/liveturn"
	"github.com/thatch-run/thatch/messages"
)

// Apply returns the state after ev; s is left as it was.
func (*Kind) Apply(s *State, ev any) *State {
	n := *s
	if applyChat(&n, s, ev) || applyBinding(&n, s, ev) || applyAsk(&n, s, ev) || applyReopen(&n, s, ev) || applyFiles(&n, s, ev) || applyWork(&n, ev) || applyShown(&n, s, ev) {
		return &n
	}
	if t, ok := liveturn.Apply(s.Turn, ev); ok {
		n.Turn = t
		return &n
	}
	return s
}

// applyChat applies the events of the chat side (updates, the outbox,
// prompts) to n, a copy of s; it reports whether ev was one of them.
func applyChat(n, s *State, ev any) bool {
	switch e := ev.(type) {
	case *messages.IMUpdateSeen:
		n.LastUpdate, n.LastAt = e.UpdateID, e.At
		if e.Actor {
			n.Actor = e.User
		}
		if e.TopicName != "" {
			n.TopicName = e.TopicName
		}
		if e.Text != "" || e.File != nil {
			queue(n, s, e)
		}
		if e.Check {
			n.Checking = true
		}
	case *messages.IMOutboxAdded, *messages.IMOutboxReleased, *messages.IMOutboxPartSent:
		n.Box, _ = s.Box.Apply(ev)
	case *messages.IMOutboxSent:
		o, ok := s.Box.Entry(e.Seq)
		n.Box, _ = s.Box.Apply(ev)
		if !ok {
			return true
		}
		if e.Refused != "" {
			n.Refused = e.Refused
		}
		if pr := s.Prompt; pr != nil && o.Prompt == pr.Nonce && e.MessageID != "" {
			c := *pr
			c.MessageIDs = append(slices.Clip(pr.MessageIDs), e.MessageID)
			n.Prompt = &c
		}
		if a := s.Asked; a != nil && o.Prompt == a.Nonce && e.MessageID != "" {
			c := *a
			c.MessageIDs = append(slices.Clip(a.MessageIDs), e.MessageID)
			n.Asked = &c
		}
	case *messages.IMPromptOpened:
		n.Nonce = e.Nonce
		n.Prompt = &Prompt{Kind: e.Kind, Nonce: e.Nonce, User: e.User, Choices: e.Choices, Detected: e.Detected, Window: e.Window,
			Text: e.Text, Rows: e.Rows}
		switch e.Kind {
		case PromptRename, PromptMismatch, PromptDead:
			n.Phase = PhasePrompting
		}
	case *messages.IMPromptClosed:
		if s.Prompt != nil && s.Prompt.Nonce == e.Nonce {
			n.Prompt = nil
			if s.Phase == PhasePrompting {
				n.Phase = PhaseBound
			}
		}
	default:
		return false
	}
	return true
}

// applyBinding applies the events of the binding and its window.
func applyBinding(n, s *State, ev any) bool {
	switch e := ev.(type) {
	case *messages.IMSetupStep:
		n.Phase = e.Phase
		n.Setup = nil
		if e.Step != "" {
			n.Setup = &Setup{Step: e.Step, Agent: e.Agent, Dir: e.Dir, Tag: e.Tag, Window: e.Window, WindowName: e.WindowName, Resume: e.Resume,
				Since: e.Since, Retried: e.Retried}
		}
		if e.Gen > n.Gen {
			n.Gen = e.Gen
		}
		n.Checking = false
		if e.Phase == PhaseSetup && e.Step == StepAgent {
			n.Transcript, n.Offset, n.Context = "", 0, ""
			n.Ended = nil
		}
	case *messages.IMBound:
		if s.Phase != PhasePrompting {
			// A session found while a prompt is open leaves it open; a
			// check in flight stays in flight.
			n.Phase, n.Setup = PhaseBound, nil
		}
		n.Chat.DisplayName = e.DisplayName
		n.Window = WindowBinding{WindowID: e.WindowID}
		n.Tag = e.Tag
		wname := e.WindowName
		if wname == "" {
			wname = e.DisplayName
		}
		n.Info = SessionInfo{SessionID: e.SessionID, Cwd: e.Cwd, WindowName: wname, AgentType: e.Agent, Since: e.Since}
		if e.Transcript != s.Transcript {
			n.Transcript, n.Offset, n.Context = e.Transcript, e.Offset, ""
		}
		n.LostSaid = false
	case *messages.IMRenamed:
		if !e.WindowOnly {
			n.Chat.DisplayName = e.Name
		}
		n.Info.WindowName = e.Name
	case *messages.IMAgentChanged:
		// The old agent's session is not this one's: it is found anew.
		n.Info.AgentType, n.Info.SessionID = e.Agent, ""
		n.Transcript, n.Offset, n.Context = "", 0, ""
	case *messages.IMChecked:
		n.Checking = false
		if e.Forward && len(s.Queue) > 0 {
			n.Queue = slices.Clone(s.Queue)
			n.Queue[0].Sent = true
		}
	case *messages.IMDelivered:
		i := slices.IndexFunc(s.Queue, func(q Queued) bool { return q.UpdateID == e.UpdateID })
		if i >= 0 {
			n.Queue = slices.Delete(slices.Clone(s.Queue), i, i+1)
		}
		if e.Check {
			n.Checking = true
		}
	case *messages.IMRepliesRead:
		n.Offset = e.To
	case *messages.IMSwitchSeen:
		n.SwitchSeen = *e
	case *messages.IMTypingHeld:
		n.Held = e.UpdateID
	case *messages.IMSessionLostSaid:
		n.LostSaid = true
	case *messages.IMEnded:
		applyEnded(n, e)
	case *messages.IMResumed:
		n.Queue = slices.Clone(s.Queue)
		for i := range n.Queue {
			n.Queue[i].Sent = false
		}
		n.Checking = len(n.Queue) > 0 && s.Phase == PhaseBound && !e.Hold
	default:
		return false
	}
	return true
}

// applyShown applies what the transcript and the chat showed of the
// session: its context share, and the summaries owed to live messages.
func applyShown(n, s *State, ev any) bool {
	switch e := ev.(type) {
	case *messages.IMContextUsed:
		n.Context = fmt.Sprintf("%d%%", e.Share)
	case *messages.IMSummaryOwed:
		n.Summaries = maps.Clone(s.Summaries)
		if n.Summaries == nil {
			n.Summaries = map[string]string{}
		}
		n.Summaries[e.MessageID] = e.Text
	case *messages.IMSummaryDone:
		n.Summaries = maps.Clone(s.Summaries)
		delete(n.Summaries, e.MessageID)
		if len(n.Summaries) == 0 {
			n.Summaries = nil
		}
	default:
		return false
	}
	return true
}
