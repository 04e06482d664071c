package imbinding

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/chatout"
	"github.com/thatch-run/thatch/actors/liveturn"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the kind of the binding entities. An entity's id is its
// thread's key, as the thread's chat adapter made it (im/chat: the scheme,
// a colon, the platform's ids: "tg:<chat>:<thread>", "fs:<chat_id>",
// "fs:<chat_id>:<thread_id>"); the binding reads nothing from it but a
// name to fall back on (State.Name).
const KindName = "im.binding"

// Phases of a binding.
const (
	PhaseUnbound    = "unbound"
	PhaseSetup      = "setup"
	PhaseBound      = "bound"
	PhasePrompting  = "prompting"
	PhaseRecovering = "recovering"
	// PhaseEnded: the thread's chat is over for the bot (State.Ended).
	PhaseEnded = "ended"
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
	timerOutbox = chatout.Timer
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
	// findRetry is how often a binding whose agent's session was not
	// found looks for it again (replies can only be relayed once it is).
	findRetry = 30 * time.Second
	// typingRetry is how long a message waits, after the agent showed no
	// input line (a dialog of its own is open), before it is tried again.
	typingRetry = 10 * time.Second
)

// ModeCycle is Config.Modes' value for an agent whose modes /mode cycles
// through with Shift+Tab, reading its footer (claude's).
const ModeCycle = "cycle"

// Config is what the front end's configuration tells the kind.
type Config struct {
	// Agents are the agents offered by the setup flow, in order.
	Agents []string
	// Resumable are the agents whose sessions can be resumed (a resume
	// command is configured); only they get the session picker.
	Resumable map[string]bool
	// Modes is how /mode switches each agent's permission mode
	// (im.agents.NAME.mode): ModeCycle, a slash command typed into the
	// agent, or nothing (it cannot).
	Modes map[string]string
	// RenameTimeout is how long a rename prompt waits before the rename
	// is accepted.
	RenameTimeout time.Duration
	// KillOnClose kills the window of a binding whose chat ended
	// (im.on_close = "kill"); by default it is kept.
	KillOnClose bool
	// Live shows each turn of the agent as one live message (im.live =
	// "turn"; live.go), edited at most once per LiveEvery; ShowTools
	// shows tool calls as lines when it does not (im.show_tools).
	Live      bool
	LiveEvery time.Duration
	ShowTools bool
	// AlertAfter: a final answer after more work than this says how long
	// it took (im.alert_after; 0: never).
	AlertAfter time.Duration
}

// ChatBinding is the chat side of a binding: the thread itself is the
// entity's id.
type ChatBinding struct {
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
	// Retried: the window was made again once already, after tmux lost
	// the first (the next loss ends the flow).
	Retried bool `json:"retried,omitempty"`
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
	// User is the user the prompt answers to, in the platform's ids.
	User string `json:"user,omitempty"`
	// MessageIDs are the chat messages that carried the prompt: more
	// than one when a crash cut a send short and it was sent again.
	MessageIDs []string `json:"messageIDs,omitempty"`
	Choices    []string `json:"choices,omitempty"`
	Detected   string   `json:"detected,omitempty"`
}

// Queued is a message waiting to be typed into the window. Sent marks one
// being typed now.
type Queued struct {
	UpdateID int64  `json:"updateID"`
	Text     string `json:"text"`
	Sent     bool   `json:"sent,omitempty"`
	// File is a file not saved yet (in State.Waiting only), with its
	// Caption and when it came (At, Unix milliseconds); see files.go.
	File    *messages.IMFile `json:"file,omitempty"`
	Caption string           `json:"caption,omitempty"`
	At      int64            `json:"at,omitempty"`
}

// Out is a chat message in the outbox.
type Out = chatout.Out

// State is a binding's state. Apply never changes a State in place.
type State struct {
	Key    string        `json:"key"`
	Phase  string        `json:"phase"`
	Chat   ChatBinding   `json:"chat"`
	Window WindowBinding `json:"window"`
	Info   SessionInfo   `json:"info"`
	// TopicName is the thread's name as the chat side knows it (a topic's
	// or a chat's, as the updates teach it).
	TopicName string `json:"topicName,omitempty"`
	// Transcript is the file followed for replies, read up to Offset.
	Transcript string `json:"transcript,omitempty"`
	Offset     int64  `json:"offset,omitempty"`
	// Context is the share of the model's context window the session's
	// newest request used, as its transcript says ("34%"; "" unknown).
	Context string `json:"context,omitempty"`
	// SwitchSeen is the newest hook entry the binding was told of (see
	// messages.IMSwitchSeen).
	SwitchSeen messages.IMSwitchSeen `json:"switchSeen,omitzero"`
	// LastUpdate is the id of the last update handled, at LastAt (Unix
	// milliseconds): an id at or below it is a repeat (see seen).
	LastUpdate int64 `json:"lastUpdate,omitempty"`
	// Actor is the user the open flow or prompt answers to, in the
	// platform's ids.
	Actor string `json:"actor,omitempty"`
	// Tag is the bound window's tag (see messages.IMCheckWindow).
	Tag      string   `json:"tag,omitempty"`
	LastAt   int64    `json:"lastAt,omitempty"`
	Setup    *Setup   `json:"setup,omitempty"`
	Prompt   *Prompt  `json:"prompt,omitempty"`
	Nonce    uint64   `json:"nonce,omitempty"`
	Gen      uint64   `json:"gen,omitempty"`
	Checking bool     `json:"checking,omitempty"`
	Queue    []Queued `json:"queue,omitempty"`
	// Waiting are the messages behind a file not saved yet, the file
	// first: they join Queue, in order, once it is (files.go).
	Waiting []Queued `json:"waiting,omitempty"`
	// Box is the outbox of what the binding says to its thread.
	chatout.Box
	// Held is the queued message the user was told waits for the agent
	// to take input (0: none).
	Held int64 `json:"held,omitempty"`
	// Refused is why the chat last refused a message of the binding for
	// good (it was dropped), for status; "" when none was.
	Refused string `json:"refused,omitempty"`
	// LostSaid: the user was told the agent's session is not found yet.
	LostSaid bool `json:"lostSaid,omitempty"`
	// Ended is set while the binding is ended (PhaseEnded).
	Ended *Ending `json:"ended,omitempty"`
	// Turn is the agent's turn shown live (live.go), if one is under way.
	Turn *liveturn.Turn `json:"turn,omitempty"`
	// Summaries are the summaries owed to the live messages of turns that
	// ended (message id -> text): each edit is tried again until the chat
	// takes it or refuses it for good.
	Summaries map[string]string `json:"summaries,omitempty"`
	// Asked is the agent's own prompt shown in the chat, if any.
	Asked *AgentAsk `json:"asked,omitempty"`
	// Work is when the agent was last set to work (Unix milliseconds),
	// while its window is watched (work.go); 0 when it is not at work.
	Work int64 `json:"work,omitempty"`
}

// The state's version 2 keeps users and message ids as text. Version 1
// kept them as numbers (Telegram's), with the chat and thread ids (now
// read from the key) and the topic flag (read by nothing): a snapshot of
// it decodes with the numbers as their decimal text.
func init() {
	messages.Register[State]("im.binding.state", 2)
	messages.RegisterUpgrade("im.binding.state", 1, upgradeStateV1)
}

// upgradeStateV1 turns a version 1 snapshot into version 2.
func upgradeStateV1(old json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(old, &obj); err != nil {
		return nil, err
	}
	if err := messages.IDsToText(obj, map[string]string{"actor": "actor"}, "topic"); err != nil {
		return nil, err
	}
	inner := func(field string, ids map[string]string, drop ...string) error {
		raw, ok := obj[field]
		if !ok || string(raw) == "null" {
			return nil
		}
		var o map[string]json.RawMessage
		if err := json.Unmarshal(raw, &o); err != nil {
			return err
		}
		if err := messages.IDsToText(o, ids, drop...); err != nil {
			return err
		}
		b, err := json.Marshal(o)
		obj[field] = b
		return err
	}
	if err := inner("chat", nil, "chatID", "threadID"); err != nil {
		return nil, err
	}
	if err := inner("prompt", map[string]string{"userID": "user", "messageIDs": "messageIDs"}); err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// Bound reports whether the thread has a binding to a window.
func (s *State) Bound() bool { return s.Window.WindowID != "" && s.Phase != PhaseSetup }

// Name is the thread's name as the chat side's updates taught it, or,
// when none did, one made from the key: "topic-<thread>" for a key with a
// chat and a thread ("tg:<chat>:<thread>", "fs:<chat_id>:<thread_id>"),
// "chat-<chat>" for a key of a whole chat ("fs:<chat_id>").
func (s *State) Name() string {
	if s.TopicName != "" {
		return s.TopicName
	}
	return FallbackName(s.Key)
}

// FallbackName is the name of a thread no update named (see State.Name).
func FallbackName(key string) string {
	_, rest, ok := strings.Cut(key, ":")
	if !ok {
		return "topic-" + key
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		return "topic-" + rest[i+1:]
	}
	return "chat-" + rest
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

// Effects are the effects a binding releases (actors.EffectLister).
func (*Kind) Effects() []any {
	list := []Effect{
		(*messages.IMSendChat)(nil), (*messages.IMAnswerPress)(nil), (*messages.IMClearButtons)(nil),
		(*messages.IMCheckWindow)(nil), (*messages.IMSendToWindow)(nil), (*messages.IMSendKeys)(nil),
		(*messages.IMCreateWindow)(nil), (*messages.IMLaunchAgent)(nil), (*messages.IMCloseWindow)(nil),
		(*messages.IMRenameWindow)(nil), (*messages.IMAdoptWindow)(nil), (*messages.IMListFreeWindows)(nil),
		(*messages.IMListDirectory)(nil), (*messages.IMListAgentSessions)(nil), (*messages.IMFindAgentSession)(nil),
		(*messages.IMFollowTranscript)(nil), (*messages.IMStopFollowing)(nil), (*messages.IMListBindings)(nil),
		(*messages.IMReadHistory)(nil), (*messages.IMScreenshot)(nil), (*messages.IMSaveFile)(nil),
		(*messages.IMAnswerAgentPrompt)(nil), (*messages.IMWatchPane)(nil), (*messages.IMLiveSend)(nil),
		(*messages.IMLiveEdit)(nil), (*messages.IMReadUsage)(nil), (*messages.IMSetMode)(nil),
		(*messages.IMBoardRow)(nil), (*messages.IMBoardShow)(nil), (*messages.IMRecallMemory)(nil),
		(*messages.IMRememberMemory)(nil), (*messages.IMShowMemory)(nil),
	}
	out := make([]any, len(list))
	for i, e := range list {
		out[i] = e
	}
	return out
}

// Initial is a thread with no binding.
func (*Kind) Initial(id string) *State {
	return &State{Key: id, Phase: PhaseUnbound}
}

// Active reports unfinished work: a flow or prompt, queued messages,
// unsent chat messages, a transcript to follow (so that the follower is
// set up again at start), or an agent at work (so that its watch is).
func (*Kind) Active(s *State) bool {
	if s.Phase == PhaseEnded {
		return len(s.Outbox) > 0 // its transcript is not followed while it is ended
	}
	return s.Phase == PhaseSetup || s.Phase == PhaseRecovering || s.Phase == PhasePrompting ||
		len(s.Queue) > 0 || len(s.Waiting) > 0 || len(s.Outbox) > 0 || s.Transcript != "" || s.Work != 0
}

// sending reports whether queued messages are being typed now.
func (s *State) sending() bool {
	return slices.ContainsFunc(s.Queue, func(q Queued) bool { return q.Sent })
}

// windowName is the name the bound window should have, as tmux keeps it.
func (s *State) windowName() string {
	if s.Info.WindowName != "" {
		return s.Info.WindowName
	}
	return s.Chat.DisplayName
}

// agent is the binding's agent, or the flow's.
func (s *State) agent() string {
	if s.Info.AgentType == "" && s.Setup != nil {
		return s.Setup.Agent
	}
	return s.Info.AgentType
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
