package imbinding

import (
	"path/filepath"
	"strconv"

	"github.com/thatch-run/thatch/messages"
)

// Adopting a window: a thread with no binding binds an agent that already
// runs in a window no binding owns, on thatch's tmux server or on one the
// user listed in im.tmux.adopt_sockets.

// Steps and prompt of the adoption.
const (
	StepWindows = "windows" // listing the free windows
	StepAdopt   = "adopt"   // the window chosen: tagging and renaming it
	PromptAdopt = "adopt"
)

// adoptLabel is the button of the setup's first keyboard that adopts a
// window.
const adoptLabel = "Existing window"

// listFreeWindows starts the adoption: which windows are free.
func (p *plan) listFreeWindows() {
	p.closePrompt()
	p.Event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepWindows})
	p.Effect(&messages.IMListFreeWindows{})
}

// freeWindows offers the free windows, one button each.
func (p *plan) freeWindows(m *messages.IMFreeWindowsListed) {
	s := p.S
	if s.Phase != PhaseSetup || s.Setup == nil || s.Setup.Step != StepWindows {
		return
	}
	if m.Err != "" || len(m.Windows) == 0 {
		why := "No tmux window is free to adopt."
		if m.Err != "" {
			why = "Cannot list the tmux windows: " + m.Err
		}
		p.say(messages.IMOutEntry{Text: why})
		p.startSetup(s.Actor)
		return
	}
	var choices []string
	var rows [][]messages.IMButton
	text := "Which window should " + s.Name() + " bind?"
	for i, w := range m.Windows {
		if i == maxDirButtons {
			break
		}
		agent := w.Agent
		if agent == "" {
			agent = "no agent"
		}
		where := ""
		if w.Socket != "" {
			where = " (tmux " + w.Socket + ")"
		}
		text += "\n" + strconv.Itoa(i+1) + ". " + w.Name + where + ": " + agent + " in " + w.Dir
		rows = append(rows, []messages.IMButton{{Text: Clip(strconv.Itoa(i+1)+". "+w.Name+where+" · "+agent+" · "+filepath.Base(w.Dir), 60),
			Data: "wa:" + strconv.Itoa(i)}})
		choices = append(choices, w.ID)
	}
	rows = append(rows, []messages.IMButton{{Text: "Back", Data: "back"}})
	p.ask(PromptAdopt, text, s.Actor, choices, "", rows)
}

// adopt takes the window chosen.
func (p *plan) adopt(verb string, choice func() (string, bool)) {
	if verb == "back" {
		p.closePrompt()
		p.startSetup(p.S.Actor)
		return
	}
	id, ok := choice()
	if !ok || verb != "wa" {
		return
	}
	p.closePrompt()
	s := p.S
	gen := s.Gen + 1
	t := tag(s.Key, gen)
	p.Event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepAdopt, Window: id, Gen: gen, Tag: t})
	p.Effect(&messages.IMAdoptWindow{WindowID: id, Tag: t, Name: s.Name()})
}

// adopted goes on, once the window is the binding's, as a launch does:
// the session the agent runs there is looked for, and the thread is bound.
func (p *plan) adopted(m *messages.IMWindowAdopted) {
	s := p.S
	if s.Phase != PhaseSetup || s.Setup == nil || s.Setup.Step != StepAdopt || m.WindowID != s.Setup.Window || m.Tag != s.Setup.Tag {
		return
	}
	switch {
	case m.Err != "":
		p.say(messages.IMOutEntry{Text: "Could not adopt the window: " + m.Err})
		p.startSetup(s.Actor)
		return
	case m.Agent == "":
		p.say(messages.IMOutEntry{Text: "No agent runs in window " + m.Name + ": start one there, or choose another."})
		p.startSetup(s.Actor)
		return
	}
	st := Setup{Step: StepFind, Agent: m.Agent, Dir: m.Dir, Tag: m.Tag, Window: m.WindowID, WindowName: m.Name}
	p.Event(setupEvent(PhaseSetup, st))
	p.Effect(st.find())
}
