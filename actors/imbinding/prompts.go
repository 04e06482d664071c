package imbinding

import (
	"slices"
	"strconv"

	"github.com/thatch-run/thatch/messages"
)

// ask opens a prompt with buttons; each button's data is "<nonce>:<action>".
func (p *plan) ask(kind, text, user string, choices []string, detected string, rows [][]messages.IMButton) {
	p.askIn(kind, text, user, choices, detected, "", rows)
}

// askIn is ask for a prompt that remembers a live window to reuse.
func (p *plan) askIn(kind, text, user string, choices []string, detected, window string, rows [][]messages.IMButton) {
	plain := cloneRows(rows)
	nonce := p.S.Nonce + 1
	for _, row := range rows {
		for i := range row {
			row[i].Data = strconv.FormatUint(nonce, 10) + ":" + row[i].Data
		}
	}
	p.closePrompt()
	p.Event(&messages.IMPromptOpened{Kind: kind, Nonce: nonce, User: user, Choices: choices, Detected: detected, Window: window,
		Text: text, Rows: plain})
	p.say(messages.IMOutEntry{Text: text, Buttons: rows, Prompt: nonce})
}

func cloneRows(rows [][]messages.IMButton) [][]messages.IMButton {
	out := make([][]messages.IMButton, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
	}
	return out
}

// reask asks the open prompt again, of user: a prompt answers to one user
// (its buttons do nothing for others), so when another allowed user
// speaks in the thread, the question moves to them.
func (p *plan) reask(user string) {
	pr := p.S.Prompt
	if pr == nil || pr.User == user || pr.Text == "" {
		return
	}
	p.askIn(pr.Kind, pr.Text, user, slices.Clone(pr.Choices), pr.Detected, pr.Window, cloneRows(pr.Rows))
	if pr.Kind == PromptRename {
		p.timer(timerRename, p.k.cfg.RenameTimeout)
	}
}

// closePrompt closes the open prompt, if any, and removes its buttons.
func (p *plan) closePrompt() {
	pr := p.S.Prompt
	if pr == nil {
		return
	}
	p.Event(&messages.IMPromptClosed{Nonce: pr.Nonce})
	for _, id := range pr.MessageIDs {
		p.Effect(&messages.IMClearButtons{MessageID: id})
	}
	if pr.Kind == PromptRename {
		p.cancelTimer(timerRename)
	}
}

// answer acts on the choice of a route prompt.
func (p *plan) answer(pr *Prompt, verb, user string) {
	switch {
	case verb == "new":
		p.closePrompt()
		if s := p.S; s.Window.WindowID != "" {
			// The new session gets a window of its own: the old one (its
			// agent replaced) is closed, never left to nobody.
			p.Effect(s.closeWindow())
		}
		p.startSetup(user)
	case pr.Kind == PromptRename && verb == "rename":
		p.rename()
	case pr.Kind == PromptMismatch && verb == "update":
		p.closePrompt()
		if p.S.Transcript != "" {
			p.Effect(&messages.IMStopFollowing{Path: p.S.Transcript})
		}
		p.Event(&messages.IMAgentChanged{Agent: pr.Detected})
		// The new agent started after the old one: a transcript written
		// since the old one's launch may be the new one's.
		p.Effect(&messages.IMFindAgentSession{WindowID: p.S.Window.WindowID, Tag: p.S.Tag, Agent: pr.Detected, Dir: p.S.Info.Cwd,
			Since: p.S.Info.Since, Fresh: true})
		p.recheck()
	case pr.Kind == PromptDead && verb == "recover":
		p.closePrompt()
		s := p.S
		if pr.Window != "" && pr.Window == s.Window.WindowID {
			// The window is alive and its agent exited: start it again there.
			p.Event(&messages.IMSetupStep{Phase: PhaseRecovering, Step: StepWindow, Agent: s.Info.AgentType, Dir: s.Info.Cwd,
				Tag: s.Tag, Window: s.Window.WindowID, WindowName: s.Info.WindowName, Resume: s.Info.SessionID})
			p.launch(s.Info.SessionID)
			return
		}
		p.Event(&messages.IMSetupStep{Phase: PhaseRecovering, Step: StepWindow, Agent: s.Info.AgentType, Dir: s.Info.Cwd,
			Gen: s.Gen + 1, Tag: tag(s.Key, s.Gen+1), Resume: s.Info.SessionID})
		p.Effect(&messages.IMCreateWindow{Tag: p.S.Setup.Tag, Name: s.Chat.DisplayName, Dir: s.Info.Cwd})
	}
}

// rename accepts the chat side's name: the binding and the window take it.
func (p *plan) rename() {
	p.closePrompt()
	name := p.S.Name()
	p.Event(&messages.IMRenamed{Name: name})
	p.Effect(&messages.IMRenameWindow{WindowID: p.S.Window.WindowID, Name: name})
	p.recheck()
}
