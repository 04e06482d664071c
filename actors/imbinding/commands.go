package imbinding

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/thatch-run/thatch/messages"
)

// PromptKill is the confirmation /kill asks for.
const PromptKill = "kill"

// History bounds: /history with no number shows DefaultHistory exchanges,
// and never more than MaxHistory.
const (
	DefaultHistory = 5
	MaxHistory     = 50
)

// keyNames are the keys /esc, /interrupt and /enter send, as the chat
// says them.
var keyNames = map[string]string{"esc": "Escape", "interrupt": "Ctrl-C", "enter": "Enter"}

// pressCommand is the prefix of the data of a button that runs a command
// (the screenshot's): "x:<command>:<user>". It names no prompt: it works
// as long as the binding has a window, for the user it was shown to.
const pressCommand = "x:"

// command handles one of thatch's commands given in the thread.
func (p *plan) command(m *messages.IMCommand) {
	if p.seen(m.UpdateID) {
		return
	}
	p.Event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, User: m.User, At: p.now.UnixMilli()})
	p.runCommand(m.Name, m.Args, m.User)
}

// runCommand runs a command for user.
func (p *plan) runCommand(name, args, user string) {
	s := p.S
	if name == "sessions" {
		p.Effect(&messages.IMListBindings{User: user})
		return
	}
	if !s.Bound() || s.Phase == PhaseEnded || s.Phase == PhaseRecovering {
		p.say(messages.IMOutEntry{Text: "This thread has no agent window now: send a message to set one up."})
		return
	}
	switch name {
	case "esc", "interrupt", "enter":
		p.Effect(&messages.IMSendKeys{WindowID: s.Window.WindowID, Tag: s.Tag, Agent: s.Info.AgentType, Key: name})
	case "screenshot":
		p.Effect(&messages.IMScreenshot{WindowID: s.Window.WindowID, Tag: s.Tag, Name: s.windowName(), Buttons: screenshotButtons(user)})
	case "history":
		n := DefaultHistory
		if args != "" {
			v, err := strconv.Atoi(args)
			if err != nil || v < 1 {
				p.say(messages.IMOutEntry{Text: "/history takes a number of exchanges, like /history 3."})
				return
			}
			n = min(v, MaxHistory)
		}
		if s.Transcript == "" {
			p.say(messages.IMOutEntry{Text: "thatch has not found the agent's session yet, so it has no history to show."})
			return
		}
		p.Effect(&messages.IMReadHistory{Path: s.Transcript, Agent: s.Info.AgentType, N: n})
	case "mode":
		p.mode(args, user)
	case "board":
		p.Effect(&messages.IMBoardShow{})
		if r, ok := s.boardRow(); ok {
			p.Effect(s.sinceNow(r, p.now)) // the board learns of this thread at once
		}
	case "usage":
		if s.Transcript == "" {
			p.say(messages.IMOutEntry{Text: "thatch has not found the agent's session yet, so it cannot say what it used."})
			return
		}
		p.Effect(&messages.IMReadUsage{Path: s.Transcript, Agent: s.Info.AgentType, User: user})
	case "planusage":
		p.planUsage()
	case "recall", "remember", "mem":
		p.memory(name, args, user)
	case "kill":
		if pr := s.Prompt; pr != nil && pr.Kind != PromptKill {
			p.say(messages.IMOutEntry{Text: "Answer the open question first."})
			return
		}
		p.ask(PromptKill, fmt.Sprintf("Kill window %s (%s in %s) and end this thread's binding?", s.windowName(), s.Info.AgentType, s.Info.Cwd),
			user, nil, "", [][]messages.IMButton{{{Text: "Kill", Data: "kill"}, {Text: "Cancel", Data: "cancel"}}})
	case "unbind":
		window := s.windowName()
		p.end("unbound from the chat", false)
		p.say(messages.IMOutEntry{Text: "This thread's binding ended; window " + window + " keeps running. Send a message to set up a new one."})
	}
}

// screenshotButtons are the buttons under a screenshot, for user.
func screenshotButtons(user string) [][]messages.IMButton {
	b := func(label, cmd string) messages.IMButton {
		return messages.IMButton{Text: label, Data: pressCommand + cmd + ":" + user}
	}
	return [][]messages.IMButton{{b("Refresh", "screenshot"), b("Esc", "esc"), b("Enter", "enter"), b("Ctrl-C", "interrupt")}}
}

// pressedCommand handles a press of a command button: it runs for the
// user it was shown to, and says so to anyone else.
func (p *plan) pressedCommand(m *messages.IMPress) {
	cmd, user, _ := strings.Cut(strings.TrimPrefix(m.Data, pressCommand), ":")
	ok := user == m.User && (cmd == "screenshot" || cmd == "planusage" || keyNames[cmd] != "" || strings.HasPrefix(cmd, "mode=") || strings.HasPrefix(cmd, "mem="))
	p.Event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, User: m.User, At: p.now.UnixMilli()})
	if !ok {
		p.Effect(&messages.IMAnswerPress{CallbackID: m.CallbackID, Text: "This button is not active."})
		return
	}
	p.Effect(&messages.IMAnswerPress{CallbackID: m.CallbackID})
	name, args, _ := strings.Cut(cmd, "=")
	p.runCommand(name, args, user)
}

// mode switches the agent's permission mode (/mode NAME), or offers its
// modes as buttons (/mode).
func (p *plan) mode(name, user string) {
	s := p.S
	switch how := p.k.cfg.Modes[s.Info.AgentType]; {
	case how == ModeCycle:
	case strings.HasPrefix(how, "/"):
		p.Effect(&messages.IMSetMode{WindowID: s.Window.WindowID, Tag: s.Tag, Agent: s.Info.AgentType, Command: how})
		return
	default:
		p.say(messages.IMOutEntry{Text: s.agent() + " has no permission modes thatch can switch (im.agents." + s.Info.AgentType + ".mode)."})
		return
	}
	if name == "" {
		var row []messages.IMButton
		for _, m := range messages.ClaudeModes {
			row = append(row, messages.IMButton{Text: m, Data: pressCommand + "mode=" + m + ":" + user})
		}
		p.say(messages.IMOutEntry{Text: "Which permission mode should claude run in?", Buttons: [][]messages.IMButton{row}})
		return
	}
	if !slices.Contains(messages.ClaudeModes, name) {
		p.say(messages.IMOutEntry{Text: "claude's modes are " + strings.Join(messages.ClaudeModes, ", ") + "; /mode with no name shows them as buttons."})
		return
	}
	p.Effect(&messages.IMSetMode{WindowID: s.Window.WindowID, Tag: s.Tag, Agent: s.Info.AgentType, Mode: name})
}

// planUsage sends a picture of claude's own /usage dialog (the plan's
// limits, which no transcript holds): typed only while claude is idle,
// since a slash command typed mid-turn would wait as a message.
func (p *plan) planUsage() {
	s := p.S
	switch {
	case s.Info.AgentType != "claude":
		p.say(messages.IMOutEntry{Text: "Only claude has a /usage dialog to show."})
	case s.busy(p.k.cfg.Live):
		p.say(messages.IMOutEntry{Text: "claude is busy; its /usage dialog can be shown once it is idle."})
	default:
		p.Effect(&messages.IMScreenshot{WindowID: s.Window.WindowID, Tag: s.Tag, Name: "claude's /usage", Open: "/usage", Agent: "claude"})
	}
}

// busy reports whether the agent is at work or waits for its user: a
// message is queued for it, a prompt is open, or its turn goes on (shown
// live: until its transcript says it ended; else until the screen
// watcher saw it idle).
func (s *State) busy(live bool) bool {
	switch {
	case len(s.Queue) > 0 || s.Prompt != nil || s.Asked != nil:
		return true
	case live:
		return s.Turn != nil && !s.Turn.Ending
	}
	return s.Work != 0
}

// memory answers /recall QUERY and /remember TEXT from the memory store,
// in the stores of the binding's directory, and a press of a recalled
// memory's button ("mem", its reference); no agent is asked.
func (p *plan) memory(name, args, user string) {
	dir := p.S.Info.Cwd
	switch {
	case name == "mem":
		p.Effect(&messages.IMShowMemory{Ref: args, Dir: dir})
	case args == "" && name == "recall":
		p.say(messages.IMOutEntry{Text: "/recall takes what to look for, like /recall how to deploy."})
	case args == "":
		p.say(messages.IMOutEntry{Text: "/remember takes the fact to keep, like /remember staging deploys with make ship."})
	case name == "recall":
		p.Effect(&messages.IMRecallMemory{Query: args, Dir: dir, User: user})
	default:
		p.Effect(&messages.IMRememberMemory{Text: args, Dir: dir})
	}
}

// MemoryButton is the data of a recalled memory's button (ref: the
// memory's short reference), shown to user.
func MemoryButton(ref, user string) string {
	return pressCommand + "mem=" + ref + ":" + user
}

// answerKill acts on the /kill confirmation.
func (p *plan) answerKill(verb string) {
	p.closePrompt()
	if verb != "kill" {
		p.say(messages.IMOutEntry{Text: "Kept."})
		return
	}
	window := p.S.windowName()
	p.end("killed from the chat", true)
	p.say(messages.IMOutEntry{Text: "Window " + window + " is killed and this thread's binding ended. Send a message to set up a new one."})
}

// commandResult handles the results of the commands' effects.
func (p *plan) commandResult(msg any) {
	switch m := msg.(type) {
	case *messages.IMKeysSent:
		if m.Err != "" {
			p.say(messages.IMOutEntry{Text: "Could not send " + keyNames[m.Key] + ": " + m.Err})
			return
		}
		p.say(messages.IMOutEntry{Text: keyNames[m.Key] + " sent."})
	case *messages.IMScreenshotSent:
		switch {
		case m.Text != "":
			p.say(messages.IMOutEntry{Text: "```\n" + m.Text + "\n```", Markdown: true})
		case m.Err != "":
			p.say(messages.IMOutEntry{Text: "Could not show the window: " + m.Err})
		}
	case *messages.IMModeSet:
		switch {
		case m.Err != "":
			p.say(messages.IMOutEntry{Text: "Could not switch the mode: " + m.Err})
		case m.Mode != "":
			p.say(messages.IMOutEntry{Text: p.S.agent() + " is in " + m.Mode + " mode now."})
		}
	case *messages.IMMemoryAnswer:
		p.say(messages.IMOutEntry{Text: m.Text, Buttons: m.Buttons})
	case *messages.IMUsageRead:
		if m.Err != "" {
			p.say(messages.IMOutEntry{Text: "Could not read the session's usage: " + m.Err})
			return
		}
		out := messages.IMOutEntry{Text: m.Text}
		if p.S.Info.AgentType == "claude" && m.User != "" {
			// The plan's limits are in no transcript, only in claude's
			// own /usage dialog.
			out.Buttons = [][]messages.IMButton{{{Text: "Claude's plan limits", Data: pressCommand + "planusage:" + m.User}}}
		}
		p.say(out)
	case *messages.IMHistoryRead:
		switch {
		case m.Err != "":
			p.say(messages.IMOutEntry{Text: "Could not read the history: " + m.Err})
		case strings.TrimSpace(m.Text) == "":
			p.say(messages.IMOutEntry{Text: "The agent's session has no exchanges yet."})
		default:
			p.say(messages.IMOutEntry{Text: m.Text})
		}
	case *messages.IMBindingsListed:
		p.say(messages.IMOutEntry{Text: m.Text})
	}
}
