package imbinding

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// Event is what a binding journals, and Effect what it releases besides
// its timers: a plan takes nothing else (each type says it is one).
type (
	Event  = messages.IMBindingEvent
	Effect = messages.IMBindingEffect
)

// plan is one decision (actors.Plan: each event is applied at once, so
// that the steps after it decide on the state it made). Its Event and
// Effect take only a binding's events and effects.
type plan struct {
	actors.Plan[State]
	k   *Kind
	now time.Time
}

// Event journals ev and applies it at once.
func (p *plan) Event(ev Event) { p.Plan.Event(ev) }

// Effect releases effects, in order, once the events are durable.
func (p *plan) Effect(effects ...Effect) {
	for _, e := range effects {
		p.Plan.Effect(e)
	}
}

// timer starts (or starts again) the binding's timer name.
func (p *plan) timer(name string, after time.Duration) {
	p.Plan.Effect(&actors.StartTimer{Name: name, After: after})
}

// cancelTimer cancels the binding's timer name.
func (p *plan) cancelTimer(name string) { p.Plan.Effect(&actors.CancelTimer{Name: name}) }

// Decide handles one message.
func (k *Kind) Decide(s *State, msg any, now time.Time) actors.Decision {
	p := &plan{Plan: actors.NewPlan(s, k.Apply, nil), k: k, now: now}
	if s.Phase == PhaseEnded && !endedAccepts(msg) {
		if _, ok := msg.(*actors.Recovered); ok {
			p.recoveredEnded()
		}
		return p.Decision()
	}
	switch m := msg.(type) {
	case *messages.IMUpdate:
		p.update(m)
	case *messages.IMPress:
		p.press(m)
	case *messages.IMWindowChecked:
		p.checked(m)
	case *messages.IMSentToWindow:
		p.sentToWindow(m)
	case *messages.IMChatSent:
		p.chatSent(m)
	case *messages.IMChatEnded:
		p.chatEnded(m)
	case *messages.IMChatReopened:
		p.chatReopened(m)
	case *messages.IMCommand:
		p.command(m)
	case *messages.IMFreeWindowsListed:
		p.freeWindows(m)
	case *messages.IMWindowAdopted:
		p.adopted(m)
	case *messages.IMAgentPrompt:
		p.agentPrompt(m)
	case *messages.IMAgentPromptGone:
		p.agentPromptGone(m)
	case *messages.IMAgentPromptAnswered:
		p.agentAnswered(m)
	case *messages.IMAgentIdle:
		p.agentIdle(m)
	case *messages.IMKeysSent, *messages.IMScreenshotSent, *messages.IMHistoryRead, *messages.IMBindingsListed, *messages.IMUsageRead, *messages.IMModeSet,
		*messages.IMMemoryAnswer:
		p.commandResult(m)
	case *messages.IMChatPartSent:
		p.chatPartSent(m)
	case *messages.IMDirectoryListed:
		p.listed(m)
	case *messages.IMWindowCreated:
		p.windowCreated(m)
	case *messages.IMAgentSessionsListed:
		p.sessionsListed(m)
	case *messages.IMAgentLaunched:
		p.launched(m)
	case *messages.IMAgentSessionFound:
		p.found(m)
	case *messages.IMSessionChanged:
		p.sessionChanged(m)
	case *messages.IMWindowRenamed:
		switch {
		case m.Err != "":
			p.say(messages.IMOutEntry{Text: "Could not rename the window: " + m.Err})
		case m.Name != "" && m.Name != s.Info.WindowName:
			p.Event(&messages.IMRenamed{Name: m.Name, WindowOnly: true})
		}
	case *messages.IMTranscriptRead:
		p.transcript(m)
	case *messages.IMLiveSent:
		p.liveSent(m)
	case *messages.IMFollows:
		p.Reply(m.Path != "" && m.Path == s.Transcript && s.Phase != PhaseEnded)
	case *messages.IMFileSaved:
		p.fileSaved(m)
	case *actors.Tick:
		p.tick(m)
	case *actors.Recovered:
		p.recovered()
	default:
		return actors.Decision{Unhandled: true}
	}
	p.saveFiles(s, msg)
	p.turnChanged(s)
	p.boardChanged(s)
	p.watchChanged(s)
	return p.Decision()
}

// seen reports an update handled already. A platform redelivers what was
// not confirmed before a crash, and the adapter gives it the same id
// (chat.Update.ID), within a day; ids increase along a thread. An id at or
// below the last one is such a repeat only while the last one is recent;
// after messages.IMUpdateIDReset it is a new numbering (Telegram's), and taken. The
// ids are the adapter's: Telegram's update ids, which increase across
// all chats, or ids another adapter makes increasing per thread.
func (p *plan) seen(id int64) bool {
	return id <= p.S.LastUpdate && p.now.UnixMilli()-p.S.LastAt < messages.IMUpdateIDReset.Milliseconds()
}

// update handles a chat message or service message.
func (p *plan) update(m *messages.IMUpdate) {
	s := p.S
	if p.seen(m.UpdateID) {
		return // handled before a crash: the update was redelivered
	}
	name := ""
	switch m.NameSource {
	case messages.NameCreated, messages.NameEdited:
		if m.TopicName != s.TopicName {
			name = m.TopicName
		}
	case messages.NameSeed:
		if s.TopicName == "" {
			name = m.TopicName
		}
	}
	text := m.Text
	if m.Start {
		text = "" // a bot command, not a prompt for the agent
	}
	if e := s.Ended; s.Phase == PhaseEnded && e != nil && e.Reopenable {
		// A closed topic: nothing is queued for the agent.
		p.Event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, User: m.User, At: p.now.UnixMilli()})
		if text != "" || m.Start || m.Media != "" {
			p.endedMessage(m.User)
		}
		return
	}
	if len(s.Queue)+len(s.Waiting) >= MaxQueued && (text != "" || m.File != nil) {
		p.Event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, User: m.User, TopicName: name, At: p.now.UnixMilli()})
		p.say(messages.IMOutEntry{Text: fmt.Sprintf("%d messages are already waiting for the agent; this one was not queued. Send it again later.", MaxQueued)})
		return
	}
	// A message behind a file not saved yet waits for it (files.go).
	check := text != "" && s.Phase == PhaseBound && !s.Checking && !s.sending() && len(s.Waiting) == 0
	has := text != "" || m.File != nil
	p.Event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, User: m.User, TopicName: name, Text: text, At: p.now.UnixMilli(),
		Check: check, Actor: has || m.Start, File: m.File, Caption: m.Caption})
	if m.Forgotten != "" && s.Phase == PhaseUnbound && (has || m.Start) {
		p.say(messages.IMOutEntry{Text: fmt.Sprintf("%s no longer has a record of this thread (its data was lost or replaced), so the thread is set up again. Your messages wait and are typed once it is.",
			m.Forgotten)})
	}
	if m.Media != "" && m.File == nil {
		// Agents take typed text only.
		p.say(messages.IMOutEntry{Text: "thatch passes text only: the " + m.Media + " was not given to the agent."})
	}
	switch {
	case (m.Start || has) && s.Phase == PhaseEnded:
		p.endedMessage(m.User)
	case m.Start && s.Phase == PhaseUnbound:
		p.startSetup(m.User)
	case m.Start && s.Phase == PhaseBound:
		p.say(messages.IMOutEntry{Text: fmt.Sprintf("This thread is bound to %s in tmux window %s (%s). What you send here is typed to it.",
			s.Info.AgentType, s.windowName(), s.Info.Cwd)})
	case m.Start:
		p.reask(m.User)
	case !has:
	case check:
		p.Effect(p.check())
	case p.S.Phase == PhaseUnbound:
		p.startSetup(m.User)
	default:
		p.reask(m.User)
	}
}

// press handles a button press: it is answered always, and acted on only
// when it belongs to the open prompt (its nonce: every message that
// carried the prompt) and the prompt's user.
func (p *plan) press(m *messages.IMPress) {
	s := p.S
	if p.seen(m.UpdateID) {
		p.Effect(&messages.IMAnswerPress{CallbackID: m.CallbackID})
		return
	}
	if strings.HasPrefix(m.Data, pressCommand) {
		p.pressedCommand(m)
		return
	}
	if strings.HasPrefix(m.Data, pressAgent) {
		p.pressedAgentPrompt(m)
		return
	}
	nonceText, action, _ := strings.Cut(m.Data, ":")
	nonce, err := strconv.ParseUint(nonceText, 10, 64)
	pr := s.Prompt
	// The nonce names the prompt: every copy of it in the chat (a send
	// repeated after a crash makes two) answers alike.
	ok := err == nil && pr != nil && nonce == pr.Nonce && m.User == pr.User
	p.Event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, User: m.User, At: p.now.UnixMilli(), Actor: ok})
	if !ok {
		p.Effect(&messages.IMAnswerPress{CallbackID: m.CallbackID, Text: "This button is not active."})
		return
	}
	p.Effect(&messages.IMAnswerPress{CallbackID: m.CallbackID})
	verb, arg, _ := strings.Cut(action, ":")
	choice := func() (string, bool) {
		i, err := strconv.Atoi(arg)
		if err != nil || i < 0 || i >= len(pr.Choices) {
			return "", false
		}
		return pr.Choices[i], true
	}
	switch pr.Kind {
	case PromptAgent:
		if verb == "w" {
			p.listFreeWindows()
			return
		}
		if a, ok := choice(); ok && verb == "a" {
			p.closePrompt()
			p.Event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepDir, Agent: a})
			p.Effect(&messages.IMListDirectory{})
		}
	case PromptDir:
		p.browse(verb, choice)
	case PromptPick:
		if id, ok := choice(); ok && verb == "s" {
			p.closePrompt()
			p.launch(id)
		}
	case PromptRename, PromptMismatch, PromptDead:
		p.answer(pr, verb, m.User)
	case PromptKill:
		p.answerKill(verb)
	case PromptAdopt:
		p.adopt(verb, choice)
	}
}

func (p *plan) tick(m *actors.Tick) {
	switch m.Name {
	case timerRename:
		if p.S.Prompt != nil && p.S.Prompt.Kind == PromptRename {
			p.rename()
		}
	case timerOutbox:
		p.sendHead() // again, after a failed send: the head is the entry in flight
	case timerFind:
		if s := p.S; s.lookingForSession() {
			p.Effect(s.findBound())
		}
	case timerWork:
		p.workTimer()
	case timerLive:
		p.liveTick()
	case timerSummary:
		p.editSummaries(false)
	case timerTyping:
		if s := p.S; s.Phase == PhaseBound && !s.Checking && !s.sending() && len(s.Queue) > 0 {
			p.Event(&messages.IMResumed{})
			p.Effect(p.check())
		}
	}
}
