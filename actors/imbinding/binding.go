// Package imbinding is the pure decision core of an IM binding: the entity
// that owns one chat thread's binding to an agent session running in a
// tmux window. It decides the four routes of a message (forward, name
// mismatch, agent mismatch, window dead), runs the setup and recovery
// flows as explicit steps, keeps every message that arrives while a prompt
// or a setup is open, and keeps an outbox of chat messages so that no
// reply is lost across a crash.
//
// # Imports
//
// imbinding may import actors and messages only (and the standard
// library's pure packages). It does no I/O: the IM front end carries out
// its effects (messages.IMCheckWindow, IMSendToWindow, IMSendChat, ...)
// and sends their results back as messages.
//
// # Phases
//
//	unbound --message--> setup --Session ready!--> bound
//	bound --check: name/agent/dead--> prompting --choice--> bound | setup | recovering
//	recovering --Session ready!--> bound
//
// A message that arrives in any phase but bound-and-idle is queued and
// typed into the window, in order, once the flow has finished.
package imbinding

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the kind of the binding entities; an entity's id is its
// thread's key (see Key).
const KindName = "im.binding"

// Phases of a binding.
const (
	PhaseUnbound    = "unbound"
	PhaseSetup      = "setup"
	PhaseBound      = "bound"
	PhasePrompting  = "prompting"
	PhaseRecovering = "recovering"
)

// Steps of the setup and recovery flows.
const (
	StepAgent    = "agent"    // waiting for the agent choice
	StepDir      = "dir"      // browsing directories
	StepWindow   = "window"   // creating the window
	StepSessions = "sessions" // listing the agent's sessions
	StepPick     = "pick"     // waiting for the session choice
	StepLaunch   = "launch"   // launching the agent
	StepFind     = "find"     // finding the agent's session id
)

// Prompt kinds.
const (
	PromptAgent    = "agent"
	PromptDir      = "dir"
	PromptPick     = "pick"
	PromptRename   = "rename"
	PromptMismatch = "mismatch"
	PromptDead     = "dead"
)

// Timer names.
const (
	timerRename = "rename"
	timerOutbox = "outbox"
	timerFind   = "find"
	timerTyping = "typing"
)

// Limits that keep a binding's state small.
const (
	// MaxQueued is how many messages wait for the agent at most; a message
	// beyond it is refused with a reply, never dropped silently.
	MaxQueued = 200
	// maxDirButtons bounds the directory browser's buttons.
	maxDirButtons = 40
	// outboxRetry is how long a chat message that could not be sent waits
	// before it is tried again.
	outboxRetry = 10 * time.Second
	// findRetry is how often a binding whose agent's session was not
	// found looks for it again (replies can only be relayed once it is).
	findRetry = 30 * time.Second
	// typingRetry is how long a message waits, after the agent showed no
	// input line (a dialog of its own is open), before it is tried again.
	typingRetry = 10 * time.Second
)

// Key is the entity id of a chat thread: the chat and the thread id (a
// forum topic's message_thread_id; the chat id itself in a private chat).
func Key(chatID, threadID int64) string {
	return "tg:" + strconv.FormatInt(chatID, 10) + ":" + strconv.FormatInt(threadID, 10)
}

// Config is what the front end's configuration tells the kind.
type Config struct {
	// Agents are the agents offered by the setup flow, in order.
	Agents []string
	// Resumable are the agents whose sessions can be resumed (a resume
	// command is configured); only they get the session picker.
	Resumable map[string]bool
	// RenameTimeout is how long a rename prompt waits before the rename
	// is accepted.
	RenameTimeout time.Duration
}

// ChatBinding is the chat side of a binding.
type ChatBinding struct {
	ThreadID    int64  `json:"threadID"`
	ChatID      int64  `json:"chatID"`
	DisplayName string `json:"displayName"`
}

// WindowBinding is the tmux window the agent runs in. The agent's session
// is Info.SessionID: one place for each fact.
type WindowBinding struct {
	WindowID string `json:"windowID"`
}

// SessionInfo is what is known of the agent session.
type SessionInfo struct {
	SessionID  string `json:"sessionID,omitempty"`
	Cwd        string `json:"cwd"`
	WindowName string `json:"windowName"`
	AgentType  string `json:"agentType"`
	// Since is when the agent was launched (Unix milliseconds; 0 when
	// unknown): a transcript written since then may be its session's.
	Since int64 `json:"since,omitempty"`
}

// Setup is the progress of a setup or recovery flow.
type Setup struct {
	Step       string `json:"step"`
	WindowName string `json:"windowName,omitempty"`
	Agent      string `json:"agent,omitempty"`
	Dir        string `json:"dir,omitempty"`
	Tag        string `json:"tag,omitempty"`
	Window     string `json:"window,omitempty"`
	Resume     string `json:"resume,omitempty"`
	// Since is when the agent was launched (Unix milliseconds).
	Since int64 `json:"since,omitempty"`
}

// Prompt is a question with buttons waiting for the user.
type Prompt struct {
	// Text and Rows are what the prompt said, so that it can be asked
	// again of another user (Rows' data without the nonce).
	Text   string                `json:"text,omitempty"`
	Rows   [][]messages.IMButton `json:"rows,omitempty"`
	Window string                `json:"window,omitempty"`
	Kind   string                `json:"kind"`
	Nonce  uint64                `json:"nonce"`
	UserID int64                 `json:"userID"`
	// MessageIDs are the chat messages that carried the prompt: more
	// than one when a crash cut a send short and it was sent again.
	MessageIDs []int    `json:"messageIDs,omitempty"`
	Choices    []string `json:"choices,omitempty"`
	Detected   string   `json:"detected,omitempty"`
}

// Queued is a message waiting to be typed into the window. Sent marks one
// being typed now.
type Queued struct {
	UpdateID int64  `json:"updateID"`
	Text     string `json:"text"`
	Sent     bool   `json:"sent,omitempty"`
}

// Out is a chat message in the outbox.
type Out struct {
	Seq uint64 `json:"seq"`
	messages.IMOutEntry
	// Parts is how many parts of a long entry are sent already.
	Parts int `json:"parts,omitempty"`
}

// State is a binding's state. Apply never changes a State in place.
type State struct {
	Key    string        `json:"key"`
	Phase  string        `json:"phase"`
	Chat   ChatBinding   `json:"chat"`
	Window WindowBinding `json:"window"`
	Info   SessionInfo   `json:"info"`
	Topic  bool          `json:"topic,omitempty"`
	// TopicName is the thread's name as the chat side knows it.
	TopicName string `json:"topicName,omitempty"`
	// Transcript is the file followed for replies, read up to Offset.
	Transcript string `json:"transcript,omitempty"`
	Offset     int64  `json:"offset,omitempty"`
	LastUpdate int64  `json:"lastUpdate,omitempty"`
	// Actor is the user the open flow or prompt answers to.
	Actor int64 `json:"actor,omitempty"`
	// Tag is the bound window's tag (see messages.IMCheckWindow).
	Tag      string   `json:"tag,omitempty"`
	LastAt   int64    `json:"lastAt,omitempty"`
	Setup    *Setup   `json:"setup,omitempty"`
	Prompt   *Prompt  `json:"prompt,omitempty"`
	Nonce    uint64   `json:"nonce,omitempty"`
	Gen      uint64   `json:"gen,omitempty"`
	Checking bool     `json:"checking,omitempty"`
	Queue    []Queued `json:"queue,omitempty"`
	Outbox   []Out    `json:"outbox,omitempty"`
	NextSeq  uint64   `json:"nextSeq,omitempty"`
	// OutFlight is the outbox entry being sent, plus one (0: none).
	OutFlight uint64 `json:"outFlight,omitempty"`
	// Held is the queued message the user was told waits for the agent
	// to take input (0: none).
	Held int64 `json:"held,omitempty"`
	// Refused is why the chat last refused a message of the binding for
	// good (it was dropped), for status; "" when none was.
	Refused string `json:"refused,omitempty"`
	// LostSaid: the user was told the agent's session is not found yet.
	LostSaid bool `json:"lostSaid,omitempty"`
}

func init() { messages.Register[State]("im.binding.state", 1) }

// Bound reports whether the thread has a binding to a window.
func (s *State) Bound() bool { return s.Window.WindowID != "" && s.Phase != PhaseSetup }

// Name is the thread's name as the chat side knows it, or
// "topic-<thread_id>" when no name is known.
func (s *State) Name() string {
	if s.TopicName != "" {
		return s.TopicName
	}
	return "topic-" + strconv.FormatInt(s.Chat.ThreadID, 10)
}

// Kind is the binding kind.
type Kind struct{ cfg Config }

var _ actors.Kind[State] = (*Kind)(nil)

// New makes the kind.
func New(cfg Config) *Kind {
	if cfg.RenameTimeout <= 0 {
		cfg.RenameTimeout = time.Minute
	}
	return &Kind{cfg: cfg}
}

// Name returns KindName.
func (*Kind) Name() string { return KindName }

// Initial is a thread with no binding.
func (*Kind) Initial(id string) *State {
	s := &State{Key: id, Phase: PhaseUnbound}
	if rest, ok := strings.CutPrefix(id, "tg:"); ok {
		chat, thread, _ := strings.Cut(rest, ":")
		s.Chat.ChatID, _ = strconv.ParseInt(chat, 10, 64)
		s.Chat.ThreadID, _ = strconv.ParseInt(thread, 10, 64)
	}
	return s
}

// Active reports unfinished work: a flow or prompt, queued messages,
// unsent chat messages, or a transcript to follow (so that the follower
// is set up again at start).
func (*Kind) Active(s *State) bool {
	return s.Phase == PhaseSetup || s.Phase == PhaseRecovering || s.Phase == PhasePrompting ||
		len(s.Queue) > 0 || len(s.Outbox) > 0 || s.Transcript != ""
}

// plan accumulates one decision: each event is applied at once, so that
// the steps after it decide on the state it made.
type plan struct {
	k       *Kind
	s       *State
	events  []any
	effects []any
	now     time.Time
}

func (p *plan) event(ev any) {
	p.events = append(p.events, ev)
	p.s = p.k.Apply(p.s, ev)
}

func (p *plan) effect(e ...any) { p.effects = append(p.effects, e...) }

// say queues chat messages and releases them.
func (p *plan) say(entries ...messages.IMOutEntry) {
	p.event(&messages.IMOutboxAdded{Seq: p.s.NextSeq, Entries: entries})
	p.releaseOutbox()
}

// releaseOutbox hands the outbox's head to the front end unless an entry
// is in flight: one at a time, so that the chat gets them in order and a
// retry never overtakes or repeats the ones after it.
func (p *plan) releaseOutbox() {
	if p.s.OutFlight == 0 {
		p.sendHead()
	}
}

// sendHead releases the outbox's head (if any), in flight or not.
func (p *plan) sendHead() {
	if len(p.s.Outbox) == 0 {
		return
	}
	head := p.s.Outbox[0]
	p.event(&messages.IMOutboxReleased{Seq: head.Seq})
	p.effect(p.s.send(head))
}

func (s *State) send(o Out) *messages.IMSendChat {
	return &messages.IMSendChat{Seq: o.Seq, ChatID: s.Chat.ChatID, ThreadID: s.Chat.ThreadID, Topic: s.Topic,
		Text: o.Text, Markdown: o.Markdown, Buttons: o.Buttons, FromPart: o.Parts}
}

// ask opens a prompt with buttons; each button's data is "<nonce>:<action>".
func (p *plan) ask(kind, text string, user int64, choices []string, detected string, rows [][]messages.IMButton) {
	p.askIn(kind, text, user, choices, detected, "", rows)
}

// askIn is ask for a prompt that remembers a live window to reuse.
func (p *plan) askIn(kind, text string, user int64, choices []string, detected, window string, rows [][]messages.IMButton) {
	plain := cloneRows(rows)
	nonce := p.s.Nonce + 1
	for _, row := range rows {
		for i := range row {
			row[i].Data = strconv.FormatUint(nonce, 10) + ":" + row[i].Data
		}
	}
	p.closePrompt()
	p.event(&messages.IMPromptOpened{Kind: kind, Nonce: nonce, UserID: user, Choices: choices, Detected: detected, Window: window,
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
func (p *plan) reask(user int64) {
	pr := p.s.Prompt
	if pr == nil || pr.UserID == user || pr.Text == "" {
		return
	}
	p.askIn(pr.Kind, pr.Text, user, slices.Clone(pr.Choices), pr.Detected, pr.Window, cloneRows(pr.Rows))
	if pr.Kind == PromptRename {
		p.effect(&actors.StartTimer{Name: timerRename, After: p.k.cfg.RenameTimeout})
	}
}

// closePrompt closes the open prompt, if any, and removes its buttons.
func (p *plan) closePrompt() {
	pr := p.s.Prompt
	if pr == nil {
		return
	}
	p.event(&messages.IMPromptClosed{Nonce: pr.Nonce})
	for _, id := range pr.MessageIDs {
		p.effect(&messages.IMClearButtons{ChatID: p.s.Chat.ChatID, MessageID: id})
	}
	if pr.Kind == PromptRename {
		p.effect(&actors.CancelTimer{Name: timerRename})
	}
}

func (p *plan) decision(reply any) actors.Decision {
	return actors.Decision{Events: p.events, Effects: p.effects, Reply: reply}
}

// Decide handles one message.
func (k *Kind) Decide(s *State, msg any, now time.Time) actors.Decision {
	p := &plan{k: k, s: s, now: now}
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
			p.event(&messages.IMRenamed{Name: m.Name, WindowOnly: true})
		}
	case *messages.IMTranscriptRead:
		p.transcript(m)
	case *actors.Tick:
		p.tick(m)
	case *actors.Recovered:
		p.recovered()
	default:
		return actors.Decision{Unhandled: true}
	}
	return p.decision(nil)
}

// UpdateIDReset is how long the bot may go without any update before
// Telegram may number the next one at random instead of in sequence ("at
// least a week"; a day of margin). im/telegram's IDReset is the same.
const UpdateIDReset = 6 * 24 * time.Hour

// seen reports an update handled already: Telegram redelivers what was
// not confirmed before a crash, with the same ids, within a day. An id at
// or below the last one is such a repeat only while the last one is
// recent; after UpdateIDReset it is Telegram's new numbering, and taken.
func (p *plan) seen(id int64) bool {
	return id <= p.s.LastUpdate && p.now.UnixMilli()-p.s.LastAt < UpdateIDReset.Milliseconds()
}

// update handles a chat message or service message.
func (p *plan) update(m *messages.IMUpdate) {
	s := p.s
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
	if len(s.Queue) >= MaxQueued && text != "" {
		p.event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, UserID: m.UserID, ChatID: m.ChatID, ThreadID: m.ThreadID,
			Topic: m.Topic, TopicName: name, At: p.now.UnixMilli()})
		p.say(messages.IMOutEntry{Text: fmt.Sprintf("%d messages are already waiting for the agent; this one was not queued. Send it again later.", MaxQueued)})
		return
	}
	check := text != "" && s.Phase == PhaseBound && !s.Checking && !s.sending()
	p.event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, UserID: m.UserID, ChatID: m.ChatID, ThreadID: m.ThreadID,
		Topic: m.Topic, TopicName: name, Text: text, At: p.now.UnixMilli(), Check: check, Actor: text != "" || m.Start})
	if m.Media != "" {
		// Agents take typed text only.
		p.say(messages.IMOutEntry{Text: "thatch passes text only: the " + m.Media + " was not given to the agent."})
	}
	switch {
	case m.Start && s.Phase == PhaseUnbound:
		p.startSetup(m.UserID)
	case m.Start && s.Phase == PhaseBound:
		p.say(messages.IMOutEntry{Text: fmt.Sprintf("This thread is bound to %s in tmux window %s (%s). What you send here is typed to it.",
			s.Info.AgentType, s.windowName(), s.Info.Cwd)})
	case m.Start:
		p.reask(m.UserID)
	case text == "":
	case check:
		p.effect(p.check())
	case p.s.Phase == PhaseUnbound:
		p.startSetup(m.UserID)
	default:
		p.reask(m.UserID)
	}
}

// sending reports whether queued messages are being typed now.
func (s *State) sending() bool {
	return slices.ContainsFunc(s.Queue, func(q Queued) bool { return q.Sent })
}

// startSetup starts the setup flow with the agent choice.
func (p *plan) startSetup(user int64) {
	if p.s.Transcript != "" {
		p.effect(&messages.IMStopFollowing{Path: p.s.Transcript})
	}
	p.event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepAgent})
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
	p.ask(PromptAgent, "Which agent should run for "+p.s.Name()+"?", user, slices.Clone(p.k.cfg.Agents), "", rows)
}

// press handles a button press: it is answered always, and acted on only
// when it belongs to the open prompt, its message and its user.
func (p *plan) press(m *messages.IMPress) {
	s := p.s
	if p.seen(m.UpdateID) {
		p.effect(&messages.IMAnswerPress{CallbackID: m.CallbackID})
		return
	}
	nonceText, action, _ := strings.Cut(m.Data, ":")
	nonce, err := strconv.ParseUint(nonceText, 10, 64)
	pr := s.Prompt
	// The nonce names the prompt: every copy of it in the chat (a send
	// repeated after a crash makes two) answers alike.
	ok := err == nil && pr != nil && nonce == pr.Nonce && m.UserID == pr.UserID
	p.event(&messages.IMUpdateSeen{UpdateID: m.UpdateID, UserID: m.UserID, ChatID: m.ChatID, ThreadID: m.ThreadID,
		At: p.now.UnixMilli(), Actor: ok})
	if !ok {
		p.effect(&messages.IMAnswerPress{CallbackID: m.CallbackID, Text: "This button is not active."})
		return
	}
	p.effect(&messages.IMAnswerPress{CallbackID: m.CallbackID})
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
		if a, ok := choice(); ok && verb == "a" {
			p.closePrompt()
			p.event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepDir, Agent: a})
			p.effect(&messages.IMListDirectory{})
		}
	case PromptDir:
		p.browse(verb, choice)
	case PromptPick:
		if id, ok := choice(); ok && verb == "s" {
			p.closePrompt()
			p.launch(id)
		}
	case PromptRename, PromptMismatch, PromptDead:
		p.answer(pr, verb, m.UserID)
	}
}

// browse acts on a directory browser button.
func (p *plan) browse(verb string, choice func() (string, bool)) {
	dir := p.s.Setup.Dir
	switch verb {
	case "cd":
		if d, ok := choice(); ok {
			p.effect(&messages.IMListDirectory{Path: d})
		}
	case "up":
		p.effect(&messages.IMListDirectory{Path: filepath.Dir(dir)})
	case "use":
		p.closePrompt()
		p.event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepWindow, Agent: p.s.Setup.Agent, Dir: dir,
			Gen: p.s.Gen + 1, Tag: tag(p.s.Key, p.s.Gen+1)})
		p.effect(&messages.IMCreateWindow{Tag: p.s.Setup.Tag, Name: p.s.Name(), Dir: dir})
	}
}

func tag(key string, gen uint64) string { return "thatch:" + key + ":" + strconv.FormatUint(gen, 10) }

// answer acts on the choice of a route prompt.
func (p *plan) answer(pr *Prompt, verb string, user int64) {
	switch {
	case verb == "new":
		p.closePrompt()
		p.startSetup(user)
	case pr.Kind == PromptRename && verb == "rename":
		p.rename()
	case pr.Kind == PromptMismatch && verb == "update":
		p.closePrompt()
		if p.s.Transcript != "" {
			p.effect(&messages.IMStopFollowing{Path: p.s.Transcript})
		}
		p.event(&messages.IMAgentChanged{Agent: pr.Detected})
		// The new agent started after the old one: a transcript written
		// since the old one's launch may be the new one's.
		p.effect(&messages.IMFindAgentSession{WindowID: p.s.Window.WindowID, Tag: p.s.Tag, Agent: pr.Detected, Dir: p.s.Info.Cwd,
			Since: p.s.Info.Since, Fresh: true})
		p.recheck()
	case pr.Kind == PromptDead && verb == "recover":
		p.closePrompt()
		s := p.s
		if pr.Window != "" && pr.Window == s.Window.WindowID {
			// The window is alive and its agent exited: start it again there.
			p.event(&messages.IMSetupStep{Phase: PhaseRecovering, Step: StepWindow, Agent: s.Info.AgentType, Dir: s.Info.Cwd,
				Tag: s.Tag, Window: s.Window.WindowID, WindowName: s.Info.WindowName, Resume: s.Info.SessionID})
			p.launch(s.Info.SessionID)
			return
		}
		p.event(&messages.IMSetupStep{Phase: PhaseRecovering, Step: StepWindow, Agent: s.Info.AgentType, Dir: s.Info.Cwd,
			Gen: s.Gen + 1, Tag: tag(s.Key, s.Gen+1), Resume: s.Info.SessionID})
		p.effect(&messages.IMCreateWindow{Tag: p.s.Setup.Tag, Name: s.Chat.DisplayName, Dir: s.Info.Cwd})
	}
}

// rename accepts the chat side's name: the binding and the window take it.
func (p *plan) rename() {
	p.closePrompt()
	name := p.s.Name()
	p.event(&messages.IMRenamed{Name: name})
	p.effect(&messages.IMRenameWindow{WindowID: p.s.Window.WindowID, Name: name})
	p.recheck()
}

// recheck checks the window again for the queued messages.
func (p *plan) recheck() {
	if len(p.s.Queue) == 0 {
		return
	}
	p.event(&messages.IMResumed{})
	p.effect(p.check())
}

// check is the window check for the queue, with the oldest message to
// type at once if the window is as expected (the chat-side name, which
// the handler cannot see, is checked here).
func (p *plan) check() *messages.IMCheckWindow {
	s := p.s
	c := &messages.IMCheckWindow{WindowID: s.Window.WindowID, Tag: s.Tag}
	if len(s.Queue) > 0 && s.Phase == PhaseBound && s.Name() == s.Chat.DisplayName {
		q := s.Queue[0]
		c.Type = &messages.IMTypeIfWell{UpdateID: q.UpdateID, Text: q.Text, Name: s.windowName(), Agent: s.Info.AgentType}
	}
	return c
}

// checked routes the queued messages by the window check's outcome.
func (p *plan) checked(m *messages.IMWindowChecked) {
	s := p.s
	if s.Phase != PhaseBound || !s.Checking || m.WindowID != s.Window.WindowID {
		return // a check that no longer matters
	}
	if m.Typed != 0 {
		// All was well and the check typed the oldest message.
		if len(s.Queue) > 0 && s.Queue[0].UpdateID == m.Typed {
			p.event(&messages.IMChecked{Forward: true})
			p.sentToWindow(&messages.IMSentToWindow{UpdateID: m.Typed, Err: m.TypeErr, NotTaken: m.TypeNotTaken, NotReady: m.TypeNotReady})
		}
		return
	}
	user := s.Actor
	switch {
	case !m.Alive || m.Agent == "":
		p.event(&messages.IMChecked{})
		why, window := "The window of this session is gone.", ""
		if m.Alive {
			why, window = "The agent is no longer running in its window.", m.WindowID
		}
		p.askIn(PromptDead, why+" Your message is kept.", user, nil, "", window,
			[][]messages.IMButton{{{Text: "Recover", Data: "recover"}, {Text: "New Session", Data: "new"}}})
	case m.Agent != s.Info.AgentType:
		p.event(&messages.IMChecked{})
		p.ask(PromptMismatch, fmt.Sprintf("This thread is bound to %s, but %s runs in its window. Your message is kept.", s.Info.AgentType, m.Agent),
			user, nil, m.Agent,
			[][]messages.IMButton{{{Text: "Update Binding", Data: "update"}, {Text: "New Session", Data: "new"}}})
	case s.Name() != s.Chat.DisplayName || m.Name != s.windowName():
		p.event(&messages.IMChecked{})
		p.ask(PromptRename, fmt.Sprintf("This thread is now called %q; its session is %q. Rename the session? (Renamed in %s without an answer.)",
			s.Name(), s.Chat.DisplayName, p.k.cfg.RenameTimeout),
			user, nil, "",
			[][]messages.IMButton{{{Text: "Rename", Data: "rename"}, {Text: "New Session", Data: "new"}}})
		p.effect(&actors.StartTimer{Name: timerRename, After: p.k.cfg.RenameTimeout})
	default:
		p.forward()
	}
}

// windowName is the name the bound window should have, as tmux keeps it.
func (s *State) windowName() string {
	if s.Info.WindowName != "" {
		return s.Info.WindowName
	}
	return s.Chat.DisplayName
}

// forward types the oldest queued message into the window. One message
// per check: the one before may have ended the agent, and the next must
// not reach the shell left behind.
func (p *plan) forward() {
	p.event(&messages.IMChecked{Forward: true})
	q := p.s.Queue[0]
	p.effect(&messages.IMSendToWindow{WindowID: p.s.Window.WindowID, UpdateID: q.UpdateID, Text: q.Text})
}

func (p *plan) sentToWindow(m *messages.IMSentToWindow) {
	s := p.s
	i := slices.IndexFunc(s.Queue, func(q Queued) bool { return q.UpdateID == m.UpdateID && q.Sent })
	if i < 0 {
		return
	}
	if m.Err != "" && !m.NotTaken {
		if m.NotReady {
			if s.Held != m.UpdateID {
				p.event(&messages.IMTypingHeld{UpdateID: m.UpdateID})
				p.say(messages.IMOutEntry{Text: fmt.Sprintf("%s is not taking input now: its input line is not on screen (a question or a dialog may be open in its window). Your message waits and is typed once it is.",
					s.Info.AgentType)})
			}
			// Not at once: the agent waits on its user, maybe for long.
			p.event(&messages.IMResumed{Hold: true})
			p.effect(&actors.StartTimer{Name: timerTyping, After: typingRetry})
			return
		}
		p.event(&messages.IMResumed{})
		p.effect(p.check())
		return
	}
	check := len(s.Queue) > 1 && s.Phase == PhaseBound
	p.event(&messages.IMDelivered{UpdateID: m.UpdateID, Check: check})
	if m.NotTaken {
		// Typing it again would put it in the input line twice.
		p.say(messages.IMOutEntry{Text: fmt.Sprintf("Your message %q was typed into %s, but %s did not take it: it is still in its input line (%s). Open the window to send it, or clear the line and send it again.",
			clip(s.Queue[i].Text, 60), s.Info.AgentType, s.Info.AgentType, m.Err)})
	}
	if s.Info.SessionID == "" {
		// An agent writes its transcript only after its first prompt.
		p.effect(s.findBound())
	}
	if check {
		p.effect(p.check())
	}
}

func (p *plan) chatSent(m *messages.IMChatSent) {
	if p.s.OutFlight != m.Seq+1 {
		return // not the entry in flight: an answer from before a restart
	}
	switch {
	case m.Err != "" && !m.Permanent:
		p.effect(&actors.StartTimer{Name: timerOutbox, After: outboxRetry})
		return
	case m.Err != "":
		p.event(&messages.IMOutboxSent{Seq: m.Seq, Refused: m.Err})
	default:
		p.event(&messages.IMOutboxSent{Seq: m.Seq, MessageID: m.MessageID})
	}
	p.releaseOutbox()
}

// chatPartSent records the parts of a long entry sent so far: after a
// failure of a later part, or a restart, the entry goes on from the next
// part instead of showing the sent ones twice.
func (p *plan) chatPartSent(m *messages.IMChatPartSent) {
	s := p.s
	if s.OutFlight != m.Seq+1 || len(s.Outbox) == 0 || s.Outbox[0].Seq != m.Seq || m.Parts <= s.Outbox[0].Parts {
		return
	}
	p.event(&messages.IMOutboxPartSent{Seq: m.Seq, Parts: m.Parts})
}

// listed shows a directory listing in the browser.
func (p *plan) listed(m *messages.IMDirectoryListed) {
	s := p.s
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
			p.event(&messages.IMSetupStep{Phase: PhaseUnbound})
		} else if s.Prompt == nil {
			p.effect(&messages.IMListDirectory{})
		}
		return
	}
	user := s.Actor
	p.event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepDir, Agent: s.Setup.Agent, Dir: m.Path})
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
	s := p.s
	if s.Setup == nil || s.Setup.Step != StepWindow || m.Tag != s.Setup.Tag {
		return
	}
	if m.Err != "" {
		p.say(messages.IMOutEntry{Text: "Could not create the tmux window: " + m.Err})
		p.failFlow()
		return
	}
	st := *s.Setup
	st.Window, st.WindowName = m.WindowID, m.Name
	if s.Phase == PhaseSetup && p.k.cfg.Resumable[st.Agent] {
		st.Step = StepSessions
		p.event(setupEvent(s.Phase, st))
		p.effect(&messages.IMListAgentSessions{Agent: st.Agent, Dir: st.Dir})
		return
	}
	p.event(setupEvent(s.Phase, st))
	p.launch(st.Resume)
}

func setupEvent(phase string, st Setup) *messages.IMSetupStep {
	return &messages.IMSetupStep{Phase: phase, Step: st.Step, Agent: st.Agent, Dir: st.Dir, Tag: st.Tag, Window: st.Window,
		WindowName: st.WindowName, Resume: st.Resume, Since: st.Since}
}

// failFlow ends a setup or recovery that cannot go on: a setup starts
// over from the directory choice, a recovery asks again.
func (p *plan) failFlow() {
	s := p.s
	if s.Phase == PhaseRecovering {
		p.event(&messages.IMSetupStep{Phase: PhasePrompting})
		p.ask(PromptDead, "Recovery failed. Your messages are kept.", s.Actor, nil, "",
			[][]messages.IMButton{{{Text: "Recover", Data: "recover"}, {Text: "New Session", Data: "new"}}})
		return
	}
	p.event(&messages.IMSetupStep{Phase: PhaseSetup, Step: StepDir, Agent: s.Setup.Agent, Dir: s.Setup.Dir})
	p.effect(&messages.IMListDirectory{Path: s.Setup.Dir})
}

func (p *plan) sessionsListed(m *messages.IMAgentSessionsListed) {
	s := p.s
	if s.Setup == nil || s.Setup.Step != StepSessions {
		return
	}
	if len(m.Sessions) == 0 {
		p.launch("")
		return
	}
	st := *s.Setup
	st.Step = StepPick
	p.event(setupEvent(s.Phase, st))
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
	st := *p.s.Setup
	st.Step, st.Resume, st.Since = StepLaunch, id, p.now.UnixMilli()
	p.event(setupEvent(p.s.Phase, st))
	p.effect(st.launch())
}

func (p *plan) launched(m *messages.IMAgentLaunched) {
	s := p.s
	if s.Setup == nil || s.Setup.Step != StepLaunch || m.WindowID != s.Setup.Window {
		return
	}
	if m.Err != "" {
		p.say(messages.IMOutEntry{Text: "Could not start " + s.Setup.Agent + ": " + m.Err})
		p.failFlow()
		return
	}
	st := *s.Setup
	st.Step = StepFind
	p.event(setupEvent(s.Phase, st))
	p.effect(st.find())
}

// found finishes a flow (Session ready!) or records a session id found
// later for a bound window.
func (p *plan) found(m *messages.IMAgentSessionFound) {
	s := p.s
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
			p.effect(&actors.StartTimer{Name: timerFind, After: findRetry})
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
				p.effect(&actors.StartTimer{Name: timerFind, After: findRetry})
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
	s := p.s
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
	if p.s.LostSaid {
		return
	}
	p.event(&messages.IMSessionLostSaid{})
	p.say(messages.IMOutEntry{Text: "thatch has not found " + p.s.agent() + "'s session yet; its replies are relayed once it has (it keeps looking)."})
}

// agent is the binding's agent, or the flow's.
func (s *State) agent() string {
	if s.Info.AgentType == "" && s.Setup != nil {
		return s.Setup.Agent
	}
	return s.Info.AgentType
}

// bind records the binding and follows its transcript.
func (p *plan) bind(b *messages.IMBound) {
	if old := p.s.Transcript; old != "" && old != b.Transcript {
		p.effect(&messages.IMStopFollowing{Path: old})
	}
	p.event(b)
	if b.Transcript != "" {
		p.effect(&messages.IMFollowTranscript{Path: b.Transcript, Agent: b.Agent, Offset: b.Offset, Tag: b.Tag, SessionID: b.SessionID})
	}
}

// transcript relays the agent's replies read from its transcript.
func (p *plan) transcript(m *messages.IMTranscriptRead) {
	s := p.s
	if m.Path != s.Transcript || (m.To <= s.Offset && !m.Reset) {
		return // another file, or read before (a restart reads again)
	}
	p.event(&messages.IMRepliesRead{To: m.To})
	var out []messages.IMOutEntry
	for i, r := range m.Replies {
		if !m.Reset && len(m.Ends) == len(m.Replies) && m.Ends[i] <= s.Offset {
			continue // relayed before: the batch was read again after a delivery that landed
		}
		if strings.TrimSpace(r) != "" {
			out = append(out, messages.IMOutEntry{Text: r, Markdown: true})
		}
	}
	if len(out) > 0 {
		p.say(out...)
	}
}

func (p *plan) tick(m *actors.Tick) {
	switch m.Name {
	case timerRename:
		if p.s.Prompt != nil && p.s.Prompt.Kind == PromptRename {
			p.rename()
		}
	case timerOutbox:
		p.sendHead() // again, after a failed send: the head is the entry in flight
	case timerFind:
		if s := p.s; s.lookingForSession() {
			p.effect(s.findBound())
		}
	case timerTyping:
		if s := p.s; s.Phase == PhaseBound && !s.Checking && !s.sending() && len(s.Queue) > 0 {
			p.event(&messages.IMResumed{})
			p.effect(p.check())
		}
	}
}

// lost reports a bound binding whose agent's session is not known: its
// replies cannot be relayed until it is found.
func (s *State) lost() bool {
	return s.Window.WindowID != "" && s.Info.SessionID == "" && s.Transcript == ""
}

// lookingForSession reports a lost binding with no flow of its own
// running: it looks for its agent's session every findRetry.
func (s *State) lookingForSession() bool {
	return s.lost() && (s.Phase == PhaseBound || s.Phase == PhasePrompting)
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

// recovered re-issues what a crash may have cut short: unsent chat
// messages, the transcript follower, a window check for queued messages,
// and the effect of the flow's current step.
func (p *plan) recovered() {
	s := p.s
	p.sendHead() // nothing is in flight after a restart
	if s.Transcript != "" && s.Bound() {
		p.effect(&messages.IMFollowTranscript{Path: s.Transcript, Agent: s.Info.AgentType, Offset: s.Offset, Tag: s.Tag, SessionID: s.Info.SessionID})
	}
	if s.Prompt != nil && s.Prompt.Kind == PromptRename {
		p.effect(&actors.StartTimer{Name: timerRename, After: p.k.cfg.RenameTimeout})
	}
	if s.lookingForSession() {
		p.effect(&actors.StartTimer{Name: timerFind, After: findRetry})
	}
	if s.Phase == PhaseBound && len(s.Queue) > 0 {
		p.event(&messages.IMResumed{})
		p.effect(p.check())
	}
	if s.Setup == nil || (s.Phase != PhaseSetup && s.Phase != PhaseRecovering) {
		return
	}
	st := s.Setup
	switch st.Step {
	case StepDir:
		if s.Prompt == nil {
			p.effect(&messages.IMListDirectory{Path: st.Dir})
		}
	case StepWindow:
		name := s.Name()
		if s.Phase == PhaseRecovering {
			name = s.Chat.DisplayName
		}
		p.effect(&messages.IMCreateWindow{Tag: st.Tag, Name: name, Dir: st.Dir})
	case StepSessions:
		p.effect(&messages.IMListAgentSessions{Agent: st.Agent, Dir: st.Dir})
	case StepLaunch:
		p.effect(st.launch())
	case StepFind:
		p.effect(st.find())
	}
}

// Apply returns the state after ev; s is left as it was.
func (*Kind) Apply(s *State, ev any) *State {
	n := *s
	if applyChat(&n, s, ev) || applyBinding(&n, s, ev) {
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
		if n.Chat.ChatID == 0 {
			n.Chat.ChatID, n.Chat.ThreadID = e.ChatID, e.ThreadID
		}
		n.Topic = s.Topic || e.Topic
		if e.Actor {
			n.Actor = e.UserID
		}
		if e.TopicName != "" {
			n.TopicName = e.TopicName
		}
		if e.Text != "" {
			n.Queue = append(slices.Clip(s.Queue), Queued{UpdateID: e.UpdateID, Text: e.Text})
		}
		if e.Check {
			n.Checking = true
		}
	case *messages.IMOutboxAdded:
		n.Outbox = slices.Clip(s.Outbox)
		for i, entry := range e.Entries {
			n.Outbox = append(n.Outbox, Out{Seq: e.Seq + uint64(i), IMOutEntry: entry})
		}
		n.NextSeq = e.Seq + uint64(len(e.Entries))
	case *messages.IMOutboxReleased:
		n.OutFlight = e.Seq + 1
	case *messages.IMOutboxPartSent:
		i := slices.IndexFunc(s.Outbox, func(o Out) bool { return o.Seq == e.Seq })
		if i >= 0 {
			n.Outbox = slices.Clone(s.Outbox)
			n.Outbox[i].Parts = e.Parts
		}
	case *messages.IMOutboxSent:
		if s.OutFlight == e.Seq+1 {
			n.OutFlight = 0
		}
		i := slices.IndexFunc(s.Outbox, func(o Out) bool { return o.Seq == e.Seq })
		if i < 0 {
			return true
		}
		if e.Refused != "" {
			n.Refused = e.Refused
		}
		if pr := s.Prompt; pr != nil && s.Outbox[i].Prompt == pr.Nonce && e.MessageID != 0 {
			c := *pr
			c.MessageIDs = append(slices.Clip(pr.MessageIDs), e.MessageID)
			n.Prompt = &c
		}
		n.Outbox = slices.Delete(slices.Clone(s.Outbox), i, i+1)
	case *messages.IMPromptOpened:
		n.Nonce = e.Nonce
		n.Prompt = &Prompt{Kind: e.Kind, Nonce: e.Nonce, UserID: e.UserID, Choices: e.Choices, Detected: e.Detected, Window: e.Window,
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
			n.Setup = &Setup{Step: e.Step, Agent: e.Agent, Dir: e.Dir, Tag: e.Tag, Window: e.Window, WindowName: e.WindowName, Resume: e.Resume, Since: e.Since}
		}
		if e.Gen > n.Gen {
			n.Gen = e.Gen
		}
		n.Checking = false
		if e.Phase == PhaseSetup && e.Step == StepAgent {
			n.Transcript, n.Offset = "", 0
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
			n.Transcript, n.Offset = e.Transcript, e.Offset
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
		n.Transcript, n.Offset = "", 0
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
	case *messages.IMTypingHeld:
		n.Held = e.UpdateID
	case *messages.IMSessionLostSaid:
		n.LostSaid = true
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
}

// View shows the binding.
func (*Kind) View(s *State) any {
	v := View{Thread: s.Key, DisplayName: s.Chat.DisplayName, Agent: s.Info.AgentType, Window: s.Window.WindowID,
		Session: s.Info.SessionID, State: s.Phase, Queued: len(s.Queue), Unsent: len(s.Outbox), Refused: s.Refused}
	if v.DisplayName == "" {
		v.DisplayName = s.Name()
	}
	if s.Setup != nil {
		v.Step = s.Setup.Step
		if v.Agent == "" {
			v.Agent = s.Setup.Agent
		}
	}
	if s.LastAt > 0 {
		v.LastMessage = time.UnixMilli(s.LastAt).UTC().Format(time.RFC3339)
	}
	return v
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
