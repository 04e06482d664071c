package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// This file holds the IM front end's vocabulary: what a chat thread's
// binding entity (actors/imbinding) is told, the effects it asks the front
// end to carry out, the results that come back, and the events it
// journals. A binding binds one chat thread (a Telegram forum topic or
// private chat, a Feishu chat or topic) to one agent session running in a
// tmux window.
//
// Nothing here is Telegram's: a thread is named by its binding's entity id
// (the chat adapter's thread key, im/chat), and users and chat messages by
// the platform's ids as text (decimal on Telegram, open ids and message
// ids on Feishu). Events of an older thatch carried them as numbers, with
// the chat and thread ids: those bodies (version 1) are upgraded on
// decode, the numbers becoming their decimal text (see IDsToText).

// Chat-side inputs. The front end has already checked the user against the
// allow-list and the text against the size limit.

// IMUpdateIDReset is how long a thread may go without any update before
// its adapter may number the next one lower than the last: Telegram may
// then number at random instead of in sequence ("at least a week"; a day
// of margin). The Telegram bot asks from its earliest unconfirmed update
// after this long, and a binding takes an id at or below its last one as
// a new numbering, not a repeat. The im/chat package doc says what this
// asks of every adapter.
const IMUpdateIDReset = 6 * 24 * time.Hour

// IMUpdate is one chat update for a thread: a message (Text), a name the
// update teaches (TopicName with NameSource), or both. UpdateID orders
// updates: the adapter's id (chat.Update.ID), the same when the platform
// delivers the update again and increasing along the thread; a binding
// handles each id once (see IMUpdateIDReset).
type IMUpdate struct {
	UpdateID int64 `json:"updateID"`
	// User is the sender, in the platform's ids.
	User       string `json:"user,omitempty"`
	Text       string `json:"text,omitempty"`
	TopicName  string `json:"topicName,omitempty"`
	NameSource string `json:"nameSource,omitempty"`
	// Start marks the bot's /start command (what Telegram sends when a
	// user first opens a chat with the bot): it starts the setup of a
	// thread with no binding and is never typed to an agent.
	Start bool `json:"start,omitempty"`
	// Media names what the message carried that is not text ("photo",
	// ...); Text is then its caption, with a note, or "". A message whose
	// File is set has no such note.
	Media string `json:"media,omitempty"`
	// File is the file the message carried, saved in the binding's inbox
	// and named to the agent with Caption ("" none) after it.
	File    *IMFile `json:"file,omitempty"`
	Caption string  `json:"caption,omitempty"`
	// Forgotten names the machine of a cluster that had the thread's
	// binding and lost it (its data was replaced): the thread is set up
	// anew, and the user is told why.
	Forgotten string `json:"forgotten,omitempty"`
}

// Sources of a topic name, in the order of trust: a name from a
// forum_topic_edited service message is the newest; one from
// forum_topic_created is the first; a seed (the reply_to_message that
// messages in a topic carry) keeps the original name and only fills a
// name not known yet.
const (
	NameCreated = "created"
	NameEdited  = "edited"
	NameSeed    = "seed"
)

// IMPress is a press of an inline button the binding sent. The nonce in
// Data names the prompt (and so the messages that carried it); User is who
// pressed, in the platform's ids. UpdateID is as IMUpdate's.
type IMPress struct {
	UpdateID   int64  `json:"updateID"`
	User       string `json:"user,omitempty"`
	CallbackID string `json:"callbackID"`
	Data       string `json:"data"`
	// MessageID is the message that carries the button ("" unknown).
	MessageID string `json:"messageID,omitempty"`
}

// IMAgentPrompt says the agent waits on an interactive prompt of its own
// (a permission dialog, a numbered choice), as the front end found it on
// the window's screen: Text is its question and context as the chat shows
// them, Options its options in order. Fingerprint names the prompt (the
// same while it stays open).
type IMAgentPrompt struct {
	Fingerprint string          `json:"fingerprint"`
	Text        string          `json:"text"`
	Options     []IMAgentOption `json:"options"`
}

// IMAgentOption is one option of an agent's prompt: its label as shown and
// the tmux keys that choose it.
type IMAgentOption struct {
	Label string   `json:"label"`
	Keys  []string `json:"keys"`
}

// IMAgentPromptGone says the prompt Fingerprint is no longer on the
// window's screen (answered in the terminal, or given up).
type IMAgentPromptGone struct {
	Fingerprint string `json:"fingerprint"`
}

// IMNotice is something the front end tells a thread without its
// binding (see actors/imnotice): a text, with Buttons when it asks,
// sent once, in order. Question marks a cluster's machine question, whose
// buttons IMCloseQuestion clears.
type IMNotice struct {
	Text string `json:"text"`
	// Silent: the notice does not notify the phone.
	Silent   bool         `json:"silent,omitempty"`
	Buttons  [][]IMButton `json:"buttons,omitempty"`
	Question bool         `json:"question,omitempty"`
}

// IMCloseQuestion clears the buttons of the thread's machine question
// (IMNotice.Question): the machine was chosen.
type IMCloseQuestion struct{}

// IMAgentIdle says the watch of the agent at work since Since (Unix
// milliseconds, as IMWatchPane gave it) saw it stop: its window stayed
// still with no prompt of its own (Why AgentIdleQuiet), or the window is
// gone (AgentIdleGone).
type IMAgentIdle struct {
	Since int64  `json:"since"`
	Why   string `json:"why"`
}

// Why an IMAgentIdle was sent.
const (
	AgentIdleQuiet = "quiet"
	AgentIdleGone  = "gone"
)

// IMTranscriptRead carries the agent's replies that the transcript
// follower read between byte offsets From and To of Path.
type IMTranscriptRead struct {
	Path    string   `json:"path"`
	From    int64    `json:"from"`
	To      int64    `json:"to"`
	Replies []string `json:"replies"`
	// Ends are the offsets where each reply's line ends, so that a batch
	// read again after a delivery that did land is not relayed twice.
	Ends []int64 `json:"ends,omitempty"`
	// Reset: the file was truncated or replaced, and is read from its
	// start again (From is 0): the binding's offset goes back to To.
	Reset bool `json:"reset,omitempty"`
	// Items, when set, are what the lines say of the agent's turn, with
	// ItemEnds where each one's line ends (as Ends); Replies is then
	// empty (a transcript's reader gives items, a pane's replies).
	Items    []IMTurnItem `json:"items,omitempty"`
	ItemEnds []int64      `json:"itemEnds,omitempty"`
}

// IMChatEnded says the thread's chat is over for the bot: the platform
// said so (a Feishu chat disbanded, the bot removed from it). Reason says
// why, for status and the log. UpdateID and User are as IMUpdate's.
type IMChatEnded struct {
	UpdateID int64  `json:"updateID"`
	User     string `json:"user,omitempty"`
	Reason   string `json:"reason"`
	// Reopenable: the thread may come back (a Telegram topic closed):
	// IMChatReopened binds it again to the same session.
	Reopenable bool `json:"reopenable,omitempty"`
}

// IMChatReopened says a thread that ended Reopenable is back (a Telegram
// topic reopened).
type IMChatReopened struct {
	UpdateID int64  `json:"updateID"`
	User     string `json:"user,omitempty"`
}

// IMCommand is one of thatch's own commands (im/chat.Commands but
// /start) given in the thread: Name without its slash, Args what
// followed. UpdateID and User are as IMUpdate's.
type IMCommand struct {
	UpdateID int64  `json:"updateID"`
	User     string `json:"user,omitempty"`
	Name     string `json:"name"`
	Args     string `json:"args,omitempty"`
}

// Effects of a binding, carried out by the IM front end. Each names what
// must be done; its result comes back as the message named in its comment.

// IMCheckWindow reads the window's name and the agent running in it.
// Result: *IMWindowChecked.
type IMCheckWindow struct {
	WindowID string `json:"windowID"`
	// Tag is the tag the window was made with: tmux numbers windows anew
	// after its server restarts, so an id alone may name another window.
	Tag string `json:"tag,omitempty"`
	// Type, when set, is typed in the same step if the check finds all
	// well (the window named Type.Name, running Type.Agent): the common
	// case costs one effect, not a check and then a send.
	Type *IMTypeIfWell `json:"type,omitempty"`
}

// IMTypeIfWell is the queued message an IMCheckWindow types when the
// window is as the binding expects.
type IMTypeIfWell struct {
	UpdateID int64  `json:"updateID"`
	Text     string `json:"text"`
	Name     string `json:"name"`
	Agent    string `json:"agent"`
}

// IMSendToWindow types Text into the window literally, then Enter.
// Result: *IMSentToWindow.
type IMSendToWindow struct {
	WindowID string `json:"windowID"`
	UpdateID int64  `json:"updateID"`
	Text     string `json:"text"`
}

// IMButton is one inline button: its label and its callback data (at most
// 64 bytes, Telegram's limit).
type IMButton struct {
	Text string `json:"text"`
	Data string `json:"data"`
}

// IMSendChat sends one outbox entry to the thread (the binding's: its
// entity id is the thread's key). Result: *IMChatSent.
type IMSendChat struct {
	Seq      uint64       `json:"seq"`
	Text     string       `json:"text"`
	Markdown bool         `json:"markdown,omitempty"`
	Buttons  [][]IMButton `json:"buttons,omitempty"`
	// Silent: the message does not notify (a tool line).
	Silent bool `json:"silent,omitempty"`
	// FromPart is how many of the text's parts (a long text goes out as
	// several messages) were sent before: a send tried again after a
	// failure or a restart goes on from the next one.
	FromPart int `json:"fromPart,omitempty"`
}

// IMAnswerPress answers a button press (Telegram shows a spinner until it
// is answered). No result.
type IMAnswerPress struct {
	CallbackID string `json:"callbackID"`
	Text       string `json:"text,omitempty"`
}

// IMClearButtons removes the buttons of a prompt that was answered, from
// the message MessageID of the binding's thread. No result.
type IMClearButtons struct {
	MessageID string `json:"messageID"`
}

// IMListDirectory lists the subdirectories of Path for the setup browser.
// An empty Path, or one outside the configured roots, lists the first root
// instead. Result: *IMDirectoryListed.
type IMListDirectory struct {
	Path string `json:"path"`
}

// IMCreateWindow makes a window named Name in Dir, tagged Tag; a window
// with that tag already there is reused, so a repeat after a crash never
// makes a second one. Result: *IMWindowCreated.
type IMCreateWindow struct {
	Tag  string `json:"tag"`
	Name string `json:"name"`
	Dir  string `json:"dir"`
}

// IMListAgentSessions lists Agent's sessions for Dir, newest first.
// Result: *IMAgentSessionsListed.
type IMListAgentSessions struct {
	Agent string `json:"agent"`
	Dir   string `json:"dir"`
}

// IMLaunchAgent starts Agent in the window (resuming SessionID when it is
// set), unless the agent already runs there. Result: *IMAgentLaunched.
type IMLaunchAgent struct {
	WindowID string `json:"windowID"`
	// Tag keys what the agent's hook records for this window.
	Tag       string `json:"tag,omitempty"`
	Agent     string `json:"agent"`
	SessionID string `json:"sessionID,omitempty"`
	// Dir is the directory the agent runs in.
	Dir string `json:"dir,omitempty"`
}

// IMFindAgentSession looks for the session id of the agent running in the
// window, without disturbing it. Result: *IMAgentSessionFound.
type IMFindAgentSession struct {
	WindowID string `json:"windowID"`
	Tag      string `json:"tag,omitempty"`
	Agent    string `json:"agent"`
	Dir      string `json:"dir"`
	// Known is the id the agent was resumed with, if any.
	Known string `json:"known,omitempty"`
	// Fresh: the agent was started just now, so its transcript is read
	// from the start; otherwise from its current end.
	Fresh bool `json:"fresh,omitempty"`
	// Brief asks for a short search: the agent is running already and
	// later effects of the binding wait behind this one.
	Brief bool `json:"brief,omitempty"`
	// Since is when the agent was launched (Unix milliseconds; 0 when
	// unknown): a transcript for Dir written since then, that no other
	// thread follows, is the agent's when nothing else tells.
	Since int64 `json:"since,omitempty"`
}

// IMRenameWindow renames the window. Result: *IMWindowRenamed.
type IMRenameWindow struct {
	WindowID string `json:"windowID"`
	Name     string `json:"name"`
}

// IMFollowTranscript asks the follower to read Path from byte Offset on,
// for Agent, and deliver what it reads (IMTranscriptRead). No result.
type IMFollowTranscript struct {
	Path   string `json:"path"`
	Agent  string `json:"agent"`
	Offset int64  `json:"offset"`
	// Tag and SessionID are the window and the session the transcript is
	// followed for: when the agent's hook reports another session for
	// the window (claude's /clear, /resume), the follower tells the
	// binding (IMSessionChanged).
	Tag       string `json:"tag,omitempty"`
	SessionID string `json:"sessionID,omitempty"`
}

// IMCloseWindow kills a binding's window: its chat ended and im.on_close
// says "kill", the user's /kill, a New Session replacing it. Tag is the
// window's tag, checked before the kill so that a window tmux numbered
// anew is never killed. No result: a window already gone is closed.
type IMCloseWindow struct {
	WindowID string `json:"windowID"`
	Tag      string `json:"tag,omitempty"`
}

// IMSendKeys sends a key to the agent in the window (Key: "esc",
// "interrupt", "enter"; the agent's keys for it come from its config),
// when the window still carries Tag. Result: *IMKeysSent.
type IMSendKeys struct {
	WindowID string `json:"windowID"`
	Tag      string `json:"tag,omitempty"`
	Agent    string `json:"agent"`
	Key      string `json:"key"`
}

// IMScreenshot sends the window's pane to the thread as a picture, with
// buttons (Refresh, Esc, Enter, Ctrl-C) whose data Buttons gives. Result:
// *IMScreenshotSent.
type IMScreenshot struct {
	WindowID string       `json:"windowID"`
	Tag      string       `json:"tag,omitempty"`
	Name     string       `json:"name"`
	Buttons  [][]IMButton `json:"buttons,omitempty"`
	// Open, when set, is a slash command typed into Agent first (claude's
	// /usage): the pane is captured once the dialog it opens has settled,
	// and Escape closes it again.
	Open  string `json:"open,omitempty"`
	Agent string `json:"agent,omitempty"`
}

// IMReadHistory reads the last N exchanges of the agent's transcript at
// Path. Result: *IMHistoryRead.
type IMReadHistory struct {
	Path  string `json:"path"`
	Agent string `json:"agent"`
	N     int    `json:"n"`
}

// IMBoardRow is one thread's line on its chat's board (actors/imboard):
// an effect of the binding when its line changed, which the front end
// hands to the board; State is one of the Board states, or "ended: why",
// or "" for a thread no longer bound (off the board).
// Since (Unix ms) is when the state began.
type IMBoardRow struct {
	Thread  string `json:"thread"`
	Name    string `json:"name"`
	Agent   string `json:"agent"`
	Machine string `json:"machine,omitempty"`
	State   string `json:"state"`
	// Context is the share of the context window in use ("34%"; ""
	// unknown).
	Context string `json:"context,omitempty"`
	Since   int64  `json:"since,omitempty"`
}

// States of a board row.
const (
	BoardWorking = "working"
	BoardWaiting = "waiting for you"
	BoardIdle    = "idle"
	BoardSetup   = "setting up"
	// BoardDown is a cluster's row whose machine is not up: what its
	// thread does is not known until the machine is back.
	BoardDown = "its machine is down"
)

// IMBoardShow asks for the board of the chat of the binding's thread
// (/board). No result.
type IMBoardShow struct{}

// IMBoardSend sends a chat's board to Thread, silently, and pins it.
// Result: *IMBoardSent.
type IMBoardSend struct {
	Thread string
	Text   string
	Rev    uint64
}

// IMBoardEdit edits the board MessageID in Thread. Result: *IMBoardSent.
type IMBoardEdit struct {
	Thread    string
	MessageID string
	Text      string
	Rev       uint64
}

// IMBoardSent is how a board's send or edit went.
type IMBoardSent struct {
	Rev       uint64
	MessageID string
	Err       string
}

// IMSetMode switches the permission mode of the agent in WindowID (Tag
// checked): with Command (a slash command, such as codex's /approvals),
// Command is typed into the agent, whose dialog comes to the chat as a
// prompt; otherwise to Mode (claude: "manual", "accept-edits", "plan",
// "auto", by Shift+Tab until its footer shows it). Result: *IMModeSet.
type IMSetMode struct {
	WindowID string `json:"windowID"`
	Tag      string `json:"tag"`
	Agent    string `json:"agent"`
	Mode     string `json:"mode"`
	Command  string `json:"command,omitempty"`
}

// IMModeSet says how a mode switch went: Mode is the mode the agent shows
// now ("" unknown), Err why it is not the one asked for.
type IMModeSet struct {
	Mode string `json:"mode,omitempty"`
	Err  string `json:"err,omitempty"`
}

// ClaudeModes are claude's permission modes as /mode names them, in the
// order Shift+Tab cycles them (claude 2.1.328).
var ClaudeModes = []string{"manual", "accept-edits", "plan", "auto"}

// IMReadUsage reads what the agent's session at Path used (tokens, the
// context in use, an estimated cost). Result: *IMUsageRead.
type IMReadUsage struct {
	Path  string `json:"path"`
	Agent string `json:"agent"`
	// User asked; the answer's buttons are theirs.
	User string `json:"user,omitempty"`
}

// IMUsageRead is the usage asked for, as text (Err: it could not be
// read), for User.
type IMUsageRead struct {
	Text string `json:"text,omitempty"`
	Err  string `json:"err,omitempty"`
	User string `json:"user,omitempty"`
}

// IMRecallMemory answers /recall from the memory store: the top
// memories for Query in the stores of the binding's directory Dir (its
// project's and the global one), each with a button for User to show it
// whole. No agent is asked. Result: *IMMemoryAnswer.
type IMRecallMemory struct {
	Query string `json:"query"`
	Dir   string `json:"dir"`
	User  string `json:"user"`
}

// IMRememberMemory stores Text as a memory (/remember) in the project
// store of Dir, through the store's guard. Result: *IMMemoryAnswer.
type IMRememberMemory struct {
	Text string `json:"text"`
	Dir  string `json:"dir"`
}

// IMShowMemory shows the memory of Dir's stores that Ref names (a /recall
// button's short reference) whole. Result: *IMMemoryAnswer.
type IMShowMemory struct {
	Ref string `json:"ref"`
	Dir string `json:"dir"`
}

// IMMemoryAnswer is what the thread is told of a memory command.
type IMMemoryAnswer struct {
	Text    string       `json:"text"`
	Buttons [][]IMButton `json:"buttons,omitempty"`
}

// IMListBindings lists the bindings of the platform of the asking thread
// that User set up or last answered. Result: *IMBindingsListed.
type IMListBindings struct {
	User string `json:"user"`
}

// IMAnswerAgentPrompt answers the agent's prompt Fingerprint with Keys
// (option Option), only while the window (its Tag) shows that prompt, and
// then checks that the prompt went away. Result: *IMAgentPromptAnswered.
type IMAnswerAgentPrompt struct {
	WindowID    string   `json:"windowID"`
	Tag         string   `json:"tag,omitempty"`
	Agent       string   `json:"agent"`
	Fingerprint string   `json:"fingerprint"`
	Nonce       uint64   `json:"nonce"`
	Option      int      `json:"option"`
	Keys        []string `json:"keys"`
}

// IMListFreeWindows lists the windows of thatch's tmux server that no
// binding owns, for a setup that adopts one. Result:
// *IMFreeWindowsListed.
type IMListFreeWindows struct{}

// IMAdoptWindow makes a window the binding's: tagged Tag, renamed Name.
// Result: *IMWindowAdopted.
type IMAdoptWindow struct {
	WindowID string `json:"windowID"`
	Tag      string `json:"tag"`
	Name     string `json:"name"`
}

// IMWatchPane tells the screen watcher what the binding knows of its
// agent at work: it runs Agent in WindowID and was set to work at Since
// (Unix milliseconds), and the chat shows its prompt Shown (a
// fingerprint; "" none). The watcher tells the binding of a prompt other
// than Shown (IMAgentPrompt), of Shown gone (IMAgentPromptGone), and of
// the agent stopped (IMAgentIdle). Since 0 ends the watch. No result.
type IMWatchPane struct {
	WindowID string `json:"windowID,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Since    int64  `json:"since,omitempty"`
	Shown    string `json:"shown,omitempty"`
}

// IMStopFollowing stops following Path. No result.
type IMStopFollowing struct {
	Path string `json:"path"`
}

// Results of the effects.

// Outcomes of an IMAnswerAgentPrompt.
const (
	AgentPromptAnswered = "answered" // the keys were sent and the prompt went away
	AgentPromptGone     = "gone"     // the prompt was no longer on screen: nothing was sent
	AgentPromptStuck    = "stuck"    // the keys were sent and the prompt is still there
)

// IMAgentPromptAnswered reports an IMAnswerAgentPrompt: its Outcome, or
// Err when the window could not be read or the keys not sent.
type IMAgentPromptAnswered struct {
	Nonce   uint64 `json:"nonce"`
	Outcome string `json:"outcome,omitempty"`
	Err     string `json:"err,omitempty"`
}

// IMFreeWindow is a window no binding owns: its id, name, directory and
// the agent detected in it ("" none).
type IMFreeWindow struct {
	ID    string `json:"id"` // the window's reference: its tmux id, after "<socket>:" on another server
	Name  string `json:"name"`
	Dir   string `json:"dir"`
	Agent string `json:"agent,omitempty"`
	// Socket is the tmux socket of a window on a server of
	// im.tmux.adopt_sockets; "" on thatch's own.
	Socket string `json:"socket,omitempty"`
}

// IMFreeWindowsListed is the list an IMListFreeWindows asked for.
type IMFreeWindowsListed struct {
	Windows []IMFreeWindow `json:"windows,omitempty"`
	Err     string         `json:"err,omitempty"`
}

// IMWindowAdopted reports an IMAdoptWindow: the window as it is now, the
// agent running in it, or Err.
type IMWindowAdopted struct {
	WindowID string `json:"windowID"`
	Tag      string `json:"tag"`
	Name     string `json:"name,omitempty"`
	Dir      string `json:"dir,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Err      string `json:"err,omitempty"`
}

// IMKeysSent reports an IMSendKeys: Err says why the key was not sent.
type IMKeysSent struct {
	Key string `json:"key"`
	Err string `json:"err,omitempty"`
}

// IMScreenshotSent reports an IMScreenshot: Err says why no picture was
// sent (Text, when set, is the pane as text, sent instead).
type IMScreenshotSent struct {
	Err  string `json:"err,omitempty"`
	Text string `json:"text,omitempty"`
}

// IMHistoryRead is the history asked for, as text (Err: it could not be
// read).
type IMHistoryRead struct {
	Text string `json:"text,omitempty"`
	Err  string `json:"err,omitempty"`
}

// IMBindingsListed is the list asked for, as text.
type IMBindingsListed struct {
	Text string `json:"text"`
}

// IMWindowChecked: Alive is false when the window (or the whole tmux
// server) is gone. Agent is the agent detected in the pane ("" none).
type IMWindowChecked struct {
	WindowID string `json:"windowID"`
	Alive    bool   `json:"alive"`
	Name     string `json:"name,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Err      string `json:"err,omitempty"`
	// Typed is the update whose text was typed (IMCheckWindow.Type), 0
	// for none; TypeErr says why typing it failed.
	Typed   int64  `json:"typed,omitempty"`
	TypeErr string `json:"typeErr,omitempty"`
	// TypeNotTaken: the text was typed, but the agent did not take it
	// (it stays in its input line after Enter was pressed again): it
	// must not be typed again.
	TypeNotTaken bool `json:"typeNotTaken,omitempty"`
	// TypeNotReady: nothing was typed, because the agent showed no input
	// line (a dialog of its own may be open); the message waits.
	TypeNotReady bool `json:"typeNotReady,omitempty"`
}

// IMSentToWindow reports a message typed into the window.
type IMSentToWindow struct {
	UpdateID int64  `json:"updateID"`
	Err      string `json:"err,omitempty"`
	// NotTaken: typed, but not taken by the agent (see
	// IMWindowChecked.TypeNotTaken); Err says why.
	NotTaken bool `json:"notTaken,omitempty"`
	// NotReady: nothing was typed (see IMWindowChecked.TypeNotReady).
	NotReady bool `json:"notReady,omitempty"`
}

// IMSessionChanged tells a binding that the agent in its window (Tag)
// now runs session SessionID (its hook said so: claude's /clear starts a
// new session, /resume another), whose transcript is read from Offset.
// It is a notice of the transcript follower, not an effect's result.
type IMSessionChanged struct {
	Tag        string `json:"tag"`
	SessionID  string `json:"sessionID"`
	Transcript string `json:"transcript"`
	Offset     int64  `json:"offset,omitempty"`
	Source     string `json:"source,omitempty"`
	// Updated is when the hook wrote the entry (Unix milliseconds; 0
	// when unknown): the binding takes or refuses one entry once
	// (IMSwitchSeen), however often the follower tells it.
	Updated int64 `json:"updated,omitempty"`
}

// IMSwitchSeen records the newest hook entry a binding was told of
// (IMSessionChanged's SessionID and Updated), taken or not: the same
// entry told again (the follower reads the hook map on every write of
// it) changes nothing, so a binding that moved on by itself is not
// sent back to an old session.
type IMSwitchSeen struct {
	SessionID string `json:"sessionID"`
	Updated   int64  `json:"updated"`
}

// IMFollows asks a binding whether it follows Path now (the transcript
// registry checks a holder with it). Reply: bool.
type IMFollows struct {
	Path string
}

// IMTranscriptAt is a binding's answer to IMTranscriptRead: whether it
// follows the transcript read, and the offset it has journaled for it,
// which is where the follower reads on from.
type IMTranscriptAt struct {
	Following bool
	Offset    int64
}

// IMChatSent reports an outbox entry sent; MessageID is its (last part's)
// message id, as the adapter returned it ("" when it returned none).
type IMChatSent struct {
	Seq       uint64 `json:"seq"`
	MessageID string `json:"messageID,omitempty"`
	Err       string `json:"err,omitempty"`
	// Permanent: the chat refused the message for good (the thread is
	// gone, the bot was removed, nothing to show); trying again is futile.
	Permanent bool `json:"permanent,omitempty"`
	// Gone: the chat is over for the bot (chat.ErrGone); the binding
	// ends.
	Gone bool `json:"gone,omitempty"`
}

// IMDirectoryListed is a listing for the browser: Path is the directory
// shown, Dirs its subdirectories' base names, Jumps quick jumps (absolute
// paths), AtRoot whether Path is a root (no way up).
type IMDirectoryListed struct {
	Path   string   `json:"path"`
	Dirs   []string `json:"dirs,omitempty"`
	Jumps  []string `json:"jumps,omitempty"`
	AtRoot bool     `json:"atRoot,omitempty"`
	Err    string   `json:"err,omitempty"`
}

// IMWindowCreated reports the window of an IMCreateWindow.
type IMWindowCreated struct {
	Tag      string `json:"tag"`
	WindowID string `json:"windowID,omitempty"`
	// Name is the window's name as tmux keeps it (it escapes some
	// characters), which later checks compare with.
	Name string `json:"name,omitempty"`
	Err  string `json:"err,omitempty"`
	// Gone: it failed and the tmux server has no window left (tmux
	// stopped while the window was made).
	Gone bool `json:"gone,omitempty"`
}

// IMAgentSession is one session an agent keeps, for the picker.
type IMAgentSession struct {
	ID          string `json:"id"`
	When        string `json:"when"`
	FirstPrompt string `json:"firstPrompt,omitempty"`
}

// IMAgentSessionsListed lists an agent's sessions for a directory.
type IMAgentSessionsListed struct {
	Sessions []IMAgentSession `json:"sessions,omitempty"`
	Err      string           `json:"err,omitempty"`
}

// IMAgentLaunched reports an IMLaunchAgent. Gone: it failed because the
// window is gone (its tmux server with it, when tmux stopped).
type IMAgentLaunched struct {
	WindowID string `json:"windowID"`
	Err      string `json:"err,omitempty"`
	Gone     bool   `json:"gone,omitempty"`
}

// IMAgentSessionFound reports the agent's session id ("" when none was
// found) and the transcript to follow ("" when it keeps none).
type IMAgentSessionFound struct {
	WindowID   string `json:"windowID"`
	SessionID  string `json:"sessionID,omitempty"`
	Transcript string `json:"transcript,omitempty"`
	How        string `json:"how,omitempty"`
	// Offset is where reading the transcript starts.
	Offset int64 `json:"offset,omitempty"`
}

// IMWindowRenamed reports an IMRenameWindow; Name is the name as tmux
// keeps it.
type IMWindowRenamed struct {
	Name string `json:"name"`
	Err  string `json:"err,omitempty"`
}

// Events of a binding. Each is applied by actors/imbinding.

// IMUpdateSeen records an update handled: its id (so it is never handled
// twice), the name it taught, and the message it queued, if any. Version
// 1 carried the user as a number (userID), and the chat and thread ids
// and the topic flag, which nothing reads any more.
type IMUpdateSeen struct {
	UpdateID int64 `json:"updateID"`
	// User is the sender or presser, in the platform's ids.
	User      string `json:"user,omitempty"`
	TopicName string `json:"topicName,omitempty"`
	// Text is the message queued for the agent ("" for none).
	Text string `json:"text,omitempty"`
	// At is when it was handled (Unix milliseconds).
	At int64 `json:"at"`
	// Check starts a window check for the queued messages.
	Check bool `json:"check,omitempty"`
	// Actor makes User the user the flows answer to (the sender of a
	// message, the presser of an accepted button).
	Actor bool `json:"actor,omitempty"`
	// File is a file to save and name to the agent, with Caption: it
	// waits in the binding's queue, in order, until it is saved
	// (IMFileReady).
	File    *IMFile `json:"file,omitempty"`
	Caption string  `json:"caption,omitempty"`
}

// IMOutboxAdded queues chat messages to send, with their sequence numbers
// from Seq on. A prompt's nonce is recorded with its entry.
type IMOutboxAdded struct {
	Seq     uint64       `json:"seq"`
	Entries []IMOutEntry `json:"entries"`
}

// IMOutEntry is one chat message waiting to be sent.
type IMOutEntry struct {
	Text     string       `json:"text"`
	Markdown bool         `json:"markdown,omitempty"`
	Buttons  [][]IMButton `json:"buttons,omitempty"`
	Prompt   uint64       `json:"prompt,omitempty"`
	// Silent: the message does not notify the phone (a tool line).
	Silent bool `json:"silent,omitempty"`
}

// IMOutboxSent drops a sent entry (or one the chat refused for good:
// Refused); MessageID ("" none) is recorded for its prompt. Version 1
// carried MessageID as a number.
type IMOutboxSent struct {
	Seq       uint64 `json:"seq"`
	MessageID string `json:"messageID,omitempty"`
	Refused   string `json:"refused,omitempty"`
}

// IMOutboxReleased records the outbox entry Seq handed to the front end:
// one is in flight at a time, so replies go out in order.
type IMOutboxReleased struct {
	Seq uint64 `json:"seq"`
}

// IMPromptOpened records a prompt waiting for User (in the platform's
// ids): its Kind, its nonce, and the choices its buttons stand for (paths,
// session ids). Version 1 carried the user as a number (userID).
type IMPromptOpened struct {
	Kind    string   `json:"kind"`
	Nonce   uint64   `json:"nonce"`
	User    string   `json:"user,omitempty"`
	Choices []string `json:"choices,omitempty"`
	// Detected is the agent found in the window (agent mismatch).
	Detected string `json:"detected,omitempty"`
	// Window is a window still alive that a Recover reuses (its agent
	// exited).
	Window string `json:"window,omitempty"`
	// Text and Rows are the question and its buttons (data without the
	// nonce), to ask it again of another user.
	Text string       `json:"text,omitempty"`
	Rows [][]IMButton `json:"rows,omitempty"`
}

// IMPromptClosed records a prompt answered (or timed out).
type IMPromptClosed struct {
	Nonce uint64 `json:"nonce"`
}

// IMSetupStep records progress of the setup or recovery flow.
type IMSetupStep struct {
	Phase      string `json:"phase"`
	WindowName string `json:"windowName,omitempty"`
	Gen        uint64 `json:"gen,omitempty"`
	Step       string `json:"step"`
	Agent      string `json:"agent,omitempty"`
	Dir        string `json:"dir,omitempty"`
	Tag        string `json:"tag,omitempty"`
	Window     string `json:"window,omitempty"`
	Resume     string `json:"resume,omitempty"`
	// Since is when the flow launched the agent (Unix milliseconds).
	Since int64 `json:"since,omitempty"`
	// Retried: the flow made its window again once already, after tmux
	// lost the first.
	Retried bool `json:"retried,omitempty"`
}

// IMBound records the binding made (or remade): the three records the
// binding owns.
type IMBound struct {
	DisplayName string `json:"displayName"`
	SessionID   string `json:"sessionID,omitempty"`
	WindowID    string `json:"windowID"`
	Tag         string `json:"tag,omitempty"`
	WindowName  string `json:"windowName,omitempty"`
	Cwd         string `json:"cwd"`
	Agent       string `json:"agent"`
	Transcript  string `json:"transcript,omitempty"`
	Offset      int64  `json:"offset,omitempty"`
	// Since is when the agent was launched (Unix milliseconds; 0 when
	// unknown), for finding its session later.
	Since int64 `json:"since,omitempty"`
}

// IMRenamed records the display name changed (and the window's, unless
// WindowOnly: then only the window's name as tmux keeps it).
type IMRenamed struct {
	Name       string `json:"name"`
	WindowOnly bool   `json:"windowOnly,omitempty"`
}

// IMAgentChanged records the binding's agent type updated to the agent
// found in the window.
type IMAgentChanged struct {
	Agent string `json:"agent"`
}

// IMChatPartSent reports that the first Parts parts of outbox entry Seq
// are sent, and more are to come.
type IMChatPartSent struct {
	Seq   uint64 `json:"seq"`
	Parts int    `json:"parts"`
}

// IMOutboxPartSent records that the first Parts parts of outbox entry Seq
// are sent, so that sending it again skips them.
type IMOutboxPartSent struct {
	Seq   uint64 `json:"seq"`
	Parts int    `json:"parts"`
}

// IMChecked records a window check's outcome: the queued messages are
// being typed into the window (Forward), or a prompt opened instead.
type IMChecked struct {
	Forward bool `json:"forward,omitempty"`
}

// IMDelivered drops a queued message typed into the window; Check starts
// a window check for the messages queued behind it.
type IMDelivered struct {
	UpdateID int64 `json:"updateID"`
	Check    bool  `json:"check,omitempty"`
}

// IMTurnItem is one thing the agent's transcript says of its turn: Kind
// "text" (Text), "tool" (Text is its line, ID its call), "result" (ID,
// Outcome: "✓", "✗", "✗ exit 2"), "end" (the agent ended its turn),
// "user" (it took a message of its user: a new turn) or "context" (Share:
// the percent of the model's context window in use).
type IMTurnItem struct {
	Kind    string `json:"kind"`
	Text    string `json:"text,omitempty"`
	ID      string `json:"id,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Share   int    `json:"share,omitempty"`
}

// Kinds of IMTurnItem.
const (
	TurnText    = "text"
	TurnTool    = "tool"
	TurnResult  = "result"
	TurnEnd     = "end"
	TurnUser    = "user"
	TurnContext = "context"
)

// IMContextUsed records the share of the model's context window (in
// percent) the session's newest request used, as its transcript said.
type IMContextUsed struct {
	Share int `json:"share"`
}

// IMTurnStarted records a turn of the agent begun at At (Unix ms): the
// user's message was typed, and the thread shows the turn live.
type IMTurnStarted struct {
	At int64 `json:"at"`
}

// IMTurnRead folds what the transcript said of the turn into it.
type IMTurnRead struct {
	Items []IMTurnItem `json:"items"`
}

// IMLiveReleased records revision Rev of the live message handed to the
// front end (IMLiveSend or IMLiveEdit): one is in flight at a time.
type IMLiveReleased struct {
	Rev uint64 `json:"rev"`
}

// IMLiveShown records revision Rev shown in the chat, in the live message
// MessageID.
type IMLiveShown struct {
	Rev       uint64 `json:"rev"`
	MessageID string `json:"messageID,omitempty"`
}

// IMLiveFailed records a live send or edit that failed; Off: for good
// (the chat cannot edit), so the turn is told as plain messages.
type IMLiveFailed struct {
	Off bool `json:"off,omitempty"`
}

// IMLiveWaiting records the edit interval's timer armed (On) or fired.
type IMLiveWaiting struct {
	On bool `json:"on,omitempty"`
}

// IMLiveRolled records the live message full: its lines up to From stay
// in it, and the turn goes on in a new live message.
type IMLiveRolled struct {
	From int `json:"from"`
}

// IMTurnEnding records the turn's end seen (its final answer said); the
// turn is gone (IMTurnEnded) once no live send is in flight.
type IMTurnEnding struct{}

// IMTurnEnded records the turn over.
type IMTurnEnded struct{}

// IMSummaryOwed records that the live message MessageID of a turn that
// ended is to be edited into Text, its summary, until the chat takes the
// edit or refuses it for good (IMSummaryDone).
type IMSummaryOwed struct {
	MessageID string `json:"messageID"`
	Text      string `json:"text"`
}

// IMSummaryDone records the summary edit of MessageID done (or refused for
// good).
type IMSummaryDone struct {
	MessageID string `json:"messageID"`
}

// IMLiveSend is an effect: send Text to the binding's thread as the
// turn's live message, silently. Turn is the turn's start (Unix ms),
// given back in the result. Result: IMLiveSent.
type IMLiveSend struct {
	Text string
	Rev  uint64
	Turn int64
}

// IMLiveEdit is an effect: replace the text of the live message
// MessageID with Text, silently. Rev 0 is the summary at the turn's end,
// whose result nobody waits for. Result: IMLiveSent.
type IMLiveEdit struct {
	MessageID string
	Text      string
	Rev       uint64
	// Turn is the turn's start (Unix ms), given back in the result.
	Turn int64
}

// IMLiveSent is the result of IMLiveSend and IMLiveEdit, with their Rev
// and Turn (an answer of another turn's is not this one's, whatever its
// Rev). Permanent: the chat cannot do it (no edits on this platform, the
// message is gone).
type IMLiveSent struct {
	Rev       uint64
	Turn      int64
	MessageID string
	Err       string
	Permanent bool
}

// IMRepliesRead records the transcript read up to offset To.
type IMRepliesRead struct {
	To int64 `json:"to"`
}

// IMSessionLostSaid records that the user was told the agent's session
// is not found yet (once per binding).
type IMSessionLostSaid struct{}

// IMTypingHeld records that the user was told their message waits for
// the agent to take input (once per message).
type IMTypingHeld struct {
	UpdateID int64 `json:"updateID"`
}

// IMEnded records the binding ended because its chat is over for the
// bot: nothing waits any longer (its queue and outbox are dropped, since
// nobody can be answered), and its window is kept, or killed when
// WindowClosed (im.on_close = "kill"). At is Unix milliseconds.
type IMEnded struct {
	Reason       string `json:"reason"`
	At           int64  `json:"at"`
	WindowClosed bool   `json:"windowClosed,omitempty"`
	// Reopenable: the thread may come back (IMReopened).
	Reopenable bool `json:"reopenable,omitempty"`
}

// IMEndNoted records that a message sent to an ended thread that may
// come back (a closed topic) got its note: the next one gets none.
type IMEndNoted struct{}

// IMReopened records an ended thread back (a topic reopened): the binding
// is bound again to its window and session.
type IMReopened struct {
	At int64 `json:"at"`
}

// IMAgentAsked records an agent's prompt shown in the chat with buttons,
// under Nonce, for User (who last spoke in the thread).
type IMAgentAsked struct {
	Nonce       uint64          `json:"nonce"`
	Fingerprint string          `json:"fingerprint"`
	User        string          `json:"user,omitempty"`
	Options     []IMAgentOption `json:"options"`
}

// IMAgentAskPending records a press of the agent's prompt Nonce being
// carried out (Pending) or done with the prompt still open.
type IMAgentAskPending struct {
	Nonce   uint64 `json:"nonce"`
	Pending bool   `json:"pending,omitempty"`
}

// IMAgentAskClosed records the agent's prompt Nonce closed: answered, or
// gone from the screen.
type IMAgentAskClosed struct {
	Nonce uint64 `json:"nonce"`
}

// IMWorkStarted records the agent set to work at At (Unix milliseconds):
// a message was typed and taken, or its prompt answered. Its window is
// watched until the agent stops (IMWorkEnded).
type IMWorkStarted struct {
	At int64 `json:"at"`
}

// IMWorkEnded records the agent's work over: its window stayed still,
// went away, or the work outlived the watch's limit.
type IMWorkEnded struct{}

// IMResumed records a restart: checks and deliveries in flight are
// started again.
type IMResumed struct {
	// Hold: the queue is not checked now (a timer checks it later).
	Hold bool `json:"hold,omitempty"`
}

func init() {
	Register[IMUpdateSeen]("im.update_seen", 2)
	RegisterUpgrade("im.update_seen", 1, UpgradeIDs(map[string]string{"userID": "user"}, "chatID", "threadID", "topic"))
	Register[IMOutboxAdded]("im.outbox_added", 1)
	Register[IMOutboxSent]("im.outbox_sent", 2)
	RegisterUpgrade("im.outbox_sent", 1, UpgradeIDs(map[string]string{"messageID": "messageID"}))
	Register[IMOutboxReleased]("im.outbox_released", 1)
	Register[IMOutboxPartSent]("im.outbox_part_sent", 1)
	Register[IMPromptOpened]("im.prompt_opened", 2)
	RegisterUpgrade("im.prompt_opened", 1, UpgradeIDs(map[string]string{"userID": "user"}))
	Register[IMPromptClosed]("im.prompt_closed", 1)
	Register[IMSetupStep]("im.setup_step", 1)
	Register[IMBound]("im.bound", 1)
	Register[IMRenamed]("im.renamed", 1)
	Register[IMAgentChanged]("im.agent_changed", 1)
	Register[IMChecked]("im.checked", 1)
	Register[IMDelivered]("im.delivered", 1)
	Register[IMRepliesRead]("im.replies_read", 1)
	Register[IMSwitchSeen]("im.switch_seen", 1)
	Register[IMTurnStarted]("im.turn_started", 1)
	Register[IMContextUsed]("im.context_used", 1)
	Register[IMTurnRead]("im.turn_read", 1)
	Register[IMLiveReleased]("im.live_released", 1)
	Register[IMLiveShown]("im.live_shown", 1)
	Register[IMLiveFailed]("im.live_failed", 1)
	Register[IMLiveWaiting]("im.live_waiting", 1)
	Register[IMTurnEnding]("im.turn_ending", 1)
	Register[IMLiveRolled]("im.live_rolled", 1)
	Register[IMTurnEnded]("im.turn_ended", 1)
	Register[IMSummaryOwed]("im.summary_owed", 1)
	Register[IMSummaryDone]("im.summary_done", 1)
	Register[IMResumed]("im.resumed", 1)
	Register[IMTypingHeld]("im.typing_held", 1)
	Register[IMSessionLostSaid]("im.session_lost_said", 1)
	Register[IMEnded]("im.ended", 1)
	Register[IMEndNoted]("im.end_noted", 1)
	Register[IMReopened]("im.reopened", 1)
	Register[IMAgentAsked]("im.agent_asked", 1)
	Register[IMAgentAskPending]("im.agent_ask_pending", 1)
	Register[IMAgentAskClosed]("im.agent_ask_closed", 1)
	Register[IMWorkStarted]("im.work_started", 1)
	Register[IMWorkEnded]("im.work_ended", 1)
}

// UpgradeIDs is the Upgrade of a body that carried ids as numbers: see
// IDsToText.
func UpgradeIDs(ids map[string]string, drop ...string) Upgrade {
	return func(old json.RawMessage) (json.RawMessage, error) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(old, &obj); err != nil {
			return nil, err
		}
		if err := IDsToText(obj, ids, drop...); err != nil {
			return nil, err
		}
		return json.Marshal(obj)
	}
}

// IDsToText turns the numeric ids of an older body's object into their
// decimal text, in place: each field named in ids (old name to new name)
// that holds an integer becomes a string under the new name (and is left
// out when it is 0, as an id that was not set), and an array of integers
// an array of strings; the fields in drop are removed. A field that holds
// text already is left as it is.
func IDsToText(obj map[string]json.RawMessage, ids map[string]string, drop ...string) error {
	for _, name := range drop {
		delete(obj, name)
	}
	for from, to := range ids {
		raw, ok := obj[from]
		if !ok {
			continue
		}
		delete(obj, from)
		raw = bytes.TrimSpace(raw)
		switch {
		case bytes.Equal(raw, []byte("null")):
			continue
		case len(raw) > 0 && raw[0] == '"':
			obj[to] = raw
			continue
		case len(raw) > 0 && raw[0] == '[':
			var nums []json.RawMessage
			if err := json.Unmarshal(raw, &nums); err != nil {
				return fmt.Errorf("messages: field %q: %w", from, err)
			}
			texts := make([]string, 0, len(nums))
			for _, n := range nums {
				t, err := idText(n)
				if err != nil {
					return fmt.Errorf("messages: field %q: %w", from, err)
				}
				texts = append(texts, t)
			}
			b, err := json.Marshal(texts)
			if err != nil {
				return err
			}
			obj[to] = b
			continue
		}
		t, err := idText(raw)
		if err != nil {
			return fmt.Errorf("messages: field %q: %w", from, err)
		}
		if t == "0" {
			continue
		}
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		obj[to] = b
	}
	return nil
}

// idText is the decimal text of a JSON integer.
func idText(raw json.RawMessage) (string, error) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		return "", fmt.Errorf("an id that is not an integer: %s", raw)
	}
	return strconv.FormatInt(n, 10), nil
}
