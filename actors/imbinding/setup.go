package imbinding

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/thatch-run/thatch/messages"
)

// startSetup starts the setup flow with the agent choice.
func (p *plan) startSetup(user string) {
	if p.S.Transcript != "" {
		p.Effect(&messages.IMStopFollowing{Path: p.S.Transcript})
	}
	p.Event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepAgent})
	var row []messages.IMButton
	var rows [][]messages.IMButton
	for i, a := range p.k.cfg.Agents {
		row = append(row, messages.IMButton{Text: a, Data: "a:" + strconv.Itoa(i)})
		if len(row) == 2 {
			rows, row = append(rows, row), nil
		}
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	rows = append(rows, []messages.IMButton{{Text: adoptLabel, Data: "w:0"}})
	p.ask(PromptAgent, "Which agent should run for "+p.S.Name()+"?", user, slices.Clone(p.k.cfg.Agents), "", rows)
}

// browse acts on a directory browser button.
func (p *plan) browse(verb string, choice func() (string, bool)) {
	dir := p.S.Setup.Dir
	switch verb {
	case "cd":
		if d, ok := choice(); ok {
			p.Effect(&messages.IMListDirectory{Path: d})
		}
	case "up":
		p.Effect(&messages.IMListDirectory{Path: filepath.Dir(dir)})
	case "use":
		p.closePrompt()
		p.Event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepWindow, Agent: p.S.Setup.Agent, Dir: dir,
			Gen: p.S.Gen + 1, Tag: tag(p.S.Key, p.S.Gen+1)})
		p.Effect(&messages.IMCreateWindow{Tag: p.S.Setup.Tag, Name: p.S.Name(), Dir: dir})
	}
}

func tag(key string, gen uint64) string { return "thatch:" + key + ":" + strconv.FormatUint(gen, 10) }

// listed shows a directory listing in the browser.
func (p *plan) listed(m *messages.IMDirectoryListed) {
	s := p.S
	if s.Phase != PhaseSetup || s.Setup == nil || s.Setup.Step != StepDir {
		return
	}
	if m.Err != "" {
		p.say(messages.IMOutEntry{Text: "Cannot list " + m.Path + ": " + m.Err})
		if m.AtRoot {
			// The root itself cannot be listed: nothing to browse. The
			// queued messages wait; the next one starts the setup again.
			p.say(messages.IMOutEntry{Text: "Check im.roots in thatch's config, then send a message to start again."})
			p.closePrompt()
			p.Event(&messages.IMSetupStep{Phase: PhaseUnbound})
		} else if s.Prompt == nil {
			p.Effect(&messages.IMListDirectory{})
		}
		return
	}
	user := s.Actor
	p.Event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepDir, Agent: s.Setup.Agent, Dir: m.Path})
	var choices []string
	var rows [][]messages.IMButton
	for _, j := range m.Jumps {
		if len(choices) >= 4 || j == m.Path {
			continue
		}
		rows = append(rows, []messages.IMButton{{Text: "★ " + j, Data: "cd:" + strconv.Itoa(len(choices))}})
		choices = append(choices, j)
	}
	var row []messages.IMButton
	for _, d := range m.Dirs {
		if len(choices) >= maxDirButtons {
			break
		}
		row = append(row, messages.IMButton{Text: "📁 " + d, Data: "cd:" + strconv.Itoa(len(choices))})
		choices = append(choices, filepath.Join(m.Path, d))
		if len(row) == 2 {
			rows, row = append(rows, row), nil
		}
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	last := []messages.IMButton{{Text: "Use this directory", Data: "use"}}
	if !m.AtRoot {
		last = append([]messages.IMButton{{Text: "..", Data: "up"}}, last...)
	}
	rows = append(rows, last)
	text := "Working directory: " + m.Path
	if len(m.Dirs) > maxDirButtons {
		text += fmt.Sprintf(" (%d of %d subdirectories shown)", maxDirButtons, len(m.Dirs))
	}
	p.ask(PromptDir, text, user, choices, "", rows)
}

func (p *plan) windowCreated(m *messages.IMWindowCreated) {
	s := p.S
	if s.Setup == nil || s.Setup.Step != StepWindow || m.Tag != s.Setup.Tag {
		return
	}
	if m.Err != "" {
		if m.Gone && p.windowAgain() {
			return
		}
		p.say(messages.IMOutEntry{Text: "Could not create the tmux window: " + m.Err})
		p.failFlow()
		return
	}
	st := *s.Setup
	st.Window, st.WindowName = m.WindowID, m.Name
	if s.Phase == PhaseSetup && p.k.cfg.Resumable[st.Agent] && st.Since == 0 {
		// Not launched yet (a window made again after a launch keeps the
		// session chosen): the picker comes first.
		st.Step = StepSessions
		p.Event(setupEvent(s.Phase, st))
		p.Effect(&messages.IMListAgentSessions{Agent: st.Agent, Dir: st.Dir})
		return
	}
	p.Event(setupEvent(s.Phase, st))
	p.launch(st.Resume)
}

// windowAgain makes the flow's window again when tmux lost it (its
// server stopped: tmux 3.3a can crash while a window is made), once per
// flow; false when it was made again already.
func (p *plan) windowAgain() bool {
	s := p.S
	if s.Setup.Retried {
		return false
	}
	st := *s.Setup
	st.Step, st.Window, st.WindowName, st.Retried = StepWindow, "", "", true
	p.Event(setupEvent(s.Phase, st))
	p.say(messages.IMOutEntry{Text: "The tmux window for " + st.Agent + " went away (did tmux stop?); making a new one."})
	p.Effect(p.S.Setup.createWindow(p.S))
	return true
}

func setupEvent(phase string, st Setup) *messages.IMSetupStep {
	return &messages.IMSetupStep{Phase: phase, Step: st.Step, Agent: st.Agent, Dir: st.Dir, Tag: st.Tag, Window: st.Window,
		WindowName: st.WindowName, Resume: st.Resume, Since: st.Since, Retried: st.Retried}
}

// failFlow ends a setup or recovery that cannot go on: a setup starts
// over from the directory choice, a recovery asks again.
func (p *plan) failFlow() {
	s := p.S
	if s.Phase == PhaseRecovering {
		p.Event(&messages.IMSetupStep{Phase: PhasePrompting})
		p.ask(PromptDead, "Recovery failed. Your messages are kept.", s.Actor, nil, "",
			[][]messages.IMButton{{{Text: "Recover", Data: "recover"}, {Text: "New Session", Data: "new"}}})
		return
	}
	p.Event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepDir, Agent: s.Setup.Agent, Dir: s.Setup.Dir})
	p.Effect(&messages.IMListDirectory{Path: s.Setup.Dir})
}

func (p *plan) sessionsListed(m *messages.IMAgentSessionsListed) {
	s := p.S
	if s.Setup == nil || s.Setup.Step != StepSessions {
		return
	}
	if len(m.Sessions) == 0 {
		p.launch("")
		return
	}
	st := *s.Setup
	st.Step = StepPick
	p.Event(setupEvent(s.Phase, st))
	choices := []string{""}
	rows := [][]messages.IMButton{{{Text: "New", Data: "s:0"}}}
	for i, ss := range m.Sessions {
		if i == 10 {
			break
		}
		label := ss.When
		if ss.FirstPrompt != "" {
			label += " · " + ss.FirstPrompt
		}
		rows = append(rows, []messages.IMButton{{Text: label, Data: "s:" + strconv.Itoa(len(choices))}})
		choices = append(choices, ss.ID)
	}
	p.ask(PromptPick, st.Agent+" has sessions in "+st.Dir+". Resume one?", s.Actor, choices, "", rows)
}

// launch starts the agent in the flow's window (resuming id if set).
func (p *plan) launch(id string) {
	st := *p.S.Setup
	st.Step, st.Resume, st.Since = StepLaunch, id, p.now.UnixMilli()
	p.Event(setupEvent(p.S.Phase, st))
	p.Effect(st.launch())
}

func (p *plan) launched(m *messages.IMAgentLaunched) {
	s := p.S
	if s.Setup == nil || s.Setup.Step != StepLaunch || m.WindowID != s.Setup.Window {
		return
	}
	if m.Err != "" {
		if m.Gone && p.windowAgain() {
			return
		}
		p.say(messages.IMOutEntry{Text: "Could not start " + s.Setup.Agent + ": " + m.Err})
		p.failFlow()
		return
	}
	st := *s.Setup
	st.Step = StepFind
	p.Event(setupEvent(s.Phase, st))
	p.Effect(st.find())
}

// found finishes a flow (Session ready!) or records a session id found
// later for a bound window.
func (p *plan) found(m *messages.IMAgentSessionFound) {
	s := p.S
	switch {
	case s.Setup != nil && s.Setup.Step == StepFind && m.WindowID == s.Setup.Window:
		st := s.Setup
		p.bind(&messages.IMBound{DisplayName: s.Name(), WindowName: st.WindowName, SessionID: m.SessionID, WindowID: st.Window, Tag: st.Tag, Cwd: st.Dir,
			Agent: st.Agent, Transcript: m.Transcript, Offset: m.Offset, Since: st.Since})
		p.say(messages.IMOutEntry{Text: "Session ready!"})
		if m.SessionID == "" && m.Transcript == "" {
			if len(s.Queue) == 0 {
				// With a message queued, the search goes on once it is
				// typed (codex writes its transcript only then), and the
				// user is told if that one fails too.
				p.sayLost()
			}
			p.timer(timerFind, findRetry)
		}
		// The queued messages take the usual route: a check first, so
		// that nothing is typed into a shell if the agent did not start.
		p.recheck()
	case s.Phase == PhaseBound || s.Phase == PhasePrompting:
		if m.WindowID != s.Window.WindowID {
			return
		}
		if m.SessionID == "" {
			if s.lost() {
				if len(s.Queue) == 0 {
					p.sayLost()
				}
				p.timer(timerFind, findRetry)
			}
			return
		}
		if m.SessionID == s.Info.SessionID && m.Transcript == s.Transcript {
			return
		}
		p.bind(&messages.IMBound{DisplayName: s.Chat.DisplayName, WindowName: s.Info.WindowName, SessionID: m.SessionID, WindowID: s.Window.WindowID, Tag: s.Tag,
			Cwd: s.Info.Cwd, Agent: s.Info.AgentType, Transcript: m.Transcript, Offset: m.Offset, Since: s.Info.Since})
	}
}

// sessionChanged follows the session the agent in the bound window
// switched to (claude's /clear, /resume): the binding journals the new
// session and its transcript with the offset to read from, so that no
// reply of the new session is lost or relayed twice, across a crash too
// (the follower tells again after a restart while the hook's record and
// the binding's differ).
func (p *plan) sessionChanged(m *messages.IMSessionChanged) {
	s := p.S
	if s.Tag == "" || m.Tag != s.Tag {
		return
	}
	if m.Updated != 0 {
		seen := messages.IMSwitchSeen{SessionID: m.SessionID, Updated: m.Updated}
		if s.SwitchSeen == seen {
			return // told before: taken or refused then
		}
		p.Event(&seen)
	}
	if (s.Phase != PhaseBound && s.Phase != PhasePrompting) || s.Tag == "" || m.Tag != s.Tag || m.SessionID == "" || m.Transcript == "" ||
		(m.SessionID == s.Info.SessionID && m.Transcript == s.Transcript) {
		return
	}
	p.bind(&messages.IMBound{DisplayName: s.Chat.DisplayName, WindowName: s.Info.WindowName, SessionID: m.SessionID, WindowID: s.Window.WindowID, Tag: s.Tag,
		Cwd: s.Info.Cwd, Agent: s.Info.AgentType, Transcript: m.Transcript, Offset: m.Offset, Since: s.Info.Since})
}

// sayLost tells the user, once per binding, that the agent's session is
// not found yet (its replies cannot be relayed until it is).
func (p *plan) sayLost() {
	if p.S.LostSaid {
		return
	}
	p.Event(&messages.IMSessionLostSaid{})
	p.say(messages.IMOutEntry{Text: "thatch has not found " + p.S.agent() + "'s session yet; its replies are relayed once it has (it keeps looking)."})
}

// bind records the binding and follows its transcript.
func (p *plan) bind(b *messages.IMBound) {
	if old := p.S.Transcript; old != "" && old != b.Transcript {
		p.Effect(&messages.IMStopFollowing{Path: old})
	}
	p.Event(b)
	if b.Transcript != "" {
		p.Effect(&messages.IMFollowTranscript{Path: b.Transcript, Agent: b.Agent, Offset: b.Offset, Tag: b.Tag, SessionID: b.SessionID})
	}
}

// findBound looks, briefly, for the bound agent's session: an agent
// writes its transcript only once it has a prompt.
func (s *State) findBound() *messages.IMFindAgentSession {
	return &messages.IMFindAgentSession{WindowID: s.Window.WindowID, Tag: s.Tag, Agent: s.Info.AgentType, Dir: s.Info.Cwd, Fresh: true, Brief: true, Since: s.Info.Since}
}

// find looks for the session a flow's agent runs: the resumed one, or a
// fresh one.
func (st *Setup) find() *messages.IMFindAgentSession {
	return &messages.IMFindAgentSession{WindowID: st.Window, Tag: st.Tag, Agent: st.Agent, Dir: st.Dir, Known: st.Resume, Fresh: st.Resume == "", Since: st.Since}
}

// launch starts a flow's agent in its window, resuming st.Resume if set.
func (st *Setup) launch() *messages.IMLaunchAgent {
	return &messages.IMLaunchAgent{WindowID: st.Window, Tag: st.Tag, Agent: st.Agent, SessionID: st.Resume, Dir: st.Dir}
}

// createWindow makes a flow's window: named after the thread in a setup,
// after the chat's name in a recovery.
func (st *Setup) createWindow(s *State) *messages.IMCreateWindow {
	name := s.Name()
	if s.Phase == PhaseRecovering {
		name = s.Chat.DisplayName
	}
	return &messages.IMCreateWindow{Tag: st.Tag, Name: name, Dir: st.Dir}
}
